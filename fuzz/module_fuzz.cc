// libFuzzer target: module loading. Arbitrary bytes go through Module::FromBinary (parse +
// validate); a module that loads is instantiated against the ABI v1 registry and each
// nullary export runs for a small budget. Nothing may crash, leak or hang.
#include <cstddef>
#include <cstdint>
#include <span>

#include "actor/guest_abi.h"
#include "wasm/engine.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace reef;
  wasm::ModuleLimits module_limits;
  module_limits.max_module_bytes = 1 << 20;
  auto module =
      wasm::Module::FromBinary(std::span<const uint8_t>(data, size), "fuzz.wasm", module_limits);
  if (!module.ok()) return 0;
  wasm::EngineLimits limits;
  limits.max_memory_pages = 16;
  limits.max_call_depth = 256;
  limits.max_value_stack = 1 << 16;
  limits.max_start_instructions = 10'000;
  wasm::Engine engine(actor::AbiV1Registry(), limits);
  auto instance = engine.Instantiate(*module);
  if (!instance.ok()) return 0;
  actor::ActorCallContext context{*ActorRef::Parse("fuzzActorRef000000000")};
  for (const wasm::ExportInfo& e : (*module)->exports()) {
    if (e.kind != wasm::ExternKind::kFunc || !e.signature.params.empty()) continue;
    auto invocation = (*instance)->Start(e.name, {}, &context);
    if (!invocation.ok()) continue;
    (*invocation)->Run(10'000);
  }
  return 0;
}
