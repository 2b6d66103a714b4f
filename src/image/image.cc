// Image: opening the image, per-connection state, log-follow pumps and change notifications.
// The op table is in ops.cc.
#include "image/image.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <future>
#include <utility>

#include "image/detail/image_state.h"
#include "image/detail/wire.h"

namespace reef::image {

using json = nlohmann::json;

// ---- Opening ------------------------------------------------------------------------------------

Result<std::unique_ptr<Image>> Image::Open(ImageOptions options) {
  auto state = std::make_unique<State>();
  REEF_ASSIGN_OR_RETURN(state->store, code::SourceStore::Open(options.data_dir));
  state->cache = std::make_unique<code::CompileCache>(code::Compiler::Create(options.compiler));
  state->runtime = options.fleet;
  if (!state->runtime) {
    actor::RuntimeOptions own = options.runtime;
    own.mode = actor::SchedulingMode::kFreeRunning;
    own.reactors = 1;
    REEF_ASSIGN_OR_RETURN(state->runtime, actor::Runtime::Create(own));
  }
  state->options = options;
  if (options.durable) {
    REEF_RETURN_IF_ERROR(state->OpenDurable());
  } else {
    REEF_ASSIGN_OR_RETURN(state->group,
                          state->runtime->CreateGroup(actor::SchedulingMode::kManual));
    std::error_code ec;
    if (std::filesystem::exists(options.data_dir / "image" / "LOCK", ec)) {
      spdlog::warn(
          "image: ephemeral: the durable image in {} is left as it is and not loaded; start "
          "without --ephemeral to get its actors back",
          (options.data_dir / "image").string());
    }
  }
  for (const BundledSource& bundled : BundledSources()) {
    auto existing = state->store->Read(bundled.path);
    if (existing.ok()) continue;
    if (existing.status().code() != Code::kNotFound) return existing.status();
    auto written = state->store->Write(bundled.path, bundled.kind, bundled.text, std::nullopt);
    if (!written.ok())
      return written.status().WithContext("bundled source " + std::string(bundled.path));
    spdlog::info("image: bundled example written to working source {}", bundled.path);
  }
  state->compile_pool =
      std::make_unique<IoPool>("image compile", std::max(1u, options.limits.compile_threads),
                               options.limits.max_waiting_compiles);
  state->control_pool =
      std::make_unique<IoPool>("image control", std::max(1u, options.limits.control_threads),
                               options.limits.max_waiting_controls);
  return std::unique_ptr<Image>(new Image(std::move(state)));
}

Image::Image(std::unique_ptr<State> state) : state_(std::move(state)) {}

Image::~Image() {
  std::vector<uint64_t> ids;
  {
    MutexLock lock(state_->mu);
    for (const auto& [id, connection] : state_->connections) ids.push_back(id);
  }
  for (uint64_t id : ids) state_->Forget(id);
  state_->compile_pool.reset();  // waits for compiles running now: none spawns after this
  state_->control_pool.reset();  // waits for the actor operations running now
  Status removed = state_->runtime->RemoveGroup(*state_->group);
  if (!removed.ok()) spdlog::warn("image: its actors stay on the fleet: {}", removed.ToString());
  if (state_->durable) {
    // Every output gate still waiting answers now, while the state its answer touches is
    // here: the group recorded its last change above, and a gate registered before this wait
    // runs before it.
    std::promise<Status> settled;
    state_->durable->WhenAppendedDurable([&settled](Status status) { settled.set_value(status); });
    Status last = settled.get_future().get();
    if (!last.ok()) spdlog::warn("image: its last changes are not durable: {}", last.ToString());
  }
}

Status Image::Attach(server::ServerOptions& options) {
  REEF_RETURN_IF_ERROR(RegisterOps(options.dispatcher));
  options.on_disconnect = [this](uint64_t connection_id) { OnDisconnect(connection_id); };
  return Status::Ok();
}

void Image::OnDisconnect(uint64_t connection_id) {
  spdlog::debug("connection {}: closed; its cursor and subscriptions are dropped", connection_id);
  state_->Forget(connection_id);
}

actor::Runtime& Image::runtime() {
  return *state_->runtime;
}
actor::ActorGroup& Image::group() {
  return *state_->group;
}
code::SourceStore& Image::sources() {
  return *state_->store;
}
code::CompileCache& Image::cache() {
  return *state_->cache;
}
const ImageOptions& Image::options() const {
  return state_->options;
}

// ---- Connections --------------------------------------------------------------------------------

ConnectionState& Image::State::ConnectionLocked(server::Connection& connection) {
  ConnectionState& state = connections[connection.id()];
  if (state.handle.expired()) state.handle = connection.Handle();
  return state;
}

namespace {

// Joins a pump, unless it is the calling thread (a pump that released the connection last
// runs OnDisconnect itself); then it is detached and ends on its own after Close.
void EndFollow(std::unique_ptr<LogFollow> follow) {
  if (!follow) return;
  follow->subscription->Close();
  if (!follow->pump.joinable()) return;
  if (follow->pump.get_id() == std::this_thread::get_id()) {
    follow->pump.detach();
  } else {
    follow->pump.join();
  }
}

// Room a pump leaves in a connection's outgoing queue for responses and other events, in bytes.
constexpr uint64_t kPumpReserveBytes = 256 << 10;
// How often a pump looks again at a full outgoing queue (only while the client is slow).
constexpr std::chrono::milliseconds kPumpBackoff{5};

// Waits until `connection` has room for one more event beyond kPumpReserve. False when the
// subscription was closed meanwhile (unsubscribe, disconnect): then nothing more is sent.
// While it waits, new entries collect in the subscription's bounded buffer, which lags (and
// fails explicitly) when the client stays slow.
bool AwaitRoom(const actor::Subscription<actor::LogEntry>& subscription,
               const server::Connection& connection) {
  while (connection.OutgoingRoomBytes() <= kPumpReserveBytes) {
    if (subscription.closed()) return false;
    std::this_thread::sleep_for(kPumpBackoff);
  }
  return true;
}

// Drains `subscription` into "log" events on the connection until it is closed, the
// connection is gone, or it lagged (then one "subscription-failed" event). Blocks in Wait
// while there is nothing to send.
void PumpLogs(std::shared_ptr<actor::Subscription<actor::LogEntry>> subscription,
              std::weak_ptr<server::Connection> handle) {
  constexpr std::size_t kBatch = 256;
  constexpr std::chrono::minutes kWait{1};
  while (true) {
    auto batch = subscription->Wait(kBatch, kWait);
    if (!batch.ok()) {
      if (subscription->failed()) {
        if (auto connection = handle.lock(); connection && AwaitRoom(*subscription, *connection)) {
          (void)connection->Push("subscription-failed",
                                 json{{"topic", "logs"}, {"message", batch.status().message()}});
        }
      }
      return;
    }
    if (batch->empty()) continue;
    auto connection = handle.lock();
    if (!connection) return;
    for (const actor::LogEntry& entry : *batch) {
      if (!AwaitRoom(*subscription, *connection)) return;
      if (!connection->Push("log", detail::LogEntryJson(entry)).ok()) return;
    }
  }
}

}  // namespace

Result<uint64_t> Image::State::FollowLogs(server::Connection& connection, actor::LogFilter filter) {
  UnfollowLogs(connection.id());
  std::unique_ptr<LogFollow> follow;
  uint64_t after = 0;
  {
    MutexLock lock(mu);
    std::size_t follows = 0;
    for (const auto& [id, state] : connections) follows += state.follow ? 1 : 0;
    if (follows >= options.limits.max_log_followers) {
      return Status::LimitExceeded("too many log followers (max_log_followers = " +
                                   std::to_string(options.limits.max_log_followers) +
                                   "); unsubscribe another connection first");
    }
    ConnectionState& state = ConnectionLocked(connection);
    // Subscribing under mu orders this against a concurrent FollowLogs of the same
    // connection (the second replaces the first below).
    follow = std::make_unique<LogFollow>();
    after = group->logs.last_seq();
    follow->subscription = group->logs.Follow(filter);
    follow->pump = std::thread(PumpLogs, follow->subscription, state.handle);
    std::swap(follow, state.follow);
  }
  EndFollow(std::move(follow));  // a follow registered concurrently, if any
  return after;
}

void Image::State::UnfollowLogs(uint64_t connection_id) {
  std::unique_ptr<LogFollow> follow;
  {
    MutexLock lock(mu);
    auto it = connections.find(connection_id);
    if (it != connections.end()) follow = std::move(it->second.follow);
  }
  EndFollow(std::move(follow));
}

void Image::State::SetChanges(server::Connection& connection, bool subscribed) {
  MutexLock lock(mu);
  ConnectionLocked(connection).changes = subscribed;
}

void Image::State::NotifyChanged(std::string_view op, const Change& change) {
  std::vector<std::weak_ptr<server::Connection>> targets;
  {
    MutexLock lock(mu);
    for (const auto& [id, state] : connections) {
      if (state.changes) targets.push_back(state.handle);
    }
  }
  if (targets.empty()) return;
  json data = {{"op", op},
               {"actors", change.actors ? json(*change.actors) : json(nullptr)},
               {"paths", change.paths}};
  // Locked handles are released outside mu: releasing the last one may run OnDisconnect.
  for (const auto& target : targets) {
    if (auto connection = target.lock()) (void)connection->Push("changed", data);
  }
}

void Image::State::Forget(uint64_t connection_id) {
  std::unique_ptr<LogFollow> follow;
  {
    MutexLock lock(mu);
    auto it = connections.find(connection_id);
    if (it == connections.end()) return;
    follow = std::move(it->second.follow);
    connections.erase(it);
  }
  EndFollow(std::move(follow));
}

}  // namespace reef::image
