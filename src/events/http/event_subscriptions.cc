#include "events/http/event_subscriptions.h"

#include <fmt/format.h>

#include <atomic>
#include <thread>

#include "events/http/event_json.h"

namespace reef::events::http {

using json = nlohmann::json;

namespace {

// Room a pump leaves in a connection's outgoing queue for responses, other events and its own
// "subscription-failed" notice, in bytes, beyond the event it is about to push.
constexpr uint64_t kPumpReserveBytes = 64 << 10;
// How long one wait for new events lasts before the pump looks at its connection again.
constexpr std::chrono::milliseconds kPoll{100};
// How often a pump looks again at a full outgoing queue (only while the client is slow).
constexpr std::chrono::milliseconds kRoomBackoff{5};

}  // namespace

struct EventSubscriptions::Pump {
  uint64_t id = 0;
  uint64_t connection_id = 0;
  std::atomic<bool> stop{false};
  std::atomic<bool> done{false};
  std::thread thread;

  // Sends matching events as "event" pushes until stopped, the connection goes away, the
  // store fails, or the client lags past `lag_timeout` (then one "subscription-failed").
  void Run(std::unique_ptr<Subscription> subscription, std::weak_ptr<server::Connection> handle,
           DataEncoding encoding, Position after, EventSubscriptionLimits limits) {
    Position sent = after;  // the last position the client was sent
    auto fail = [&](server::Connection& connection, std::string message) {
      (void)connection.Push("subscription-failed", json{{"subscription", id},
                                                        {"topic", "events"},
                                                        {"position", sent},
                                                        {"message", std::move(message)}});
    };
    while (!stop) {
      auto batch = subscription->Next(limits.batch_events, kPoll);
      auto connection = handle.lock();
      if (!connection || connection->closed()) break;
      if (!batch.ok()) {
        fail(*connection, batch.status().message());
        break;
      }
      bool lagged = false;
      for (const SequencedEvent& event : *batch) {
        json pushed = {{"subscription", id},
                       {"event", EventToJson(EventView::Of(event), encoding)}};
        // Waits until the event fits, with the reserve to spare (the queue is bounded in bytes).
        uint64_t needed = server::ToText(pushed).size() + kPumpReserveBytes;
        auto deadline = std::chrono::steady_clock::now() + limits.lag_timeout;
        while (connection->OutgoingRoomBytes() <= needed && !stop && !connection->closed()) {
          if (std::chrono::steady_clock::now() >= deadline) {
            lagged = true;
            break;
          }
          std::this_thread::sleep_for(kRoomBackoff);
        }
        if (lagged || stop || connection->closed()) break;
        if (!connection->Push("event", std::move(pushed)).ok()) break;
        sent = event.position;
      }
      if (lagged) {
        fail(*connection,
             fmt::format("the client read too slowly: its outgoing queue stayed full for {} ms "
                         "(lag_timeout); subscribe again with after = {} to resume",
                         limits.lag_timeout.count(), sent));
        break;
      }
    }
    done = true;
  }
};

EventSubscriptions::EventSubscriptions(EventStore& store, EventSubscriptionLimits limits)
    : store_(store), limits_(limits) {}

EventSubscriptions::~EventSubscriptions() {
  Stop();
}

void EventSubscriptions::Stop() {
  std::map<uint64_t, std::unique_ptr<Pump>> pumps;
  {
    MutexLock lock(mu_);
    pumps.swap(pumps_);
  }
  for (auto& [id, pump] : pumps) pump->stop = true;
  for (auto& [id, pump] : pumps) {
    if (pump->thread.joinable()) pump->thread.join();
  }
}

Status EventSubscriptions::RegisterOps(server::ProtocolDispatcher& dispatcher) {
  REEF_RETURN_IF_ERROR(dispatcher.Register(
      "events-subscribe",
      "follow the event store: every event matching a query after a position, then live",
      [this](const json& args, server::Connection& c) { return Subscribe(args, c); }));
  return dispatcher.Register(
      "events-unsubscribe", "end an events-subscribe subscription",
      [this](const json& args, server::Connection& c) { return Unsubscribe(args, c); });
}

size_t EventSubscriptions::open() const {
  MutexLock lock(mu_);
  size_t n = 0;
  for (const auto& [id, pump] : pumps_) n += pump->done ? 0 : 1;
  return n;
}

void EventSubscriptions::Reap() {
  for (auto it = pumps_.begin(); it != pumps_.end();) {
    if (it->second->done) {
      it->second->thread.join();
      it = pumps_.erase(it);
    } else {
      ++it;
    }
  }
}

Result<json> EventSubscriptions::Subscribe(const json& args, server::Connection& connection) {
  REEF_RETURN_IF_ERROR(CheckObjectFields(args, "", {"query", "after", "data_encoding"}));
  Query query;
  if (auto it = args.find("query"); it != args.end() && !it->is_null()) {
    REEF_ASSIGN_OR_RETURN(query, QueryFromJson(*it, "query"));
  }
  REEF_ASSIGN_OR_RETURN(auto after, OptionalUintField(args, "", "after"));
  if (uint64_t head = store_.Head(); after && *after > head) {
    // Positions are consecutive: such a subscription would skip the events appended at
    // positions head+1..after, which is never what a client means.
    return Status::InvalidArgument(fmt::format(
        "after {} is past the head of the store ({}); subscribe with an after of at most {}",
        *after, head, head));
  }
  DataEncoding encoding = DataEncoding::kAuto;
  if (auto it = args.find("data_encoding"); it != args.end() && !it->is_null()) {
    if (*it == "base64") {
      encoding = DataEncoding::kBase64;
    } else if (*it != "auto") {
      return Status::InvalidArgument("data_encoding must be \"auto\" or \"base64\"");
    }
  }
  std::weak_ptr<server::Connection> handle = connection.Handle();
  if (handle.expired()) return Status::FailedPrecondition("this connection cannot stream events");
  MutexLock lock(mu_);
  Reap();
  size_t on_connection = 0;
  for (const auto& [id, pump] : pumps_) on_connection += pump->connection_id == connection.id();
  if (pumps_.size() >= limits_.max_subscriptions) {
    return Status::LimitExceeded(fmt::format(
        "the server has {} event subscriptions open (max_subscriptions)", pumps_.size()));
  }
  if (on_connection >= limits_.max_per_connection) {
    return Status::LimitExceeded(fmt::format(
        "this connection has {} event subscriptions open (max_per_connection)", on_connection));
  }
  REEF_ASSIGN_OR_RETURN(auto subscription, store_.Subscribe(query, after.value_or(0)));
  auto pump = std::make_unique<Pump>();
  pump->id = next_id_++;
  pump->connection_id = connection.id();
  Pump* p = pump.get();
  json result = {{"subscription", p->id}, {"head", store_.Head()}};
  pump->thread = std::thread(
      [p, sub = std::move(subscription), handle, encoding, from = after.value_or(0),
       limits = limits_]() mutable { p->Run(std::move(sub), handle, encoding, from, limits); });
  pumps_.emplace(p->id, std::move(pump));
  return result;
}

Result<json> EventSubscriptions::Unsubscribe(const json& args, server::Connection& connection) {
  REEF_RETURN_IF_ERROR(CheckObjectFields(args, "", {"subscription"}));
  REEF_ASSIGN_OR_RETURN(auto id, OptionalUintField(args, "", "subscription"));
  if (!id) return Status::InvalidArgument("subscription is required");
  std::unique_ptr<Pump> pump;
  {
    MutexLock lock(mu_);
    auto it = pumps_.find(*id);
    if (it == pumps_.end() || it->second->connection_id != connection.id()) {
      return Status::NotFound(fmt::format("no event subscription {} on this connection", *id));
    }
    pump = std::move(it->second);
    pumps_.erase(it);
  }
  pump->stop = true;
  pump->thread.join();
  return json::object();
}

}  // namespace reef::events::http
