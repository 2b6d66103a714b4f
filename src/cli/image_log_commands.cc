// The `logs` image command (a row of image_commands.cc's table): prints the retained log
// entries of some or all actors in pages, and with -f subscribes first and then follows new
// entries until interrupted, so nothing is missed and nothing shows twice.
//
// Thread ownership: main thread only; `logs -f` watches Session::interrupted, which signal
// handlers set.
#include <fmt/format.h>

#include <chrono>
#include <optional>

#include "cli/detail/image_handlers.h"
#include "cli/output.h"
#include "client/json_fields.h"

namespace reef::cli::detail {

using json = nlohmann::json;
using client::ArrayField;
using client::BoolField;
using client::StringField;
using client::UnsignedField;

namespace {

// Pages `logs` reads at most before it stops (1,000 entries each).
constexpr int kMaxLogPages = 1000;
// How often `logs -f` looks at the interrupt flag while no event arrives.
constexpr std::chrono::milliseconds kFollowPoll{100};

Result<json> LogActors(const Session& session, const Invocation& invocation) {
  json actors = json::array();
  for (const std::string& text : invocation.args) {
    REEF_ASSIGN_OR_RETURN(std::string actor, Ref(session, text));
    actors.push_back(actor);
  }
  return actors;
}

void PrintLogEntry(const Session& session, const json& entry) {
  if (session.json_output) {
    PrintJson(entry);
  } else {
    PrintLine(FormatLogEntry(entry));
  }
}

// Prints the retained history, in pages, up to seq `until` (all of it when nullopt).
Status PrintLogHistory(Session& session, const json& actors, std::optional<uint64_t> until,
                       json* collected) {
  json args = {{"actors", actors}, {"limit", 1000}};
  for (int page = 0; page < kMaxLogPages; ++page) {
    REEF_ASSIGN_OR_RETURN(json result, Call(session, "logs", args));
    const json entries = ArrayField(result, "entries");
    for (const json& entry : entries) {
      if (until && UnsignedField(entry, "seq").value_or(0) > *until) return Status::Ok();
      if (collected != nullptr) {
        collected->push_back(entry);
      } else {
        PrintLogEntry(session, entry);
      }
    }
    std::optional<uint64_t> next_after = UnsignedField(result, "next_after");
    if (!BoolField(result, "more") || entries.empty() || !next_after) return Status::Ok();
    args["after"] = *next_after;
  }
  return Status::LimitExceeded(
      fmt::format("logs stopped after {} pages of 1,000 entries", kMaxLogPages));
}

}  // namespace

Status RunLogs(Session& session, const Invocation& invocation) {
  REEF_ASSIGN_OR_RETURN(json actors, LogActors(session, invocation));
  if (!invocation.Has("follow")) {
    json collected = json::array();
    REEF_RETURN_IF_ERROR(
        PrintLogHistory(session, actors, std::nullopt, session.json_output ? &collected : nullptr));
    if (session.json_output) PrintJson({{"entries", collected}});
    return Status::Ok();
  }
  // Subscribe first, then print the history up to the subscription point, then the live
  // entries: nothing is missed and nothing shows twice.
  REEF_ASSIGN_OR_RETURN(json subscribed,
                        Call(session, "subscribe", {{"topic", "logs"}, {"actors", actors}}));
  std::optional<uint64_t> until;
  until = UnsignedField(subscribed, "after");
  Status status = PrintLogHistory(session, actors, until, nullptr);
  while (status.ok() && (session.interrupted == nullptr || *session.interrupted == 0)) {
    Result<std::optional<client::ClientEvent>> event = session.client->NextEvent(kFollowPoll);
    if (!event.ok()) {
      status = event.status();
      break;
    }
    if (!event->has_value()) continue;
    const client::ClientEvent& e = **event;
    if (e.kind == "log") {
      if (until && UnsignedField(e.data, "seq").value_or(0) <= *until) continue;
      PrintLogEntry(session, e.data);
    } else if (e.kind == "subscription-failed") {
      status = Status::Unavailable(fmt::format("the log subscription failed: {}",
                                               StringField(e.data, "message", "no reason given")));
    }
  }
  Result<json> unsubscribed = Call(session, "unsubscribe", {{"topic", "logs"}});
  if (status.ok() && !unsubscribed.ok()) status = unsubscribed.status();
  return status;
}

}  // namespace reef::cli::detail
