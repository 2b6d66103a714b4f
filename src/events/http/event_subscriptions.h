// Live event-store subscriptions for clients outside the process, over the WebSocket protocol
// (docs/protocol.md "Event subscriptions"): like a KurrentDB catch-up subscription, a client
// names a query and a position `after`, receives every matching event after it in position
// order (the stored ones first, then new appends as they are made), and can resume from the
// last position it saw.
//
//   events-subscribe    {"query": query?, "after": N?, "data_encoding": "auto"|"base64"?}
//                       -> {"subscription": id, "head": N}
//   events-unsubscribe  {"subscription": id} -> {}
//   pushed "event"              {"subscription": id, "event": {event as /events/read gives}}
//   pushed "subscription-failed" {"subscription": id, "topic": "events", "position": N,
//                                 "message": why}  (then the subscription is gone)
//
// Bounded: a subscription sends only while the connection's outgoing queue has room; a client
// that leaves it full for longer than `lag_timeout` gets "subscription-failed" naming the
// last position it was sent (resume with "after" = that position), never a silent gap.
//
// Thread ownership: any thread. Each subscription runs one pump thread; Stop (or the
// destructor) stops and joins them. REQUIRES: the server whose dispatcher holds the ops is
// stopped (Server::Stop) before Stop is called, Stop is called before the server is destroyed
// (a pump may hold one of its connections), and `store` outlives this object.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>

#include "core/mutex.h"
#include "events/event_store.h"
#include "server/protocol.h"

namespace reef::events::http {

struct EventSubscriptionLimits {
  uint32_t max_subscriptions = 64;                // open at once, all connections together
  uint32_t max_per_connection = 8;                // open at once on one connection
  std::chrono::milliseconds lag_timeout{10'000};  // longest a full outgoing queue is waited on
  size_t batch_events = 256;                      // events taken from the store per step
};

class EventSubscriptions {
 public:
  EventSubscriptions(EventStore& store, EventSubscriptionLimits limits = {});
  ~EventSubscriptions();
  EventSubscriptions(const EventSubscriptions&) = delete;
  EventSubscriptions& operator=(const EventSubscriptions&) = delete;

  // Adds "events-subscribe" and "events-unsubscribe" to `dispatcher`.
  // Errors: AlreadyExists when a name is taken.
  Status RegisterOps(server::ProtocolDispatcher& dispatcher);

  // Ends every subscription and joins its pump. Idempotent.
  void Stop();

  // Subscriptions open now (for tests and metrics).
  size_t open() const;

  struct Pump;

 private:
  Result<nlohmann::json> Subscribe(const nlohmann::json& args, server::Connection& connection);
  Result<nlohmann::json> Unsubscribe(const nlohmann::json& args, server::Connection& connection);
  void Reap() REQUIRES(mu_);  // joins pumps that ended

  EventStore& store_;
  const EventSubscriptionLimits limits_;
  mutable Mutex mu_;
  uint64_t next_id_ GUARDED_BY(mu_) = 1;
  std::map<uint64_t, std::unique_ptr<Pump>> pumps_ GUARDED_BY(mu_);  // by subscription id
};

}  // namespace reef::events::http
