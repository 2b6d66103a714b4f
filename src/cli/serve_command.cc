// `reef serve`: runs a Node (node/node.h: the live image, the event store, modules, programs
// and the server on one listener) in a data directory until SIGINT or SIGTERM
// (docs/operations.md). This file is the flags, the log setup and the signals.
//
//   reef serve [--listen ADDR] [--data-dir DIR] [--auth-token TOKEN] [--store URI]
//
// Flags beat the environment (REEF_LISTEN, REEF_DATA_DIR, REEF_AUTH_TOKEN, REEF_ENGINE,
// REEF_STORE); REEF_LOG
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

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>

#include "apps/module_runtime.h"
#include "cli/commands.h"
#include "events/event_store.h"
#include "node/node.h"
#include "server/limits.h"
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
  std::string engine = "auto";      // wasm::TierChoice
  std::string native_cache;         // "" = DATA_DIR/cache/native
  bool ephemeral = false;           // the image's actors in memory only
  uint32_t image_journal_mib = 64;  // journal file size and compaction threshold, MiB
  std::string store;                // "" = embedded; else a postgresql:// URI
  uint32_t store_pool_size = events::PostgresEventStoreOptions{}.pool_size;
};

// Reef's own log: stderr, filter from REEF_LOG (default info).
void SetUpLogging() {
  auto logger = spdlog::stderr_color_mt("reef");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::info);
  if (const char* filter = std::getenv("REEF_LOG"); filter != nullptr && *filter != '\0') {
    spdlog::cfg::helpers::load_levels(filter);
  }
}

int Serve(const ServeArgs& args) {
  SetUpLogging();
  // Block before any thread starts (the node's threads inherit the mask).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  NodeOptions options;
  options.listen = args.listen;
  options.data_dir = args.data_dir;
  if (!args.auth_token.empty()) options.auth_token = args.auth_token;
  options.event_limits = args.event_limits;
  options.modules.command_max_retries = args.command_max_retries;
  options.modules.effect_backoff_initial =
      std::chrono::milliseconds(args.effect_backoff_initial_ms);
  options.modules.effect_backoff_max = std::chrono::milliseconds(
      std::max(args.effect_backoff_max_ms, args.effect_backoff_initial_ms));
  options.reactors = args.reactors;
  options.shutdown_timeout = std::chrono::milliseconds(args.shutdown_timeout_ms);
  const std::optional<wasm::TierChoice> engine = wasm::ParseTierChoice(args.engine);
  if (!engine.has_value()) {
    fmt::print(stderr, "reef serve: --engine {}: expected auto, native or interp\n", args.engine);
    return 1;
  }
  options.engine = *engine;
  options.native_cache = args.native_cache;
  options.durable_image = !args.ephemeral;
  options.image_journal_bytes = uint64_t{args.image_journal_mib} << 20;
  options.store = args.store == "embedded" ? std::string() : args.store;
  options.store_pool_size = args.store_pool_size;
  auto node = Node::Open(std::move(options));
  if (!node.ok()) {
    fmt::print(stderr, "reef serve: {}\n", node.status().message());
    return 1;
  }
  fmt::print(stderr, "reef: serving on ws://{} (data dir {}){}\n", (*node)->address(),
             args.data_dir, args.auth_token.empty() ? "" : " with bearer token auth");
  std::fflush(stderr);

  int received = 0;
  while (sigwait(&signals, &received) != 0) {
  }
  spdlog::info("received {}; shutting down (answering requests in flight for at most {} ms)",
               received == SIGINT ? "SIGINT" : "SIGTERM", args.shutdown_timeout_ms);
  (*node)->Stop();
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
                      "Data directory (reef.sqlite: source and module stores; image/: the "
                      "actors; units/: unit instances; programs/; events/; projectors/, "
                      "effects/, cache/); created when missing")
           ->envname("REEF_DATA_DIR")
           ->capture_default_str();
       app.add_flag("--ephemeral", args->ephemeral,
                    "Keep the image's actors and the unit instances in memory only: they are "
                    "gone when the server exits (default: durable in DATA_DIR/image and "
                    "DATA_DIR/units, restored on start)")
           ->envname("REEF_EPHEMERAL");
       app.add_option("--image-journal-mib", args->image_journal_mib,
                      "Durable image and unit instances: journal files are closed at this size, "
                      "in MiB, and compacted into a snapshot once the closed ones hold as much")
           ->envname("REEF_IMAGE_JOURNAL_MIB")
           ->check(CLI::Range(1u, 1024u))
           ->capture_default_str();
       app.add_option("--auth-token", args->auth_token,
                      "Bearer token every connection must present; required for a "
                      "non-loopback address")
           ->envname("REEF_AUTH_TOKEN");
       app.add_option("--store", args->store,
                      "Where events and modules live: embedded (the default: DATA_DIR/events "
                      "and DATA_DIR/reef.sqlite) or a PostgreSQL database "
                      "(postgresql://USER@HOST/DB, which several reef serve processes may "
                      "share; docs/operations.md \"PostgreSQL\")")
           ->envname("REEF_STORE");
       app.add_option("--store-pool-size", args->store_pool_size,
                      "PostgreSQL store: connections for appends and reads")
           ->envname("REEF_STORE_POOL_SIZE")
           ->check(CLI::Range(1u, 1000u))
           ->capture_default_str();
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
                      "Reactor threads running program units and command executions (0 = one "
                      "per core, at least 2)")
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
       app.add_option("--native-cache", args->native_cache,
                      "Directory of the native tier's compiled code (default: DATA_DIR/cache/"
                      "native); servers on one machine may share one")
           ->envname("REEF_NATIVE_CACHE");
       return [args] { return Serve(*args); };
     }},
};

}  // namespace

std::span<const Command> ServeCommands() {
  return kServeCommands;
}

}  // namespace reef::cli
