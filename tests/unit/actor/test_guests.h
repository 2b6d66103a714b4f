// Test helper: loads a guest built by the project (build/guests/NAME.wasm) as an actor
// implementation. Test-only; any thread.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "actor/actor.h"
#include "core/json.h"

namespace reef::actor::test_support {

inline std::shared_ptr<const Implementation> LoadGuest(const std::string& guest) {
  auto module = wasm::Module::FromFile(std::string(REEF_GUEST_DIR) + "/" + guest + ".wasm");
  EXPECT_TRUE(module.ok()) << module.status().ToString();
  if (!module.ok()) return nullptr;
  auto implementation = MakeImplementation(*module, guest);
  EXPECT_TRUE(implementation.ok()) << implementation.status().ToString();
  return implementation.ok() ? *implementation : nullptr;
}

// The Value of JSON `text`; a parse error fails the test and gives an empty Value.
inline Value Json(std::string_view text) {
  auto value = ValueFromJson(text, ValueLimits{});
  EXPECT_TRUE(value.ok()) << value.status().ToString();
  return value.ok() ? *value : Value();
}

// A distinct valid actor ref per `n` (n < 10^20).
inline ActorRef NumberedRef(int n) {
  std::string id = std::to_string(n);
  id.insert(0, 21 - id.size(), 'a');
  return *ActorRef::Parse(id);
}

}  // namespace reef::actor::test_support
