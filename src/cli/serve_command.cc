// `reef serve`: opens the live image (image/image.h) in a data directory and serves it on one
// listener (server/server.h) until SIGINT or SIGTERM (docs/operations.md).
//
//   reef serve [--listen ADDR] [--data-dir DIR] [--auth-token TOKEN]
//
// Flags beat the environment (REEF_LISTEN, REEF_DATA_DIR, REEF_AUTH_TOKEN, REEF_ENGINE); REEF_LOG
// sets Reef's own log filter (spdlog syntax: "debug", "actor=trace,info"). Reef's log goes to
// stderr; one line "reef: serving on ws://HOST:PORT (data dir DIR)" says it is ready (with
// the bound port when the listen address asked for port 0).
//
// Thread ownership: main thread. SIGINT and SIGTERM are blocked before any thread starts, so
// every thread inherits the mask and only the main thread's sigwait receives them.
#include <fmt/format.h>
#include <signal.h>
#include <spdlog/cfg/helpers.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "apps/http/metrics_route.h"
#include "apps/http/module_routes.h"
#include "apps/http/program_routes.h"
#include "apps/module_runtime.h"
#include "apps/program/program_runtime.h"
#include "apps/sqlite_heap.h"
#include "cli/commands.h"
#include "cli/output.h"
#include "core/metrics.h"
#include "events/event_store.h"
#include "events/http/event_routes.h"
#include "events/http/event_subscriptions.h"
#include "image/image.h"
#include "server/server.h"
#include "wasm/engine.h"
#include "wasm/engine_metrics.h"
#include "wasm/native/code_source.h"
#include "wasm/tier.h"

