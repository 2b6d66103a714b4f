// Node: one running Reef, composed in one place (issue 15 item 7). Open prepares the data
// directory, configures the engines of the process, opens the event store, the live image,
// the event-sourced modules and the programs, registers their metrics and routes, and starts
// the server. Stop takes them down in the one order that is safe (below). `reef serve` is
// this plus flags and signals (cli/serve_command.cc); tests and benchmarks can run a node
// in-process.
//
// What lives where under the data directory: docs/operations.md "Data on disk".
//
// Shutdown order (Stop): native compiles end (no compiler outlives the process; nothing waits
// for one), unit invocations still waiting are answered 503 and new ones refused, the server
// stops (requests in flight answered within shutdown_timeout), event
// subscriptions end (their pumps hold server connections), the server goes (its handlers
// refer to everything below), metric collectors unregister (they read what goes next), then
// the image, the programs, the modules (their threads read the event store) and last the
// event store.
//
// Thread ownership: Open, Stop and the destructor on one thread (not a server thread);
// address() from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "apps/module_runtime.h"
#include "core/metrics.h"
#include "core/status.h"
#include "events/event_store.h"
#include "wasm/tier.h"

namespace reef {
namespace server {
class Server;
}
namespace image {
class Image;
}
namespace actor {
class Runtime;
}
namespace events::http {
class EventSubscriptions;
}
namespace apps::program {
class ProgramRuntime;
}

struct NodeOptions {
  std::string listen = "127.0.0.1:7433";  // server::ServerOptions::listen
  std::filesystem::path data_dir = "./reef-data";
  std::optional<std::string> auth_token;  // required for a non-loopback listen address
  events::EventLimits event_limits;
  // Commands, projectors and effects; `data_dir` is set from the node's.
  apps::RuntimeOptions modules;
  // Reactor threads of the fleet that runs all guest code (the image's actors, program units,
  // command executions); 0 = cores (at least 2).
  uint32_t reactors = 0;
  std::chrono::milliseconds shutdown_timeout{5'000};  // for requests in flight at Stop
  wasm::TierChoice engine = wasm::TierChoice::kAuto;  // for every engine of the process
  // Where native code is kept (wasm/native/code_cache.h); empty = data_dir/cache/native. Several
  // nodes may share one directory; it must be this user's and writable by no one else.
  std::filesystem::path native_cache;
  // False (`--ephemeral`): the image's actors and the unit instances live in memory only
  // (image::ImageOptions::durable, apps::program::ProgramRuntimeOptions::durable).
  bool durable_image = true;
  // Their journal files' size, and the closed files' size that starts a compaction
  // (image::ImageOptions::journal_bytes, ProgramRuntimeOptions::journal_bytes).
  uint64_t image_journal_bytes = 64ull << 20;
  // Where events live: "" = the embedded store in data_dir/events; a postgresql:// (or
  // postgres://) URI = that PostgreSQL database, which other nodes may share.
  std::string store;
  size_t store_pool_size = events::PostgresEventStoreOptions{}.pool_size;  // PostgreSQL only
};

class Node {
 public:
  // Opens everything and starts serving. Errors (each message names what could not be done,
  // and the data directory where it matters): InvalidArgument / FailedPrecondition for the
  // listen address and token (checked before the data directory is touched); Unavailable
  // when the data directory, the image, the event store, the module store or the program
  // runtime cannot be opened, or the address cannot be bound; FailedPrecondition for
  // --engine native without a C compiler.
  static Result<std::unique_ptr<Node>> Open(NodeOptions options);
  ~Node();  // Stop()
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // The bound address, "127.0.0.1:7433" (the chosen port when listen asked for port 0).
  std::string address() const;
  // Stops in the order the header describes. Idempotent.
  void Stop();

 private:
  Node();

  NodeOptions options_;
  bool stopped_ = false;
  // Declared in opening order; Stop resets them in its own order.
  // The reactor fleet: the image's actors, program units and command executions run on it.
  std::shared_ptr<actor::Runtime> fleet_;
  std::unique_ptr<image::Image> image_;
  std::unique_ptr<events::EventStore> events_;
  std::unique_ptr<apps::ModuleRuntime> modules_;
  std::unique_ptr<events::http::EventSubscriptions> subscriptions_;
  std::unique_ptr<apps::program::ProgramRuntime> programs_;
  MetricsRegistry metrics_;  // GET /metrics renders it; outlives the server
  std::vector<MetricsRegistration> metric_collectors_;
  std::unique_ptr<server::Server> server_;
};

}  // namespace reef
