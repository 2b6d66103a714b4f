#include "actor/image_record.h"

#include <fmt/format.h>

#include <algorithm>

#include "actor/runtime_types.h"
#include "core/frame.h"

namespace reef::actor {

namespace {

// ---- writing --------------------------------------------------------------------------------

void PutBytes(std::string& out, std::string_view bytes) {
  PutLe<uint32_t>(out, static_cast<uint32_t>(bytes.size()));
  out.append(bytes);
}

void PutCbor(std::string& out, const CborValue& value) {
  auto bytes = value.bytes();
  PutBytes(out, {reinterpret_cast<const char*>(bytes.data()), bytes.size()});
}

void PutRef(std::string& out, const ActorRef& ref) {
  out.append(ref.str());
}

void PutOptionalRef(std::string& out, const std::optional<ActorRef>& ref) {
  out.push_back(ref ? 1 : 0);
  if (ref) PutRef(out, *ref);
}

void PutOptionalBytes(std::string& out, const std::optional<std::string>& bytes) {
  out.push_back(bytes ? 1 : 0);
  if (bytes) PutBytes(out, *bytes);
}

void PutEnvelope(std::string& out, const Envelope& envelope) {
  PutOptionalRef(out, envelope.sender);
  PutCbor(out, envelope.message);
}

void Begin(std::string* out, ImageRecordKind kind, const ActorRef& ref) {
  out->clear();
  out->push_back(static_cast<char>(kind));
  PutRef(*out, ref);
}

// ---- reading --------------------------------------------------------------------------------

// Reads a record front to back; every read checks the bytes left. The first failure sticks.
class Reader {
 public:
  Reader(std::string_view bytes, const ValueLimits& limits) : rest_(bytes), limits_(limits) {}

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  bool done() const { return rest_.empty(); }

