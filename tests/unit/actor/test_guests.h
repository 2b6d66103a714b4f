// Test helper: loads a guest built by the project (build/guests/NAME.wasm) as an actor
// implementation. Test-only; any thread.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "actor/actor.h"

namespace reef::actor::test_support {

inline std::shared_ptr<const Implementation> LoadGuest(const std::string& guest) {
  auto module = wasm::Module::FromFile(std::string(REEF_GUEST_DIR) + "/" + guest + ".wasm");
  EXPECT_TRUE(module.ok()) << module.status().ToString();
  if (!module.ok()) return nullptr;
  auto implementation = MakeImplementation(*module, guest);
  EXPECT_TRUE(implementation.ok()) << implementation.status().ToString();
  return implementation.ok() ? *implementation : nullptr;
}

}  // namespace reef::actor::test_support
