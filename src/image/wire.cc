// JSON shapes of the image's results and events (image/detail/wire.h).
#include "image/detail/wire.h"

#include <string_view>

#include "core/json.h"

namespace reef::image::detail {
namespace {

using json = nlohmann::json;

json RefJson(const std::optional<ActorRef>& ref) {
  return ref ? json(std::string(ref->str())) : json(nullptr);
}

json EnvelopeJson(const actor::Envelope& envelope) {
  return {{"sender", RefJson(envelope.sender)},
          {"message", ValueToJson(envelope.message.ToValue())}};
}

}  // namespace

json ImplementationJson(const std::string& id, const std::string& label) {
  return {{"id", id}, {"label", label}};
}

json LogEntryJson(const actor::LogEntry& entry) {
  return {{"seq", entry.seq},
          {"actor", std::string(entry.actor.str())},
          {"incarnation", entry.incarnation},
          {"level", std::string(actor::LogLevelName(entry.level))},
          {"message", entry.message},
          {"unix_ms", entry.unix_ms}};
}

json EventJson(const actor::LifecycleEvent& event) {
  return {{"seq", event.seq},
          {"kind", std::string(actor::LifecycleKindName(event.kind))},
          {"actor", std::string(event.actor.str())},
          {"incarnation", event.incarnation},
          {"detail", event.detail},
          {"unix_ms", event.unix_ms}};
}

json SnapshotJson(const actor::ActorSnapshot& s, const std::string& pending_label) {
  json queued = json::array();
  for (const actor::Envelope& envelope : s.queued) queued.push_back(EnvelopeJson(envelope));
  json telemetry = nullptr;
  if (s.telemetry) {
    telemetry = {{"instructions", s.telemetry->instructions},
                 {"call_depth", s.telemetry->call_depth},
                 {"function", s.telemetry->function},
                 {"offset", s.telemetry->offset}};
  }
  json awaiting = nullptr;
  if (s.awaiting) {
    awaiting = {{"call", std::string(s.awaiting->target.str())},
                {"waited_ms", s.awaiting->waited_ms},
                {"timeout_ms", s.awaiting->timeout_ms}};
  }
  return {
      {"actor", std::string(s.ref.str())},
      {"implementation", ImplementationJson(s.implementation_id, s.implementation_label)},
      {"incarnation", s.incarnation},
      {"status", std::string(actor::ActorStatusName(s.status))},
      {"paused_from",
       s.paused_from ? json(std::string(actor::ActorStatusName(*s.paused_from))) : json(nullptr)},
      {"state", ValueToJson(s.state)},
      {"reserved", s.reserved ? EnvelopeJson(*s.reserved) : json(nullptr)},
      {"queued", std::move(queued)},
      {"mailbox_capacity", s.mailbox_capacity},
      {"telemetry", std::move(telemetry)},
      {"awaiting", std::move(awaiting)},
      {"stopping", s.stopping},
      {"pending_install",
       s.pending_install ? ImplementationJson(*s.pending_install, pending_label) : json(nullptr)},
      {"failure", s.failure ? json(*s.failure) : json(nullptr)},
      {"log_level", std::string(actor::LogLevelName(s.log_level))},
      {"reactor", s.reactor},
      {"tier", std::string(wasm::TierName(s.tier))},
  };
}

json PsRowJson(const actor::ActorSnapshot& s) {
  return {{"actor", std::string(s.ref.str())},
          {"status", std::string(actor::ActorStatusName(s.status))},
          {"incarnation", s.incarnation},
          {"implementation", ImplementationJson(s.implementation_id, s.implementation_label)},
          {"queued", s.queued.size()},
          {"reactor", s.reactor},
          {"state", ValueToJson(s.state)}};
}

}  // namespace reef::image::detail