namespace reef::cli {
namespace {

constexpr std::string_view kDefaultListen = "127.0.0.1:7433";
constexpr std::string_view kDefaultDataDir = "./reef-data";

struct ServeArgs {
  std::string listen = std::string(kDefaultListen);
  std::string data_dir = std::string(kDefaultDataDir);
  std::string auth_token;            // empty = none
  events::EventLimits event_limits;  // max_event_bytes, max_append_bytes from the flags
  uint32_t command_max_retries = apps::RuntimeOptions{}.command_max_retries;
  uint64_t effect_backoff_initial_ms = apps::RuntimeOptions{}.effect_backoff_initial.count();
  uint64_t effect_backoff_max_ms = apps::RuntimeOptions{}.effect_backoff_max.count();
  uint32_t reactors = 0;  // program units' reactor threads; 0 = cores (at least 2)
  uint64_t shutdown_timeout_ms = server::ServerLimits{}.shutdown_timeout.count();
  std::string engine = "auto";  // wasm::TierChoice
};

// Registers the collectors of GET /metrics (core/metrics.h), one row each: the engine's, the
// modules' and event store's, the programs'. REQUIRES: the registrations are reset before
// `modules` and `programs` are destroyed.
Result<std::vector<MetricsRegistration>> RegisterMetrics(MetricsRegistry& registry,
                                                         apps::ModuleRuntime& modules,
                                                         apps::program::ProgramRuntime& programs) {
  const std::pair<std::string, MetricsCollector> collectors[] = {
      {"engine",
       [](MetricFamilies& out) {
         wasm::CollectEngineMetrics(wasm::Engine::DefaultOptions(), out);
       }},
      {"modules", [&modules](MetricFamilies& out) { modules.CollectMetrics(out); }},
      {"programs", [&programs](MetricFamilies& out) { programs.CollectMetrics(out); }},
  };
  std::vector<MetricsRegistration> registrations;
  for (const auto& [name, collector] : collectors) {
    REEF_ASSIGN_OR_RETURN(MetricsRegistration registration, registry.Register(name, collector));
    registrations.push_back(std::move(registration));
  }
  return registrations;
}

// One line of the server's log per native compile, rebuild or failure (CodeSource's
// on_outcome; a compile worker's thread). A module is named by the first 12 hex digits of
// its SHA-256 (ShortId), the start of the `sha256` the module views show.
void LogCodeOutcome(const wasm::native::CodeOutcome& outcome, bool no_compiler) {
  const std::string id = ShortId(outcome.module_id);
  if (outcome.outcome == "failed") {
    if (no_compiler) return;
    spdlog::warn("engine: module {} stays on the interpreter: its native compile failed: {}", id,
                 outcome.detail);
    return;
  }
  if (outcome.outcome == "rebuilt") {
    spdlog::warn(
        "engine: module {}: its cached native code was refused ({}); recompiled in "
        "{:.2f} CPU-s",
        id, outcome.detail, outcome.cpu_seconds);
  } else {
    spdlog::info("engine: module {} compiled to native code in {:.2f} CPU-s ({} wasm bytes)", id,
                 outcome.cpu_seconds, outcome.wasm_bytes);
  }
  if (outcome.outcome == "compiled" && !outcome.detail.empty()) {
    spdlog::warn("engine: module {}: its native code could not be kept in the cache: {}", id,
                 outcome.detail);
  }
}

// Makes every engine of this process use the chosen tier (--engine), with native code from
// <data dir>/cache/native compiled by a pool of background workers. `auto` without a C
// compiler stays on the interpreter and says so once; `native` without one fails.
Status ConfigureEngines(const ServeArgs& args) {
  const std::optional<wasm::TierChoice> choice = wasm::ParseTierChoice(args.engine);
  if (!choice.has_value()) {
    return Status::InvalidArgument(
        fmt::format("--engine {}: expected auto, native or interp", args.engine));
  }
  wasm::EngineOptions options;
  options.tier = *choice;
  if (*choice != wasm::TierChoice::kInterp) {
    wasm::native::CodeSourceOptions code;
    code.cache = std::filesystem::path(args.data_dir) / "cache" / "native";
    code.background = true;
    // Without a compiler every module fails the same way: said once below, not per module.
    auto no_compiler = std::make_shared<std::atomic<bool>>(false);
    code.on_outcome = [no_compiler](const wasm::native::CodeOutcome& outcome) {
      LogCodeOutcome(outcome, no_compiler->load());
    };
    REEF_ASSIGN_OR_RETURN(options.native_code, wasm::native::CodeSource::Create(code));
    if (Status compiler = options.native_code->CompilerStatus(); !compiler.ok()) {
      no_compiler->store(true);
      if (*choice == wasm::TierChoice::kNative) {
        return compiler.WithContext("--engine native needs a C compiler");
      }
      // Each module's compile then fails at once and it stays on the interpreter.
      spdlog::warn("engine: auto, but no C compiler: every module stays on the interpreter ({})",
                   compiler.message());
    }
  }
  spdlog::info("engine: {} ({})", wasm::TierChoiceName(options.tier),
               wasm::TierChoiceSummary(options.tier));
  wasm::Engine::SetDefaultOptions(std::move(options));
  return Status::Ok();
}

// Reef's own log: stderr, filter from REEF_LOG (default info).
void SetUpLogging() {
  auto logger = spdlog::stderr_color_mt("reef");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::info);
  if (const char* filter = std::getenv("REEF_LOG"); filter != nullptr && *filter != '\0') {
    spdlog::cfg::helpers::load_levels(filter);
  }
}

// The data directory holds the crypto-shredding keys and every module's data: it is the
// owner's alone (docs/operations.md "Data on disk"). Whatever the umask, what Reef creates is
// 0600 (files) or 0700 (directories), and a directory made by an older Reef is tightened.
Status PrepareDataDir(const std::filesystem::path& dir) {
  ::umask(077);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return Status::Unavailable(fmt::format("cannot create {}: {}", dir.string(), ec.message()));
  namespace fs = std::filesystem;
  auto tighten = [](const fs::path& path, bool is_dir) {
    std::error_code ignored;
    fs::permissions(path,
                    is_dir ? fs::perms::owner_all : fs::perms::owner_read | fs::perms::owner_write,
                    fs::perm_options::replace, ignored);
  };
  tighten(dir, true);
  for (auto it =
           fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_symlink()) continue;
    tighten(it->path(), it->is_directory());
  }
  if (ec) return Status::Unavailable(fmt::format("cannot list {}: {}", dir.string(), ec.message()));
  return Status::Ok();
}

