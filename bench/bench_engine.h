// The engine tier a benchmark runs on, from the environment, as `make bench` sets it.
//
// Thread ownership: call once from main, before any engine exists.
#pragma once

#include <cstdlib>
#include <string_view>

#include "core/status.h"
#include "wasm/engine.h"
#include "wasm/native/code_source.h"

namespace reef::bench {

// REEF_ENGINE=native puts every engine of this process on the native tier (each module
// compiles on first use, so time a warm-up run first); anything else leaves the interpreter.
// Returns "native" or "interp". Errors: those of native::CodeSource::Create.
inline Result<std::string_view> UseEngineFromEnvironment() {
  const char* engine = std::getenv("REEF_ENGINE");
  if (engine == nullptr || std::string_view(engine) != "native") return std::string_view("interp");
  REEF_ASSIGN_OR_RETURN(auto code, wasm::native::CodeSource::Create({}));
  wasm::Engine::SetDefaultOptions(
      wasm::EngineOptions{.tier = wasm::TierChoice::kNative, .native_code = std::move(code)});
  return std::string_view("native");
}

}  // namespace reef::bench
