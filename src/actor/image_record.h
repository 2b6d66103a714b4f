// The records of the durable image (issue 16; docs/operations.md "Durable image") and the
// image they rebuild when replayed in order (RecoveredImage).
//
// What a record says, one kind each (the first byte of every record):
//   implementation  an implementation's id, label, handler, origin and module bytes; written
//                   once, before the first record that names it
//   actor           an actor's header: implementation, incarnation, status, stopping, failure,
//                   committed state, log level, mailbox capacity, whether the first of its
//                   messages is reserved; written at spawn and whenever anything but a commit
//                   or a delivery changes an actor (lifecycle, repair, install, a failure)
//   messages        the whole mailbox of an actor, replaced (set-messages)
//   commit          a committed transition: the new state, whether it acknowledged its input
//                   (the first message), whether it ended a graceful stop, and its sends to
//                   actors of the same image, in order — one record, so all of it or none
//   delivery        one message added to the end of an actor's mailbox from outside a commit
//                   (a host send, a call's request)
//   removal         an actor removed for good
//   routed commit   a commit of an actor of a group spread over several reactors: each send
//                   has an origin number, 0 for one delivered within the commit (the target
//                   is on the committing reactor), else a number no other message in flight
//                   has; such a message is *in flight* until its arrival record
//   arrival         an in-flight message (by origin) added to the end of its target's mailbox,
//                   recorded by the target's reactor when it arrives there
//   in flight       (snapshots only) a message still in flight when the snapshot was made
//
// An actor's messages are one sequence, the reserved one (if any) first: taking the next
// input reserves the first message without changing the sequence, so it is not recorded; a
// commit that acknowledges drops the first message; restart and cancel put the reserved one
// back where it already is. A header's `reserved` says whether the first message is reserved
// at that point; after a crash an actor that was running retries its first message (spec 001's
// restart rule), so a reservation made since then need not be known.
//
// Encoding: little-endian, fixed widths, each string or value as a u32 length and its bytes;
// values are deterministic CBOR (core/cbor.h), checked against the value limits on replay.
//
// Thread ownership: plain values and pure functions; RecoveredImage is one thread's.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "actor/actor.h"
#include "actor/detail/lazy_deque.h"
#include "core/cbor.h"
#include "core/limits.h"
#include "core/status.h"

namespace reef::actor {

enum class ImageRecordKind : uint8_t {
  kImplementation = 1,
  kActor = 2,
  kMessages = 3,
  kCommit = 4,
  kDelivery = 5,
  kRemoval = 6,
  kRoutedCommit = 7,
  kArrival = 8,
  kInFlight = 9,
};

// What an implementation record holds: enough to rebuild the implementation without the
// compiler that made it.
struct ImplementationRecord {
  std::string id;  // the implementation id when it was recorded
  std::string label;
  std::string handler;
  std::string origin;         // ModuleOrigin's input of the id
  std::vector<uint8_t> wasm;  // the module's bytes
};

// The durable facts of one actor: what an actor record holds, plus its messages.
struct ActorRecord {
  ActorRef ref;
  std::string tag;  // SpawnOptions::tag (empty: none)
  std::string implementation_id;
  std::optional<std::string> pending_install;  // implementation id queued by reload/become
  uint32_t incarnation = 1;
  ActorStatus status = ActorStatus::kIdle;
  std::optional<ActorStatus> paused_from;
  bool stopping = false;
  std::optional<std::string> failure;
  CborValue state;
  std::optional<CborValue> reset_state;  // FailurePolicy::kReset's spawn state
  uint32_t mailbox_capacity = 0;         // messages (queued + reserved)
  LogLevel log_level = LogLevel::kInfo;
  bool reserved = false;  // messages.front() is the reserved input
  // The reserved message (if any) first, then the queue, oldest first. Allocates nothing while
  // empty: a restart of a million idle actors holds a million of these at once.
  detail::LazyDeque<Envelope> messages;
};

// Record encoders. `out` is cleared first.
void EncodeImplementationRecord(const Implementation& implementation, std::string* out);
void EncodeImplementationRecord(const ImplementationRecord& implementation, std::string* out);
// `spawned`: the record creates the actor (it must not exist; its messages start empty, so
// none is reserved whatever actor.reserved says).
// `dropped_first`: the actor's first message was dropped (a poisoned input, FailurePolicy::kReset)
// before the header applies. `actor.messages` is not written.
void EncodeActorRecord(const ActorRecord& actor, bool spawned, bool dropped_first,
                       std::string* out);
// Replaces `ref`'s messages (set-messages): `first` (null: none), then `rest`; `reserved` says
// whether the first of them is reserved.
void EncodeMessagesRecord(const ActorRef& ref, bool reserved, const Envelope* first,
                          const detail::LazyDeque<Envelope>& rest, std::string* out);
// `sends`: the transition's sends to actors of the same image, in order.
// Pointers into the caller's send list, valid until EncodeCommitRecord returns.
struct RecordedSend {
  const ActorRef* target;
  const std::optional<ActorRef>* sender;
  const CborValue* message;
  uint64_t origin = 0;  // routed commits: 0 = delivered within the commit, else in flight
};
// `routed`: a routed commit (each send's origin written), else a commit (every send delivered
// within it).
void EncodeCommitRecord(const ActorRef& ref, const CborValue& state, bool acknowledges,
                        bool stopped, bool routed, const std::vector<RecordedSend>& sends,
                        std::string* out);
void EncodeDeliveryRecord(const ActorRef& ref, const Envelope& envelope, std::string* out);
void EncodeRemovalRecord(const ActorRef& ref, std::string* out);
// The in-flight message `origin` reached `ref`'s mailbox.
void EncodeArrivalRecord(const ActorRef& ref, uint64_t origin, std::string* out);
void EncodeInFlightRecord(const ActorRef& target, uint64_t origin, const Envelope& envelope,
                          std::string* out);

// A message a routed commit sent that has not arrived yet.
struct InFlightMessage {
  ActorRef target;
  Envelope envelope;
};

// The image rebuilt from records applied in order.
class RecoveredImage {
 public:
  explicit RecoveredImage(ValueLimits limits) : limits_(limits) {}

  // Applies one record. Errors: DataLoss when it cannot be parsed, or contradicts what came
  // before (a commit or delivery for an unknown actor, an acknowledgement with no message, a
  // spawn of a ref that exists, a name of an unrecorded implementation, an origin in flight
  // twice, an arrival of a message not in flight); nothing changes then.
  Status Apply(std::string_view record);

  // Actors by ref, and every implementation recorded (also ones no actor uses any more).
  std::map<ActorRef, ActorRecord>& actors() { return actors_; }
  const std::map<ActorRef, ActorRecord>& actors() const { return actors_; }
  std::map<std::string, ImplementationRecord, std::less<>>& implementations() {
    return implementations_;
  }
  const std::map<std::string, ImplementationRecord, std::less<>>& implementations() const {
    return implementations_;
  }
  // Messages sent by routed commits and not arrived yet, by origin.
  const std::map<uint64_t, InFlightMessage>& in_flight() const { return in_flight_; }
  // The largest origin number any record applied so far used (0: none).
  uint64_t last_origin() const { return last_origin_; }
  const ValueLimits& limits() const { return limits_; }

 private:
  ValueLimits limits_;
  std::map<ActorRef, ActorRecord> actors_;
  std::map<uint64_t, InFlightMessage> in_flight_;
  uint64_t last_origin_ = 0;
  std::map<std::string, ImplementationRecord, std::less<>> implementations_;
};

}  // namespace reef::actor