  std::string_view Take(size_t n, std::string_view what) {
    if (!ok()) return {};
    if (rest_.size() < n) {
      Fail(fmt::format("{} runs past the end of the record", what));
      return {};
    }
    std::string_view taken = rest_.substr(0, n);
    rest_.remove_prefix(n);
    return taken;
  }
  template <typename T>
  T Le(std::string_view what) {
    std::string_view bytes = Take(sizeof(T), what);
    return ok() ? GetLe<T>(reinterpret_cast<const uint8_t*>(bytes.data())) : T{};
  }
  bool Flag(std::string_view what) {
    uint8_t flag = Le<uint8_t>(what);
    if (flag > 1) Fail(fmt::format("{} is {}, not 0 or 1", what, flag));
    return flag == 1;
  }
  std::string_view Bytes(std::string_view what) { return Take(Le<uint32_t>(what), what); }
  std::optional<std::string> OptionalBytes(std::string_view what) {
    if (!Flag(what)) return std::nullopt;
    return std::string(Bytes(what));
  }
  ActorRef Ref(std::string_view what) {
    std::string_view text = Take(kNanoIdLength, what);
    if (!ok()) return Placeholder();
    auto ref = ActorRef::Parse(text);
    if (!ref.ok()) {
      Fail(fmt::format("{}: {}", what, ref.status().message()));
      return Placeholder();
    }
    return *ref;
  }
  std::optional<ActorRef> OptionalRef(std::string_view what) {
    if (!Flag(what)) return std::nullopt;
    return Ref(what);
  }
  CborValue Cbor(std::string_view what) {
    std::string_view bytes = Bytes(what);
    if (!ok()) return CborValue();
    auto value = CborValue::FromBytes(
        {reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, limits_);
    if (!value.ok()) {
      Fail(fmt::format("{}: {}", what, value.status().message()));
      return CborValue();
    }
    return std::move(*value);
  }
  Envelope TakeEnvelope(std::string_view what) {
    std::optional<ActorRef> sender = OptionalRef(what);
    return Envelope{sender, Cbor(what)};
  }
  template <typename E>
  E Enum(std::string_view what, uint8_t last) {
    uint8_t raw = Le<uint8_t>(what);
    if (raw > last) Fail(fmt::format("{} {} is out of range", what, raw));
    return static_cast<E>(ok() ? raw : 0);
  }
  void Fail(std::string why) {
    if (ok()) error_ = std::move(why);
  }

 private:
  // A syntactically valid ref to return after a failure (never used: the record is refused).
  static ActorRef Placeholder() { return *ActorRef::Parse("AAAAAAAAAAAAAAAAAAAAA"); }

  std::string_view rest_;
  const ValueLimits& limits_;
  std::string error_;
};

constexpr uint8_t kLastStatus = static_cast<uint8_t>(ActorStatus::kFailed);
constexpr uint8_t kLastLevel = static_cast<uint8_t>(LogLevel::kFatal);

ActorRecord ReadHeader(Reader& in, const ActorRef& ref) {
  ActorRecord a{ref};
  a.implementation_id = std::string(in.Bytes("implementation id"));
  a.pending_install = in.OptionalBytes("pending install");
  a.incarnation = in.Le<uint32_t>("incarnation");
  a.status = in.Enum<ActorStatus>("status", kLastStatus);
  if (in.Flag("paused from")) a.paused_from = in.Enum<ActorStatus>("paused from", kLastStatus);
  a.stopping = in.Flag("stopping");
  a.failure = in.OptionalBytes("failure");
  a.state = in.Cbor("state");
  if (in.Flag("reset state")) a.reset_state = in.Cbor("reset state");
  a.mailbox_capacity = in.Le<uint32_t>("mailbox capacity");
  a.log_level = in.Enum<LogLevel>("log level", kLastLevel);
  a.reserved = in.Flag("reserved");
  if (in.ok() && !in.done()) a.tag = std::string(in.Bytes("tag"));  // absent: none
  if (a.tag.size() > kMaxTagBytes) in.Fail(fmt::format("a tag of {} bytes", a.tag.size()));
  return a;
}

}  // namespace

void EncodeImplementationRecord(const ImplementationRecord& implementation, std::string* out) {
  out->clear();
  out->push_back(static_cast<char>(ImageRecordKind::kImplementation));
  PutBytes(*out, implementation.id);
  PutBytes(*out, implementation.label);
  PutBytes(*out, implementation.handler);
  PutBytes(*out, implementation.origin);
  PutBytes(*out,
           {reinterpret_cast<const char*>(implementation.wasm.data()), implementation.wasm.size()});
}

void EncodeImplementationRecord(const Implementation& implementation, std::string* out) {
  auto wasm = implementation.module->bytes();
  EncodeImplementationRecord(
      ImplementationRecord{implementation.id, implementation.label, implementation.handler,
                           implementation.origin.empty() ? ModuleOrigin(*implementation.module)
                                                         : implementation.origin,
                           std::vector<uint8_t>(wasm.begin(), wasm.end())},
      out);
}

void EncodeActorRecord(const ActorRecord& a, bool spawned, bool dropped_first, std::string* out) {
  Begin(out, ImageRecordKind::kActor, a.ref);
  out->push_back(static_cast<char>((spawned ? 1 : 0) | (dropped_first ? 2 : 0)));
  PutBytes(*out, a.implementation_id);
  PutOptionalBytes(*out, a.pending_install);
  PutLe<uint32_t>(*out, a.incarnation);
  out->push_back(static_cast<char>(a.status));
  out->push_back(a.paused_from ? 1 : 0);
  if (a.paused_from) out->push_back(static_cast<char>(*a.paused_from));
  out->push_back(a.stopping ? 1 : 0);
  PutOptionalBytes(*out, a.failure);
  PutCbor(*out, a.state);
  out->push_back(a.reset_state ? 1 : 0);
  if (a.reset_state) PutCbor(*out, *a.reset_state);
  PutLe<uint32_t>(*out, a.mailbox_capacity);
  out->push_back(static_cast<char>(a.log_level));
  out->push_back(a.reserved && !spawned ? 1 : 0);
  if (!a.tag.empty()) PutBytes(*out, a.tag);
}

void EncodeMessagesRecord(const ActorRef& ref, bool reserved, const Envelope* first,
                          const detail::LazyDeque<Envelope>& rest, std::string* out) {
  Begin(out, ImageRecordKind::kMessages, ref);
  out->push_back(reserved ? 1 : 0);
  PutLe<uint32_t>(*out, static_cast<uint32_t>(rest.size() + (first != nullptr ? 1 : 0)));
  if (first != nullptr) PutEnvelope(*out, *first);
  for (const Envelope& envelope : rest) PutEnvelope(*out, envelope);
}

void EncodeCommitRecord(const ActorRef& ref, const CborValue& state, bool acknowledges,
                        bool stopped, bool routed, const std::vector<RecordedSend>& sends,
                        std::string* out) {
  Begin(out, routed ? ImageRecordKind::kRoutedCommit : ImageRecordKind::kCommit, ref);
  PutCbor(*out, state);
  out->push_back(static_cast<char>((acknowledges ? 1 : 0) | (stopped ? 2 : 0)));
  PutLe<uint32_t>(*out, static_cast<uint32_t>(sends.size()));
  for (const RecordedSend& send : sends) {
    PutRef(*out, *send.target);
    if (routed) PutLe<uint64_t>(*out, send.origin);
    PutOptionalRef(*out, *send.sender);
    PutCbor(*out, *send.message);
  }
}

void EncodeArrivalRecord(const ActorRef& ref, uint64_t origin, std::string* out) {
  Begin(out, ImageRecordKind::kArrival, ref);
  PutLe<uint64_t>(*out, origin);
}

void EncodeInFlightRecord(const ActorRef& target, uint64_t origin, const Envelope& envelope,
                          std::string* out) {
  Begin(out, ImageRecordKind::kInFlight, target);
  PutLe<uint64_t>(*out, origin);
  PutEnvelope(*out, envelope);
}

void EncodeDeliveryRecord(const ActorRef& ref, const Envelope& envelope, std::string* out) {
  Begin(out, ImageRecordKind::kDelivery, ref);
  PutEnvelope(*out, envelope);
}

void EncodeRemovalRecord(const ActorRef& ref, std::string* out) {
  Begin(out, ImageRecordKind::kRemoval, ref);
}

Status RecoveredImage::Apply(std::string_view record) {
  Reader in(record, limits_);
  auto kind =
      in.Enum<ImageRecordKind>("record kind", static_cast<uint8_t>(ImageRecordKind::kInFlight));
  if (in.ok() && kind == ImageRecordKind{}) in.Fail("record kind 0 is not a record");
  auto refuse = [&](std::string why) {
    return Status::DataLoss(fmt::format("image record: {}", why));
  };
  if (!in.ok()) return refuse(in.error());

  if (kind == ImageRecordKind::kImplementation) {
    ImplementationRecord impl;
    impl.id = std::string(in.Bytes("implementation id"));
    impl.label = std::string(in.Bytes("label"));
    impl.handler = std::string(in.Bytes("handler"));
    impl.origin = std::string(in.Bytes("origin"));
    std::string_view wasm = in.Bytes("module bytes");
    impl.wasm.assign(wasm.begin(), wasm.end());
    if (in.ok() && !in.done()) in.Fail("bytes follow the implementation record");
    if (!in.ok()) return refuse(in.error());
    std::string id = impl.id;
    implementations_.insert_or_assign(std::move(id), std::move(impl));
    return Status::Ok();
  }

  const ActorRef ref = in.Ref("actor ref");
  if (!in.ok()) return refuse(in.error());
  auto it = actors_.find(ref);
  auto known = [&]() -> Status {
    if (it == actors_.end()) return refuse(fmt::format("@{} was never spawned", ref.str()));
    return Status::Ok();
  };
  auto check_implementation = [&](const std::string& id) -> Status {
    if (implementations_.contains(id)) return Status::Ok();
    return refuse(
        fmt::format("@{} names implementation {}, which was never recorded", ref.str(), id));
  };

  switch (kind) {
    case ImageRecordKind::kActor: {
      uint8_t flags = in.Le<uint8_t>("actor record flags");
      if (flags > 3) in.Fail(fmt::format("actor record flags {} are out of range", flags));
      const bool spawned = (flags & 1) != 0, dropped_first = (flags & 2) != 0;
      ActorRecord header = ReadHeader(in, ref);
      if (in.ok() && !in.done()) in.Fail("bytes follow the actor record");
      if (!in.ok()) return refuse(fmt::format("@{}: {}", ref.str(), in.error()));
      REEF_RETURN_IF_ERROR(check_implementation(header.implementation_id));
      if (header.pending_install)
        REEF_RETURN_IF_ERROR(check_implementation(*header.pending_install));
      if (spawned) {
        if (it != actors_.end()) return refuse(fmt::format("@{} is spawned twice", ref.str()));
        actors_.emplace(ref, std::move(header));
        return Status::Ok();
      }
      REEF_RETURN_IF_ERROR(known());
      const size_t had = it->second.messages.size();
      if (dropped_first && had == 0) {
        return refuse(fmt::format("@{} drops a message but has none", ref.str()));
      }
      if (header.reserved && had == (dropped_first ? 1u : 0u)) {
        return refuse(fmt::format("@{} reserves a message but has none", ref.str()));
      }
      header.messages = std::move(it->second.messages);
      if (dropped_first) header.messages.pop_front();
      it->second = std::move(header);
      return Status::Ok();
    }
    case ImageRecordKind::kMessages: {
      REEF_RETURN_IF_ERROR(known());
      bool reserved = in.Flag("reserved");
      uint32_t count = in.Le<uint32_t>("message count");
      detail::LazyDeque<Envelope> messages;
      for (uint32_t i = 0; i < count && in.ok(); ++i)
        messages.push_back(in.TakeEnvelope("message"));
      if (in.ok() && !in.done()) in.Fail("bytes follow the messages record");
      if (in.ok() && reserved && messages.empty()) in.Fail("reserves a message but has none");
      if (!in.ok()) return refuse(fmt::format("@{}: {}", ref.str(), in.error()));
      it->second.reserved = reserved;
      it->second.messages = std::move(messages);
      return Status::Ok();
    }
    case ImageRecordKind::kCommit:
    case ImageRecordKind::kRoutedCommit: {
      REEF_RETURN_IF_ERROR(known());
      const bool routed = kind == ImageRecordKind::kRoutedCommit;
      CborValue state = in.Cbor("state");
      uint8_t flags = in.Le<uint8_t>("commit flags");
      if (flags > 3) in.Fail(fmt::format("commit flags {} are out of range", flags));
      uint32_t count = in.Le<uint32_t>("send count");
      struct Sent {
        ActorRef target;
        uint64_t origin;
        Envelope envelope;
      };
      std::vector<Sent> sends;
      for (uint32_t i = 0; i < count && in.ok(); ++i) {
        ActorRef target = in.Ref("send target");
        uint64_t origin = routed ? in.Le<uint64_t>("send origin") : 0;
        sends.push_back({target, origin, in.TakeEnvelope("send")});
      }
      if (in.ok() && !in.done()) in.Fail("bytes follow the commit record");
      if (!in.ok()) return refuse(fmt::format("@{}: {}", ref.str(), in.error()));
      const bool acknowledges = (flags & 1) != 0;
      ActorRecord& a = it->second;
      if (acknowledges && a.messages.empty()) {
        return refuse(fmt::format("@{} acknowledges a message but has none", ref.str()));
      }
      for (size_t i = 0; i < sends.size(); ++i) {
        const Sent& send = sends[i];
        if (!actors_.contains(send.target)) {
          return refuse(
              fmt::format("@{} sends to @{}, which does not exist", ref.str(), send.target.str()));
        }
        if (send.origin == 0) continue;
        bool repeated = in_flight_.contains(send.origin);
        for (size_t j = 0; j < i && !repeated; ++j) repeated = sends[j].origin == send.origin;
        if (repeated) {
          return refuse(fmt::format("@{} sends origin {}, which is in flight already", ref.str(),
                                    send.origin));
        }
      }
      a.state = std::move(state);
      if (acknowledges) {
        a.messages.pop_front();
        a.reserved = false;
      }
      a.status = (flags & 2) != 0 ? ActorStatus::kStopped : ActorStatus::kIdle;
      if ((flags & 2) != 0) a.stopping = false;
      for (Sent& send : sends) {
        if (send.origin == 0) {
          actors_.at(send.target).messages.push_back(std::move(send.envelope));
        } else {
          last_origin_ = std::max(last_origin_, send.origin);
          in_flight_.emplace(send.origin, InFlightMessage{send.target, std::move(send.envelope)});
        }
      }
      return Status::Ok();
    }
    case ImageRecordKind::kArrival: {
      REEF_RETURN_IF_ERROR(known());
      uint64_t origin = in.Le<uint64_t>("origin");
      if (in.ok() && !in.done()) in.Fail("bytes follow the arrival record");
      if (!in.ok()) return refuse(fmt::format("@{}: {}", ref.str(), in.error()));
      auto sent = in_flight_.find(origin);
      if (sent == in_flight_.end() || sent->second.target != ref) {
        return refuse(
            fmt::format("@{} receives origin {}, which is not in flight to it", ref.str(), origin));
      }
      it->second.messages.push_back(std::move(sent->second.envelope));
      in_flight_.erase(sent);
      return Status::Ok();
    }
    case ImageRecordKind::kInFlight: {
      REEF_RETURN_IF_ERROR(known());
      uint64_t origin = in.Le<uint64_t>("origin");
      Envelope envelope = in.TakeEnvelope("message");
      if (in.ok() && !in.done()) in.Fail("bytes follow the in-flight record");
      if (in.ok() && origin == 0) in.Fail("origin 0 is not in flight");
      if (!in.ok()) return refuse(fmt::format("@{}: {}", ref.str(), in.error()));
      if (!in_flight_.emplace(origin, InFlightMessage{ref, std::move(envelope)}).second) {
        return refuse(fmt::format("origin {} is in flight twice", origin));
      }
      last_origin_ = std::max(last_origin_, origin);
      return Status::Ok();
    }
    case ImageRecordKind::kDelivery: {
      REEF_RETURN_IF_ERROR(known());
      Envelope envelope = in.TakeEnvelope("message");
      if (in.ok() && !in.done()) in.Fail("bytes follow the delivery record");
      if (!in.ok()) return refuse(fmt::format("@{}: {}", ref.str(), in.error()));
      it->second.messages.push_back(std::move(envelope));
      return Status::Ok();
    }
    case ImageRecordKind::kRemoval:
      REEF_RETURN_IF_ERROR(known());
      if (!in.done()) return refuse(fmt::format("@{}: bytes follow the removal record", ref.str()));
      // Removal waits for every send on its way (Runtime::Remove): none can be in flight.
      for (const auto& [origin, sent] : in_flight_) {
        if (sent.target == ref) {
          return refuse(
              fmt::format("@{} is removed with message {} in flight to it", ref.str(), origin));
        }
      }
      actors_.erase(it);
      return Status::Ok();
    case ImageRecordKind::kImplementation:
      break;
  }
  return refuse(fmt::format("unknown record kind {}", static_cast<int>(kind)));
}

}  // namespace reef::actor
