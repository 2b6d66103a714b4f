// Helpers of the native tier's tests: compile a .wat module natively, instantiate it on an
// engine of each tier, and compare what the same call does.
#pragma once

#include <gtest/gtest.h>

#include <bit>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "wasm/engine.h"
#include "wasm/module.h"
#include "wasm/native/native_module.h"

namespace reef::wasm::native::native_test {

// True in a ThreadSanitizer build (gcc defines __SANITIZE_THREAD__, clang has the feature).
#if defined(__SANITIZE_THREAD__)
inline constexpr bool kThreadSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
inline constexpr bool kThreadSanitizer = true;
#else
inline constexpr bool kThreadSanitizer = false;
#endif
#else
inline constexpr bool kThreadSanitizer = false;
#endif

inline std::shared_ptr<const Module> ParseWat(std::string_view wat) {
  auto module = Module::FromText(wat);
  EXPECT_TRUE(module.ok()) << module.status().ToString();
  return module.ok() ? *module : nullptr;
}

inline std::shared_ptr<const NativeModule> CompileWat(std::string_view wat,
                                                      const CompileOptions& options = {}) {
  auto module = ParseWat(wat);
  if (module == nullptr) return nullptr;
  auto native = NativeModule::Compile(module, options);
  EXPECT_TRUE(native.ok()) << native.status().ToString();
  return native.ok() ? *native : nullptr;
}

// An instance of `module` on `engine`, or null (and a test failure).
inline std::unique_ptr<Instance> Instantiate(Engine& engine,
                                             const std::shared_ptr<const Module>& module) {
  if (module == nullptr) return nullptr;
  auto instance = engine.Instantiate(module);
  EXPECT_TRUE(instance.ok()) << instance.status().ToString();
  return instance.ok() ? std::move(*instance) : nullptr;
}

// Runs `name(args)` to its end and returns its trap (a test failure if it does not trap).
inline Trap LastTrap(Instance& instance, std::string_view name, std::vector<WasmValue> args) {
  auto invocation = instance.Start(name, args);
  if (!invocation.ok()) {
    ADD_FAILURE() << invocation.status().ToString();
    return {};
  }
  RunState state = (*invocation)->Run(100'000'000);
  EXPECT_EQ(state, RunState::kTrapped);
  return state == RunState::kTrapped ? (*invocation)->trap() : Trap{};
}

// Equal as wasm values: same type and same bits (so NaNs compare by payload).
inline bool SameValue(const WasmValue& a, const WasmValue& b) {
  if (a.index() != b.index()) return false;
  return std::visit(
      [&b](auto x) {
        using T = decltype(x);
        T y = std::get<T>(b);
        if constexpr (std::is_same_v<T, float>) {
          return std::bit_cast<uint32_t>(x) == std::bit_cast<uint32_t>(y);
        } else if constexpr (std::is_same_v<T, double>) {
          return std::bit_cast<uint64_t>(x) == std::bit_cast<uint64_t>(y);
        } else {
          return x == y;
        }
      },
      a);
}

inline std::string Describe(const Result<std::vector<WasmValue>>& r) {
  if (!r.ok()) return r.status().ToString();
  std::string out = "[";
  for (const WasmValue& v : *r) out += FormatValue(v) + " ";
  return out + "]";
}

// The trap kind name a Trapped status's message starts with ("integer_overflow in ...").
inline std::string TrapKindOf(const Status& status) {
  if (status.code() != Code::kTrapped) return "(not a trap: " + status.ToString() + ")";
  return status.message().substr(0, status.message().find(' '));
}

// The trap kind name of a failed instantiation: "instantiation trapped: <message>" in both
// tiers, the message classified as the interpreter's messages are.
inline std::string InstantiationTrapKind(const Status& status) {
  constexpr std::string_view kPrefix = "instantiation trapped: ";
  if (status.code() != Code::kTrapped || !status.message().starts_with(kPrefix)) {
    return "(not an instantiation trap: " + status.ToString() + ")";
  }
  return std::string(TrapKindName(ClassifyTrapMessage(status.message().substr(kPrefix.size()))));
}

// Asserts the native and interpreter results of one call are the same: equal values, or
// traps of the same kind.
inline void ExpectSameOutcome(const Result<std::vector<WasmValue>>& native,
                              const Result<std::vector<WasmValue>>& interp, std::string_view what) {
  SCOPED_TRACE(std::string(what) + ": native " + Describe(native) + " / interpreter " +
               Describe(interp));
  ASSERT_EQ(native.ok(), interp.ok());
  if (!native.ok()) {
    EXPECT_EQ(TrapKindOf(native.status()), TrapKindOf(interp.status()));
    return;
  }
  ASSERT_EQ(native->size(), interp->size());
  for (size_t i = 0; i < native->size(); ++i) {
    EXPECT_TRUE(SameValue((*native)[i], (*interp)[i])) << "result " << i;
  }
}

}  // namespace reef::wasm::native::native_test