int Serve(const ServeArgs& args) {
  SetUpLogging();
  // Block before any thread starts (the image and server threads inherit the mask).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  // Refuse a bad or unsafe address before the data directory is touched.
  std::optional<std::string> token;
  if (!args.auth_token.empty()) token = args.auth_token;
  if (Status policy = server::CheckListenPolicy(args.listen, token); !policy.ok()) {
    fmt::print(stderr, "reef serve: cannot listen on {}: {}\n", args.listen, policy.ToString());
    return 1;
  }

  if (Status prepared = PrepareDataDir(args.data_dir); !prepared.ok()) {
    fmt::print(stderr, "reef serve: {}\n", prepared.ToString());
    return 1;
  }
  if (Status engines = ConfigureEngines(args); !engines.ok()) {
    fmt::print(stderr, "reef serve: {}\n", engines.ToString());
    return 1;
  }
  image::ImageOptions image_options;
  image_options.data_dir = args.data_dir;
  auto image = image::Image::Open(std::move(image_options));
  if (!image.ok()) {
    fmt::print(stderr, "reef serve: cannot open the image in data dir {}: {}\n", args.data_dir,
               image.status().ToString());
    return 1;
  }

  // The event store (docs/operations.md "Event store") lives next to the image's data and
  // outlives the server whose routes use it.
  events::EventStoreOptions event_options;
  event_options.limits = args.event_limits;
  auto events =
      events::OpenEventStore(std::filesystem::path(args.data_dir) / "events", event_options);
  if (!events.ok()) {
    fmt::print(stderr, "reef serve: cannot open the event store in data dir {}: {}\n",
               args.data_dir, events.status().ToString());
    return 1;
  }
  spdlog::info("event store {}/events: head {}", args.data_dir, (*events)->Head());
  if (uint64_t torn = (*events)->Stats().torn_bytes_cut; torn > 0) {
    spdlog::warn(
        "event store: cut {} bytes from the end of the log: an append torn by a crash "
        "(never acknowledged), or damage to the last one",
        torn);
  }

  if (!apps::SqlHeapBudgetsEnforced()) {
    spdlog::warn(
        "SQLite initialized before Reef could install its allocator: projector queries and "
        "module SQL run without their per-statement memory limit");
  }

  server::ServerOptions server_options;
  server_options.listen = args.listen;
  // Appends block their handler thread until their fdatasync: enough threads that concurrent
  // appends over HTTP share syncs (group commit) and do not hold up other requests.
  server_options.handler_threads = 32;
  server_options.limits.shutdown_timeout = std::chrono::milliseconds(args.shutdown_timeout_ms);
  // The event-sourced modules: the module store in reef.sqlite, active projectors and effects
  // started now. Declared after the store (destroyed before it), before the server.
  apps::RuntimeOptions runtime_options;
  runtime_options.data_dir = args.data_dir;
  runtime_options.command_max_retries = args.command_max_retries;
  runtime_options.effect_backoff_initial =
      std::chrono::milliseconds(args.effect_backoff_initial_ms);
  runtime_options.effect_backoff_max = std::chrono::milliseconds(
      std::max(args.effect_backoff_max_ms, args.effect_backoff_initial_ms));
  auto runtime = apps::ModuleRuntime::Open(**events, runtime_options);
  if (!runtime.ok()) {
    fmt::print(stderr, "reef serve: cannot open the module store in data dir {}: {}\n",
               args.data_dir, runtime.status().ToString());
    return 1;
  }
  events::http::EventRouteOptions event_route_options;
  event_route_options.reserved_data_prefix = std::string(apps::KeyRing::kMarker);
  event_route_options.encrypt = [keys = &(*runtime)->keys()](std::string_view scope,
                                                             std::string_view data) {
    return keys->Encrypt(scope, data);
  };
  event_route_options.decrypt = [keys = &(*runtime)->keys()](std::string_view stored) {
    return keys->Open(stored);
  };
  for (server::HttpRoute& route : events::http::EventRoutes(**events, event_route_options)) {
    server_options.routes.push_back(std::move(route));
  }
  // Event-store subscriptions for outside consumers (protocol ops); declared before the server,
  // so its pumps are joined after the server stopped.
  events::http::EventSubscriptions subscriptions(**events);
  if (Status registered = subscriptions.RegisterOps(server_options.dispatcher); !registered.ok()) {
    fmt::print(stderr, "reef serve: {}\n", registered.ToString());
    return 1;
  }
  // Programs and units (docs/programs.md): their own free-running reactor fleet; the newest
  // kept program is deployed again.
  apps::program::ProgramRuntimeOptions program_options;
  program_options.data_dir = args.data_dir;
  program_options.reactors = args.reactors;
  auto programs = apps::program::ProgramRuntime::Open(std::move(program_options));
  if (!programs.ok()) {
    fmt::print(stderr, "reef serve: cannot start the program runtime in data dir {}: {}\n",
               args.data_dir, programs.status().ToString());
    return 1;
  }
  for (server::HttpRoute& route : apps::http::ModuleRoutes(**runtime)) {
    server_options.routes.push_back(std::move(route));
  }
  // GET /metrics renders what the subsystems' collectors add; the registry outlives the server.
  MetricsRegistry metrics;
  auto metric_collectors = RegisterMetrics(metrics, **runtime, **programs);
  if (!metric_collectors.ok()) {
    fmt::print(stderr, "reef serve: {}\n", metric_collectors.status().ToString());
    return 1;
  }
  server_options.routes.push_back(apps::http::MetricsRoute(metrics));
  for (server::HttpRoute& route : apps::http::ProgramRoutes(**programs)) {
    server_options.routes.push_back(std::move(route));
  }
  if (!args.auth_token.empty()) server_options.auth_token = args.auth_token;
  if (Status attached = (*image)->Attach(server_options); !attached.ok()) {
    fmt::print(stderr, "reef serve: {}\n", attached.ToString());
    return 1;
  }
  auto server = server::Server::Start(std::move(server_options));
  if (!server.ok()) {
    fmt::print(stderr, "reef serve: cannot listen on {}: {}\n", args.listen,
               server.status().ToString());
    return 1;
  }
  fmt::print(stderr, "reef: serving on ws://{} (data dir {}){}\n", (*server)->address(),
             args.data_dir, args.auth_token.empty() ? "" : " with bearer token auth");
  std::fflush(stderr);

  int received = 0;
  while (sigwait(&signals, &received) != 0) {
  }
  spdlog::info("received {}; shutting down (answering requests in flight for at most {} ms)",
               received == SIGINT ? "SIGINT" : "SIGTERM", args.shutdown_timeout_ms);
  // Compiles end first (the engine options outlive main): no compiler keeps running after the
  // process, no temporary directory is left behind, and no request or reactor that waits for
  // a compile (--engine native) holds up the server's stop past its deadline; such a wait
  // fails Unavailable.
  if (auto code = wasm::Engine::DefaultOptions().native_code; code != nullptr) code->Shutdown();
  (*server)->Stop();
  subscriptions.Stop();  // its pumps may hold connections of the server
  server->reset();       // the server goes before the image and the store its handlers refer to
  metric_collectors->clear();  // no collector runs after this: they read what goes next
  image->reset();
  programs->reset();
  runtime->reset();  // module threads stop before the event store they read closes
  events->reset();
  spdlog::info("stopped");
  return 0;
}

