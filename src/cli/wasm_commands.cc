// `reef wasm run | inspect | handle`: tools for guest authors, on the engine directly.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "actor/guest_abi.h"
#include "apps/module_abi.h"
#include "cli/commands.h"
#include "cli/image_commands.h"
#include "core/json.h"
#include "wasm/engine.h"

namespace reef::cli {
namespace {

using wasm::RunState;
using wasm::ValType;
using wasm::WasmValue;

// The actor ref a module sees from `self` when run outside an image.
constexpr std::string_view kDevSelf = "devActorRef000000000A";

// A validator for instruction counts: a whole number from 1 to 2^64 - 1, nothing else.
const CLI::Validator kInstructionCount(
    [](std::string& text) -> std::string {
      uint64_t value = 0;
      auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (ec != std::errc() || ptr != text.data() + text.size() || value == 0) {
        return "must be a whole number of instructions from 1 to 18446744073709551615, not '" +
               text + "'";
      }
      return "";
    },
    "INSTRUCTIONS");

template <typename T>
bool ParseNumber(const std::string& text, T* out) {
  if constexpr (std::is_floating_point_v<T>) {
    char* end = nullptr;
    double v = std::strtod(text.c_str(), &end);
    if (end == text.c_str() || *end != '\0') return false;
    *out = static_cast<T>(v);
    return true;
  } else {
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
    return ec == std::errc() && ptr == text.data() + text.size();
  }
}

// Parses one command-line argument as the wasm type `type`.
Result<WasmValue> ParseArg(const std::string& text, ValType type, size_t index) {
  WasmValue value;
  bool ok = false;
  switch (type) {
    case ValType::kI32: {
      // Accept both signed and unsigned spellings of an i32.
      int64_t v = 0;
      ok = ParseNumber(text, &v) && v >= INT32_MIN && v <= UINT32_MAX;
      value = static_cast<int32_t>(static_cast<uint32_t>(v));
      break;
    }
    case ValType::kI64: {
      int64_t v = 0;
      ok = ParseNumber(text, &v);
      value = v;
      break;
    }
    case ValType::kF32: {
      float v = 0;
      ok = ParseNumber(text, &v);
      value = v;
      break;
    }
    case ValType::kF64: {
      double v = 0;
      ok = ParseNumber(text, &v);
      value = v;
      break;
    }
    default:
      return Status::InvalidArgument(
          fmt::format("argument {} has type {}, which cannot be passed from the command line",
                      index + 1, wasm::ValTypeName(type)));
  }
  if (!ok) {
    return Status::InvalidArgument(fmt::format("argument {} ('{}') is not a valid {}", index + 1,
                                               text, wasm::ValTypeName(type)));
  }
  return value;
}

void PrintEffects(const actor::Effects& effects) {
  for (const actor::LogRecord& log : effects.logs) {
    fmt::print("log {}: {}\n", actor::LogLevelName(log.level), log.message);
  }
  for (const actor::SendEffect& send : effects.sends) {
    auto message = ValueToJsonText(send.message.ToValue(), ValueLimits{});
    fmt::print("send to @{}{}: {}\n", send.target.str(), send.sender ? "" : " (as the host)",
               message.ok() ? *message : message.status().ToString());
  }
}

void PrintProfile(const std::map<std::string, uint64_t>& per_function, uint64_t total) {
  std::vector<std::pair<uint64_t, std::string>> rows;
  for (const auto& [function, count] : per_function) rows.emplace_back(count, function);
  std::sort(rows.rbegin(), rows.rend());
  fmt::print("profile  {} instructions\n", total);
  for (const auto& [count, function] : rows) {
    fmt::print("  {:>8} {:5.1f}%  {}\n", count, 100.0 * count / std::max<uint64_t>(total, 1),
               function);
  }
}

// Shared by run and handle: drives an invocation until it ends or `budget` runs out.
// Returns the final state; `used` receives the instructions charged.
RunState Drive(wasm::Invocation& invocation, uint64_t budget, uint64_t slice, uint64_t* used) {
  RunState state = RunState::kBudgetExhausted;
  uint64_t remaining = budget;
  while (state == RunState::kBudgetExhausted && remaining > 0) {
    uint64_t before = invocation.telemetry().instructions;
    state = invocation.Run(std::min(slice, remaining));
    uint64_t spent = invocation.telemetry().instructions - before;
    remaining -= std::min(spent, remaining);
  }
  *used = budget - remaining;
  return state;
}

int ReportEnd(RunState state, const wasm::Invocation& invocation, uint64_t used) {
  std::fflush(stdout);
  if (state == RunState::kTrapped) {
    fmt::print(stderr, "trap: {}\n", invocation.trap().ToString());
    return 1;
  }
  if (state == RunState::kSuspended) {
    fmt::print(stderr, "suspended in host call {}: nothing here completes it\n",
               invocation.suspended_in());
    return 1;
  }
  wasm::Telemetry t = invocation.telemetry();
  fmt::print(stderr,
             "budget exhausted after {} instructions (in `{}` at +{}, call depth {}); "
             "raise --budget\n",
             used, t.function, t.offset, t.call_depth);
  return 1;
}

// `--engine native|interp` of run and handle: the tier the one instance runs on.
void AddEngineOption(CLI::App& app, std::string& engine) {
  app.add_option("--engine", engine,
                 "interp (starts at once) or native (compiled with the system C compiler "
                 "first, about a second; then runs near native speed)")
      ->check(CLI::IsMember({"interp", "native"}))
      ->capture_default_str();
}

wasm::EngineOptions EngineOptionsFor(const std::string& engine) {
  return wasm::EngineOptions{.tier = engine == "native" ? wasm::TierChoice::kNative
                                                        : wasm::TierChoice::kInterp};
}

// ---------------------------------------------------------------------------------------
// reef wasm run FILE EXPORT [ARG...] [--budget N] [--engine native|interp]

Handler SetupRun(CLI::App& app) {
  struct Args {
    std::string file, export_name;
    std::vector<std::string> args;
    uint64_t budget = 1'000'000'000;
    std::string engine = "interp";
  };
  auto a = std::make_shared<Args>();
  app.add_option("file", a->file, ".wasm binary or .wat text")->required();
  app.add_option("export", a->export_name, "exported function to call")->required();
  app.add_option("args", a->args, "arguments, parsed as the export's parameter types");
  app.add_option("--budget", a->budget, "instruction budget (engine instructions)")
      ->capture_default_str()
      ->check(kInstructionCount);
  AddEngineOption(app, a->engine);
  return [a] {
    auto module = wasm::Module::FromFile(a->file);
    if (!module.ok()) return Fail(module.status());
    const wasm::ExportInfo* e = (*module)->FindExport(a->export_name);
    if (e == nullptr || e->kind != wasm::ExternKind::kFunc) {
      return Fail(Status::NotFound(fmt::format(
          "{} has no function export `{}`; see reef wasm inspect", a->file, a->export_name)));
    }
    if (a->args.size() != e->signature.params.size()) {
      return Fail(Status::InvalidArgument(fmt::format("`{}` takes {} arguments {}; got {}",
                                                      a->export_name, e->signature.params.size(),
                                                      e->signature.ToString(), a->args.size())));
    }
    std::vector<WasmValue> args;
    for (size_t i = 0; i < a->args.size(); ++i) {
      auto value = ParseArg(a->args[i], e->signature.params[i], i);
      if (!value.ok()) return Fail(value.status());
      args.push_back(*value);
    }
    wasm::Engine engine(actor::AbiV1Registry(), {}, EngineOptionsFor(a->engine));
    auto instance = engine.Instantiate(*module);
    if (!instance.ok()) return Fail(instance.status());
    actor::ActorCallContext context{*ActorRef::Parse(kDevSelf)};
    context.min_log_level = actor::LogLevel::kTrace;
    auto invocation = (*instance)->Start(a->export_name, args, &context);
    if (!invocation.ok()) return Fail(invocation.status());
    uint64_t used = 0;
    RunState state = Drive(**invocation, a->budget, 1'000'000, &used);
    PrintEffects(context.effects);
    std::fflush(stdout);
    if (state != RunState::kFinished) return ReportEnd(state, **invocation, used);
    for (const WasmValue& v : (*invocation)->results()) fmt::print("{}\n", wasm::FormatValue(v));
    return 0;
  };
}

// ---------------------------------------------------------------------------------------
// reef wasm inspect FILE

std::string Limits(const wasm::DeclaredLimits& l) {
  return l.max ? fmt::format("initial {}, max {}", l.initial, *l.max)
               : fmt::format("initial {}, no max", l.initial);
}

// One kind of Reef module inspect tells apart by its exports, and the imports the host gives it.
struct ModuleKindRow {
  std::string_view name;  // "actor", "command", ...
  const wasm::HostRegistry* registry;
  Status check;  // ok when the module exports what the kind needs
};

// The kinds of Reef module `m` could be, each checked against its exports.
std::vector<ModuleKindRow> CheckKinds(const wasm::Module& m) {
  std::vector<ModuleKindRow> rows;
  rows.push_back({"actor", &actor::AbiV1Registry(), actor::CheckActorExports(m)});
  for (apps::ModuleKind kind :
       {apps::ModuleKind::kCommand, apps::ModuleKind::kProjector, apps::ModuleKind::kEffect}) {
    rows.push_back({store::ModuleKindName(kind), &apps::ModuleRegistry(kind),
                    apps::CheckModuleExports(kind, m)});
  }
  return rows;
}

// The exports a program's unit can name as its "handler" (docs/programs.md): functions with
// reef_handle's signature next to the actor ABI's other exports. The event-sourced modules'
// own entry points (reef_* but reef_handle) are left out, though some share the signature.
std::vector<std::string> UnitHandlers(const wasm::Module& m) {
  std::vector<std::string> handlers;
  for (const wasm::ExportInfo& e : m.exports()) {
    if (e.kind != wasm::ExternKind::kFunc) continue;
    if (e.name.starts_with("reef_") && e.name != actor::kDefaultHandler) continue;
    if (actor::CheckActorExports(m, e.name).ok()) handlers.push_back(e.name);
  }
  return handlers;
}

// "reef v1 (reef_abi_version() = 1)", or why the version is not 1 or cannot be read; the module
// is instantiated with the imports of `registry`.
std::string AbiVersion(std::shared_ptr<const wasm::Module> module,
                       const wasm::HostRegistry& registry) {
  const wasm::ExportInfo* e = module->FindExport("reef_abi_version");
  if (e == nullptr) return "none: no export `reef_abi_version`";
  wasm::Engine engine(registry);
  auto instance = engine.Instantiate(std::move(module));
  if (!instance.ok()) return "unknown: cannot instantiate: " + instance.status().message();
  auto results = (*instance)->Call("reef_abi_version", {}, nullptr, 1'000'000);
  if (!results.ok()) return "unknown: reef_abi_version() failed: " + results.status().message();
  if (results->size() != 1 || !std::holds_alternative<int32_t>((*results)[0])) {
    return "unknown: reef_abi_version() does not return one i32";
  }
  int32_t version = std::get<int32_t>((*results)[0]);
  if (version == 1) return "reef v1 (reef_abi_version() = 1)";
  return fmt::format("reef_abi_version() = {}: this host speaks version 1", version);
}

// "" when every registry in `registries` provides import `i`, else a note naming the kinds
// whose host lacks it.
std::string ImportNote(const wasm::ImportInfo& i, const std::vector<ModuleKindRow>& kinds) {
  std::string missing;
  size_t lacking = 0;
  for (const ModuleKindRow& kind : kinds) {
    const wasm::HostFunction* host = kind.registry->Find(i.module, i.name);
    if (host != nullptr && host->signature == i.signature) continue;
    ++lacking;
    missing += fmt::format("{}{}", missing.empty() ? "" : ", ", kind.name);
  }
  if (lacking == 0) return "";
  if (lacking == kinds.size()) return "   (not provided by ABI reef v1)";
  return fmt::format("   (not provided to {} modules)", missing);
}

Handler SetupInspect(CLI::App& app) {
  auto file = std::make_shared<std::string>();
  app.add_option("file", *file, ".wasm binary or .wat text")->required();
  return [file] {
    auto loaded = wasm::Module::FromFile(*file);
    if (!loaded.ok()) return Fail(loaded.status());
    const wasm::Module& m = **loaded;
    std::vector<ModuleKindRow> all = CheckKinds(m);
    std::vector<ModuleKindRow> found;
    for (const ModuleKindRow& kind : all) {
      if (kind.check.ok()) found.push_back(kind);
    }
    std::vector<std::string> handlers = UnitHandlers(m);
    // The hosts the module may run under: those of its kinds (a unit's is the actor's), else
    // every kind's.
    std::vector<ModuleKindRow> hosts = found;
    if (!handlers.empty() && (found.empty() || found.front().name != "actor")) {
      hosts.insert(hosts.begin(), all.front());
    }
    if (hosts.empty()) hosts = all;

    fmt::print("module   {}\nid       {}\nbytes    {}\n", *file, m.id(), m.bytes().size());
    fmt::print("imports  {}\n", m.imports().size());
    for (const wasm::ImportInfo& i : m.imports()) {
      fmt::print("  {:<6} {}.{} {}{}\n", wasm::ExternKindName(i.kind), i.module, i.name,
                 i.kind == wasm::ExternKind::kFunc ? i.signature.ToString() : "",
                 ImportNote(i, hosts));
    }
    fmt::print("exports  {}\n", m.exports().size());
    for (const wasm::ExportInfo& e : m.exports()) {
      std::string signature =
          e.kind == wasm::ExternKind::kFunc ? " " + e.signature.ToString() : std::string();
      fmt::print("  {:<6} {}{}\n", wasm::ExternKindName(e.kind), e.name, signature);
    }
    for (size_t i = 0; i < m.memories().size(); ++i) {
      fmt::print("memory {} {} (64 KiB pages){}\n", i, Limits(m.memories()[i]),
                 m.memories()[i].imported ? ", imported" : "");
    }
    for (size_t i = 0; i < m.tables().size(); ++i) {
      fmt::print("table {}  {} (elements){}\n", i, Limits(m.tables()[i]),
                 m.tables()[i].imported ? ", imported" : "");
    }

    // kind: every kind the exports satisfy, then the unit handlers.
    std::string kinds;
    for (const ModuleKindRow& kind : found) {
      kinds += fmt::format("{}{}", kinds.empty() ? "" : ", ", kind.name);
    }
    if (!handlers.empty()) {
      std::string names;
      for (const std::string& h : handlers) names += (names.empty() ? "" : ", ") + h;
      kinds += fmt::format("{}program unit handler{}: {}", kinds.empty() ? "" : "; ",
                           handlers.size() == 1 ? "" : "s", names);
    }
    if (kinds.empty()) {
      fmt::print("kind     none: not a reef v1 module\n");
      for (const ModuleKindRow& kind : all) fmt::print("  {}\n", kind.check.message());
    } else {
      fmt::print("kind     {}\n", kinds);
    }
    fmt::print("abi      {}\n", AbiVersion(*loaded, *hosts.front().registry));
    return 0;
  };
}

// ---------------------------------------------------------------------------------------
// reef wasm handle FILE STATE MESSAGE [--sender REF] [--self REF] [--budget N] [--slice N]
//                  [--engine native|interp]

Handler SetupHandle(CLI::App& app) {
  struct Args {
    std::string file, state, message, sender, self = std::string(kDevSelf);
    uint64_t budget = 100'000'000, slice = 10'000;
    bool profile = false;
    std::string engine = "interp";
  };
  auto a = std::make_shared<Args>();
  app.add_option("file", a->file, "actor module (.wasm or .wat) built against ABI reef v1")
      ->required();
  app.add_option("state", a->state, "committed state, as JSON")->required();
  app.add_option("message", a->message, "the message, as JSON")->required();
  app.add_option("--sender", a->sender, "sender actor ref (default: the host, null)");
  app.add_option("--self", a->self, "the actor's own ref")->capture_default_str();
  app.add_option("--budget", a->budget, "instruction budget for the whole invocation")
      ->capture_default_str()
      ->check(kInstructionCount);
  app.add_option("--slice", a->slice, "instructions per slice")
      ->capture_default_str()
      ->check(kInstructionCount);
  app.add_flag("--profile", a->profile,
               "count instructions per function exactly (runs in 1-instruction slices; "
               "interpreter only)");
  AddEngineOption(app, a->engine);
  return [a] {
    if (a->profile && a->engine == "native") {
      return Fail(Status::InvalidArgument(
          "--profile needs --engine interp: native code has no frames to attribute counts to"));
    }
    ValueLimits limits;
    auto state = ValueFromJson(a->state, limits);
    if (!state.ok()) return Fail(state.status().WithContext("state"));
    auto message = ValueFromJson(a->message, limits);
    if (!message.ok()) return Fail(message.status().WithContext("message"));
    Value sender;
    if (!a->sender.empty()) {
      auto ref = ActorRef::Parse(a->sender.starts_with('@') ? a->sender.substr(1) : a->sender);
      if (!ref.ok()) return Fail(ref.status().WithContext("--sender"));
      sender = Value::Ref(*ref);
    }
    auto self = ActorRef::Parse(a->self);
    if (!self.ok()) return Fail(self.status().WithContext("--self"));

    auto module = wasm::Module::FromFile(a->file);
    if (!module.ok()) return Fail(module.status());
    wasm::Engine engine(actor::AbiV1Registry(), {}, EngineOptionsFor(a->engine));
    auto instance = engine.Instantiate(*module);
    if (!instance.ok()) return Fail(instance.status());
    actor::ActorCallContext context{*self};
    context.min_log_level = actor::LogLevel::kTrace;
    auto invocation = actor::StartHandle(**instance, context, *state, sender, *message);
    if (!invocation.ok()) return Fail(invocation.status());

    uint64_t used = 0;
    std::map<std::string, uint64_t> per_function;
    RunState end = RunState::kBudgetExhausted;
    if (a->profile) {
      // One instruction of fuel per slice. A slice is charged whole basic blocks (a slice that
      // ends in a call or a finish may be charged more than 1): each is counted as charged,
      // to the function it started in, so the total is what the invocation was charged.
      while (end == RunState::kBudgetExhausted && used < a->budget) {
        const wasm::Telemetry before = (*invocation)->telemetry();
        end = (*invocation)->Run(1);
        const uint64_t spent = (*invocation)->telemetry().instructions - before.instructions;
        per_function[before.function] += spent;
        used += spent;
      }
    } else {
      end = Drive(**invocation, a->budget, a->slice, &used);
    }
    fmt::print("actor    @{} ({}, module {})\n", self->str(), a->file,
               (*module)->id().substr(0, 12));
    fmt::print("handle   state {} <- message {} from {}\n", a->state, a->message,
               a->sender.empty() ? "the host" : "@" + std::string(sender.as_actor_ref().str()));
    // Logs are immediate; sends are delivered only if the transition commits.
    actor::Effects logs_only{{}, context.effects.logs, {}};
    PrintEffects(logs_only);
    if (a->profile) PrintProfile(per_function, used);
    auto discarded = [&] {
      if (!context.effects.sends.empty()) {
        fmt::print("discard  {} send(s) of the failed invocation\n", context.effects.sends.size());
      }
    };
    if (end != RunState::kFinished) {
      discarded();
      if (context.effects.failure) fmt::print("fail     {}\n", *context.effects.failure);
      fmt::print("failed   state stays {}; no send is delivered\n", a->state);
      std::fflush(stdout);
      return context.effects.failure ? 1 : ReportEnd(end, **invocation, used);
    }
    auto next = actor::DecodeNewState(**instance, **invocation, limits);
    if (!next.ok()) {
      discarded();
      fmt::print("failed   state stays {}; no send is delivered\n", a->state);
      return Fail(next.status());
    }
    actor::Effects sends_only{context.effects.sends, {}, {}};
    PrintEffects(sends_only);
    auto text = ValueToJsonText(*next, limits);
    fmt::print("commit   new state {} (charged {} instructions in slices of {})\n",
               text.ok() ? *text : text.status().ToString(), used, a->profile ? 1 : a->slice);
    return 0;
  };
}

const Command kWasmCommands[] = {
    {"wasm", "run", "Call an export of a module with i32/i64/f32/f64 arguments", SetupRun},
    {"wasm", "inspect",
     "List a module's imports, exports and limits, its kind (actor, command, projector, "
     "effect, program unit handlers) and its ABI version",
     SetupInspect},
    {"wasm", "handle", "Run one actor handler invocation and show its transition", SetupHandle},
};

}  // namespace

std::span<const Command> WasmCommands() {
  return kWasmCommands;
}

}  // namespace reef::cli
