// Node: see node.h.
#include "node/node.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <utility>

#include "actor/runtime.h"
#include "apps/http/metrics_route.h"
#include "apps/http/module_routes.h"
#include "apps/http/program_routes.h"
#include "apps/program/program_runtime.h"
#include "apps/sqlite_heap.h"
#include "core/version.h"
#include "events/http/event_routes.h"
#include "events/http/event_subscriptions.h"
#include "image/image.h"
#include "pg/pg.h"
#include "server/http_stats.h"
#include "server/server.h"
#include "wasm/engine.h"
#include "wasm/engine_metrics.h"
#include "wasm/native/code_source.h"
#include "web/http/dashboard_routes.h"

namespace reef {
namespace {

// Registers the collectors of GET /metrics (core/metrics.h), one row each: the engine's, the
// modules' and event store's, the programs', the actor runtimes' (the image's and the
// programs'). REQUIRES: the registrations are reset before `modules`, `programs` and `image`
// are destroyed.
Result<std::vector<MetricsRegistration>> RegisterMetrics(MetricsRegistry& registry,
                                                         apps::ModuleRuntime& modules,
                                                         apps::program::ProgramRuntime& programs,
                                                         image::Image& image) {
  const std::pair<std::string, MetricsCollector> collectors[] = {
      {"actors",
       [&image, &programs](MetricFamilies& out) {
         image.runtime().CollectMetrics("image", out, &image.group());
         if (image.group().durable) image.group().durable->CollectMetrics("image", out);
         programs.runtime().CollectMetrics("programs", out);
         if (programs.durable() != nullptr) programs.durable()->CollectMetrics("programs", out);
       }},
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
  const std::string id = outcome.module_id.substr(0, 12);
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
// the cache directory (--native-cache, by default <data dir>/cache/native) compiled by a pool
// of background workers. `auto` without a C compiler stays on the interpreter and says so
// once; `native` without one fails.
Status ConfigureEngines(const NodeOptions& node) {
  const std::optional<wasm::TierChoice> choice = node.engine;
  wasm::EngineOptions options;
  options.tier = *choice;
  std::string cached_in;
  if (*choice != wasm::TierChoice::kInterp) {
    wasm::native::CodeSourceOptions code;
    code.cache = node.native_cache.empty() ? node.data_dir / "cache" / "native" : node.native_cache;
    cached_in = fmt::format("; native code kept in {}", code.cache->string());
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
  spdlog::info("engine: {} ({}){}", wasm::TierChoiceName(options.tier),
               wasm::TierChoiceSummary(options.tier), cached_in);
  wasm::Engine::SetDefaultOptions(std::move(options));
  return Status::Ok();
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

// GET /status: what this node is and how long it has run (docs/http-api.md "GET /status").
// `options` and `fleet` outlive the server.
server::HttpRoute StatusRoute(const NodeOptions& options, const actor::Runtime& fleet) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point started = Clock::now();
  const int64_t started_at_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::system_clock::now().time_since_epoch())
                                    .count();
  server::HttpRoute route;
  route.method = "GET";
  route.path = "/status";
  route.summary = "the node: version, uptime, engine tier, durability, reactors";
  route.handler = [&options, &fleet, started,
                   started_at_ms](const server::HttpRequest&) -> Result<nlohmann::json> {
    double uptime = std::chrono::duration<double>(Clock::now() - started).count();
    return nlohmann::json{{"version", kReefVersion},
                          {"started_at_ms", started_at_ms},
                          {"uptime_seconds", uptime},
                          {"engine", wasm::TierChoiceName(options.engine)},
                          {"durable", options.durable_image},
                          {"reactors", fleet.ReactorCount()},
                          {"data_dir", options.data_dir.string()},
                          {"store", options.store.empty() ? std::string("embedded")
                                                          : pg::RedactConninfo(options.store)},
                          {"auth_token", options.auth_token.has_value()}};
  };
  return route;
}

}  // namespace

Node::Node() = default;

Node::~Node() {
  Stop();
}

std::string Node::address() const {
  return server_ ? server_->address() : std::string();
}

Result<std::unique_ptr<Node>> Node::Open(NodeOptions options) {
  // Refuse a bad or unsafe address before the data directory is touched.
  REEF_RETURN_IF_ERROR(server::CheckListenPolicy(options.listen, options.auth_token)
                           .WithContext(fmt::format("cannot listen on {}", options.listen)));
  REEF_RETURN_IF_ERROR(PrepareDataDir(options.data_dir));
  REEF_RETURN_IF_ERROR(ConfigureEngines(options));
  std::unique_ptr<Node> node(new Node());
  node->options_ = std::move(options);
  Node& n = *node;
  const NodeOptions& o = n.options_;
  const std::string dir = o.data_dir.string();
  auto opened = [&dir](const Status& status, std::string_view what) {
    return Status(status.code(),
                  fmt::format("cannot open {} in data dir {}: {}", what, dir, status.ToString()));
  };

  // One fleet of reactors for all guest code: the image's actors, program units and
  // event-sourced modules (docs/runtime.md "One fleet").
  auto fleet = actor::Runtime::CreateFleet(o.reactors);
  if (!fleet.ok()) return opened(fleet.status(), "the reactor fleet");
  n.fleet_ = std::move(*fleet);

  image::ImageOptions image_options;
  image_options.data_dir = o.data_dir;
  image_options.fleet = n.fleet_;
  image_options.durable = o.durable_image;
  image_options.journal_bytes = o.image_journal_bytes;
  auto image = image::Image::Open(std::move(image_options));
  if (!image.ok()) return opened(image.status(), "the image");
  n.image_ = std::move(*image);

  // The event store (docs/operations.md "Event store"): next to the image's data, or in the
  // PostgreSQL database --store names.
  if (!o.store.empty()) {
    if (!pg::IsPostgresUri(o.store)) {
      return Status::InvalidArgument(fmt::format(
          "--store {}: expected a postgresql:// URI, or no --store for the embedded store",
          pg::RedactConninfo(o.store)));
    }
    events::PostgresEventStoreOptions pg_options;
    pg_options.limits = o.event_limits;
    pg_options.pool_size = o.store_pool_size;
    auto events = events::OpenPostgresEventStore(o.store, pg_options);
    if (!events.ok()) {
      return Status(events.status().code(),
                    fmt::format("cannot open the event store in {}: {}",
                                pg::RedactConninfo(o.store), events.status().message()));
    }
    n.events_ = std::move(*events);
    spdlog::info("event store {}: head {}", pg::RedactConninfo(o.store), n.events_->Head());
  } else {
    events::EventStoreOptions event_options;
    event_options.limits = o.event_limits;
    auto events = events::OpenEventStore(o.data_dir / "events", event_options);
    if (!events.ok()) return opened(events.status(), "the event store");
    n.events_ = std::move(*events);
    spdlog::info("event store {}/events: head {}", dir, n.events_->Head());
  }
  if (uint64_t torn = n.events_->Stats().torn_bytes_cut; torn > 0) {
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
  server_options.listen = o.listen;
  // Appends block their handler thread until their fdatasync: enough threads that concurrent
  // appends over HTTP share syncs (group commit) and do not hold up other requests. Routes that
  // wait for guests answer asynchronously and hold none.
  server_options.handler_threads = 32;
  server_options.limits.shutdown_timeout = o.shutdown_timeout;
  server_options.auth_token = o.auth_token;

  // The event-sourced modules: the module store in reef.sqlite (or the --store database), active
  // projectors and effects started now.
  apps::RuntimeOptions runtime_options = o.modules;
  runtime_options.data_dir = o.data_dir;
  runtime_options.fleet = n.fleet_;
  runtime_options.store_conninfo = o.store;
  auto modules = apps::ModuleRuntime::Open(*n.events_, runtime_options);
  if (!modules.ok()) return opened(modules.status(), "the module store");
  n.modules_ = std::move(*modules);
  events::http::EventRouteOptions event_route_options;
  event_route_options.reserved_data_prefix = std::string(apps::KeyRing::kMarker);
  event_route_options.encrypt = [keys = &n.modules_->keys()](std::string_view scope,
                                                             std::string_view data) {
    return keys->Encrypt(scope, data);
  };
  event_route_options.decrypt = [keys = &n.modules_->keys()](std::string_view stored) {
    return keys->Open(stored);
  };
  for (server::HttpRoute& route : events::http::EventRoutes(*n.events_, event_route_options)) {
    server_options.routes.push_back(std::move(route));
  }
  // Event-store subscriptions for outside consumers (protocol ops).
  n.subscriptions_ = std::make_unique<events::http::EventSubscriptions>(*n.events_);
  REEF_RETURN_IF_ERROR(n.subscriptions_->RegisterOps(server_options.dispatcher));

  // Programs and units (docs/programs.md); the newest kept program is deployed again.
  apps::program::ProgramRuntimeOptions program_options;
  program_options.data_dir = o.data_dir;
  program_options.fleet = n.fleet_;
  program_options.durable = o.durable_image;
  program_options.journal_bytes = o.image_journal_bytes;
  auto programs = apps::program::ProgramRuntime::Open(std::move(program_options));
  if (!programs.ok()) {
    return Status(programs.status().code(),
                  fmt::format("cannot start the program runtime in data dir {}: {}", dir,
                              programs.status().ToString()));
  }
  n.programs_ = std::move(*programs);
  for (server::HttpRoute& route : apps::http::ModuleRoutes(*n.modules_)) {
    server_options.routes.push_back(std::move(route));
  }
  REEF_ASSIGN_OR_RETURN(n.metric_collectors_,
                        RegisterMetrics(n.metrics_, *n.modules_, *n.programs_, *n.image_));
  server_options.routes.push_back(apps::http::MetricsRoute(n.metrics_));
  for (server::HttpRoute& route : apps::http::ProgramRoutes(*n.programs_)) {
    server_options.routes.push_back(std::move(route));
  }
  server_options.routes.push_back(StatusRoute(n.options_, *n.fleet_));
  for (server::HttpRoute& route : web::http::DashboardRoutes(o.auth_token)) {
    server_options.routes.push_back(std::move(route));
  }
  REEF_RETURN_IF_ERROR(n.image_->Attach(server_options));
  auto server = server::Server::Start(std::move(server_options));
  if (!server.ok()) {
    return Status(server.status().code(),
                  fmt::format("cannot listen on {}: {}", o.listen, server.status().ToString()));
  }
  n.server_ = std::move(*server);
  auto server_metrics = n.metrics_.Register(
      "server", [stats = n.server_->http_stats()](MetricFamilies& out) { stats->Collect(out); });
  if (!server_metrics.ok()) return server_metrics.status();
  n.metric_collectors_.push_back(std::move(*server_metrics));
  return node;
}

void Node::Stop() {
  if (stopped_) return;
  stopped_ = true;
  if (auto code = wasm::Engine::DefaultOptions().native_code; code != nullptr) code->Shutdown();
  // Invocations waiting for a unit are answered 503 now, not when their timeout ends (the
  // server's graceful stop would wait for them up to its shutdown timeout, then cut them);
  // so are drains, command executions that have not appended and projector queries.
  if (programs_) programs_->BeginStop();
  if (modules_) modules_->BeginStop();
  if (server_) server_->Stop();
  if (subscriptions_) subscriptions_->Stop();
  server_.reset();
  metric_collectors_.clear();
  image_.reset();
  programs_.reset();
  modules_.reset();
  fleet_.reset();  // the last holder: its reactors stop here
  subscriptions_.reset();
  events_.reset();
}

}  // namespace reef