const Command kServeCommands[] = {
    {"", "serve", "Start the live image and serve it (WebSocket reef.v1 and HTTP)",
     [](CLI::App& app) -> Handler {
       auto args = std::make_shared<ServeArgs>();
       app.add_option("--listen", args->listen,
                      "HOST:PORT to listen on (loopback unless --auth-token is set; port 0 "
                      "picks one)")
           ->envname("REEF_LISTEN")
           ->capture_default_str();
       app.add_option("--data-dir", args->data_dir,
                      "Data directory (reef.sqlite: source and module stores; events/; "
                      "projectors/, effects/, cache/); created "
                      "when missing")
           ->envname("REEF_DATA_DIR")
           ->capture_default_str();
       app.add_option("--auth-token", args->auth_token,
                      "Bearer token every connection must present; required for a "
                      "non-loopback address")
           ->envname("REEF_AUTH_TOKEN");
       app.add_option("--max-event-bytes", args->event_limits.max_event_bytes,
                      "Event store: largest event, in stored bytes")
           ->envname("REEF_MAX_EVENT_BYTES")
           ->check(CLI::Range(uint64_t{64}, uint64_t{1} << 30))
           ->capture_default_str();
       app.add_option("--max-append-bytes", args->event_limits.max_append_bytes,
                      "Event store: largest append (all its events), in stored bytes")
           ->envname("REEF_MAX_APPEND_BYTES")
           ->check(CLI::Range(uint64_t{64}, uint64_t{1} << 30))
           ->capture_default_str();
       app.add_option("--command-max-retries", args->command_max_retries,
                      "Commands: retries after a conflicting append (jittered backoff between)")
           ->envname("REEF_COMMAND_MAX_RETRIES")
           ->check(CLI::Range(0u, 1000u))
           ->capture_default_str();
       app.add_option("--effect-backoff-initial-ms", args->effect_backoff_initial_ms,
                      "Effects: first retry delay of a failed event, in ms (doubles per failure)")
           ->envname("REEF_EFFECT_BACKOFF_INITIAL_MS")
           ->check(CLI::Range(uint64_t{1}, uint64_t{3'600'000}))
           ->capture_default_str();
       app.add_option("--effect-backoff-max-ms", args->effect_backoff_max_ms,
                      "Effects: longest retry delay, in ms")
           ->envname("REEF_EFFECT_BACKOFF_MAX_MS")
           ->check(CLI::Range(uint64_t{1}, uint64_t{86'400'000}))
           ->capture_default_str();
       app.add_option("--reactors", args->reactors,
                      "Programs: reactor threads hosting unit instances (0 = one per core, at "
                      "least 2)")
           ->envname("REEF_REACTORS")
           ->check(CLI::Range(0u, 256u))
           ->capture_default_str();
       app.add_option("--shutdown-timeout-ms", args->shutdown_timeout_ms,
                      "On SIGTERM/SIGINT: longest wait for requests in flight to be answered "
                      "and WebSocket clients to close, in ms")
           ->envname("REEF_SHUTDOWN_TIMEOUT_MS")
           ->check(CLI::Range(uint64_t{0}, uint64_t{600'000}))
           ->capture_default_str();
       app.add_option("--engine", args->engine,
                      "How guest code runs: auto (the interpreter at once, native code once "
                      "compiled), native (compiled before it first runs; needs a C compiler) "
                      "or interp (the interpreter only)")
           ->envname("REEF_ENGINE")
           ->check(CLI::IsMember({"auto", "native", "interp"}))
           ->capture_default_str();
       return [args] { return Serve(*args); };
     }},
};

}  // namespace

std::span<const Command> ServeCommands() {
  return kServeCommands;
}

}  // namespace reef::cli
