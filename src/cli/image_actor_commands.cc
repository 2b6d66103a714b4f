// Image commands on actors (rows of image_commands.cc's table): ps, spawn, send, tick,
// inspect, events, the lifecycle operations (stop, kill, restart, pause, resume), reload,
// become, set-state, set-messages and log-level. Each builds its request, calls the server and
// prints the result (human text from output.cc, or the JSON with --json).
//
// Thread ownership: main thread only.
#include <fmt/format.h>

#include <algorithm>

#include "cli/detail/image_handlers.h"
#include "cli/output.h"
#include "client/json_fields.h"

namespace reef::cli::detail {

using json = nlohmann::json;
using client::StringField;

Status RunPs(Session& session, const Invocation&) {
  REEF_ASSIGN_OR_RETURN(json result, Call(session, "ps", json::object()));
  PrintResult(session, result, FormatPs(result));
  return Status::Ok();
}

Status RunSpawn(Session& session, const Invocation& invocation) {
  REEF_ASSIGN_OR_RETURN(
      json state, client::ParseJsonArgument(invocation.args.at(1), "STATE", session.bindings));
  json args = {{"path", invocation.args.at(0)}, {"state", std::move(state)}};
  if (invocation.Has("mailbox-capacity")) {
    REEF_ASSIGN_OR_RETURN(uint64_t capacity, Count(invocation.options.at("mailbox-capacity"),
                                                   "--mailbox-capacity", 1, 1u << 30));
    args["mailbox_capacity"] = capacity;
  }
  REEF_ASSIGN_OR_RETURN(json result, Call(session, "spawn", std::move(args)));
  std::string actor = StringField(result, "actor");
  if (actor.starts_with('@')) actor.erase(0, 1);
  std::string human = "@" + actor;
  if (!session.let_name.empty()) {
    std::string& bound = session.bindings[session.let_name];
    human = session.let_name + " = @" + actor;
    // Rebinding is allowed, but say so: the old actor lives on without its name.
    if (!bound.empty() && bound != actor) {
      human += fmt::format(" ({} was @{})", session.let_name, bound);
    }
    bound = actor;
  }
  PrintResult(session, result, human);
  return Status::Ok();
}

Status RunSend(Session& session, const Invocation& invocation) {
  REEF_ASSIGN_OR_RETURN(std::string actor, Ref(session, invocation.args.at(0)));
  REEF_ASSIGN_OR_RETURN(
      json message, client::ParseJsonArgument(invocation.args.at(1), "MESSAGE", session.bindings));
  REEF_ASSIGN_OR_RETURN(json result,
                        Call(session, "send", {{"actor", actor}, {"message", std::move(message)}}));
  PrintResult(session, result, "message queued");
  return Status::Ok();
}

Status RunTick(Session& session, const Invocation& invocation) {
  json args = json::object();
  if (invocation.args.size() > 0) {
    REEF_ASSIGN_OR_RETURN(args["count"], Count(invocation.args[0], "N (ticks)", 1, 100'000));
  }
  if (invocation.args.size() > 1) {
    REEF_ASSIGN_OR_RETURN(args["budget"],
                          Count(invocation.args[1], "BUDGET (instructions)", 0, UINT32_MAX));
  }
  REEF_ASSIGN_OR_RETURN(json result, Call(session, "tick", std::move(args)));
  PrintResult(session, result, FormatTick(result));
  return Status::Ok();
}

Status RunInspect(Session& session, const Invocation& invocation) {
  REEF_ASSIGN_OR_RETURN(std::string actor, Ref(session, invocation.args.at(0)));
  REEF_ASSIGN_OR_RETURN(json result, Call(session, "inspect", {{"actor", actor}}));
  PrintResult(session, result, FormatSnapshot(result));
  return Status::Ok();
}

Status RunEvents(Session& session, const Invocation& invocation) {
  json args = json::object();
  if (invocation.Has("after")) {
    REEF_ASSIGN_OR_RETURN(args["after"],
                          Count(invocation.options.at("after"), "--after", 0, UINT64_MAX));
  }
  if (invocation.Has("limit")) {
    REEF_ASSIGN_OR_RETURN(args["limit"],
                          Count(invocation.options.at("limit"), "--limit", 1, 10'000));
  }
  if (!invocation.args.empty()) {
    json actors = json::array();
    for (const std::string& text : invocation.args) {
      REEF_ASSIGN_OR_RETURN(std::string actor, Ref(session, text));
      actors.push_back(actor);
    }
    args["actors"] = std::move(actors);
  }
  REEF_ASSIGN_OR_RETURN(json result, Call(session, "events", std::move(args)));
  PrintResult(session, result, FormatEvents(result, session.repl));
  return Status::Ok();
}

template <const char* kOp>
Status RunLifecycle(Session& session, const Invocation& invocation) {
  REEF_ASSIGN_OR_RETURN(std::string actor, Ref(session, invocation.args.at(0)));
  REEF_ASSIGN_OR_RETURN(json result, Call(session, kOp, {{"actor", actor}}));
  PrintResult(session, result, FormatLifecycle(result));
  return Status::Ok();
}
template Status RunLifecycle<kStop>(Session&, const Invocation&);
template Status RunLifecycle<kKill>(Session&, const Invocation&);
template Status RunLifecycle<kRestart>(Session&, const Invocation&);
template Status RunLifecycle<kPause>(Session&, const Invocation&);
template Status RunLifecycle<kResume>(Session&, const Invocation&);

Status RunRm(Session& session, const Invocation& invocation) {
  REEF_ASSIGN_OR_RETURN(std::string actor, Ref(session, invocation.args.at(0)));
  REEF_ASSIGN_OR_RETURN(json result, Call(session, "rm", {{"actor", actor}}));
  PrintResult(session, result, FormatRemoved(result));
  return Status::Ok();
}

Status RunReload(Session& session, const Invocation& invocation) {
  REEF_ASSIGN_OR_RETURN(std::string actor, Ref(session, invocation.args.at(0)));
  REEF_ASSIGN_OR_RETURN(json result, Call(session, "reload", {{"actor", actor}}));
  PrintResult(session, result, FormatPendingInstall(result));
  return Status::Ok();
}

Status RunBecome(Session& session, const Invocation& invocation) {
  REEF_ASSIGN_OR_RETURN(std::string actor, Ref(session, invocation.args.at(0)));
  REEF_ASSIGN_OR_RETURN(
      json result, Call(session, "become", {{"actor", actor}, {"path", invocation.args.at(1)}}));
  PrintResult(session, result, FormatPendingInstall(result));
  return Status::Ok();
}

Status RunSetState(Session& session, const Invocation& invocation) {
  REEF_ASSIGN_OR_RETURN(std::string actor, Ref(session, invocation.args.at(0)));
  REEF_ASSIGN_OR_RETURN(
      json state, client::ParseJsonArgument(invocation.args.at(1), "STATE", session.bindings));
  REEF_ASSIGN_OR_RETURN(
      json result, Call(session, "set-state", {{"actor", actor}, {"state", std::move(state)}}));
  PrintResult(session, result, fmt::format("@{}: state replaced", actor));
  return Status::Ok();
}

Status RunSetMessages(Session& session, const Invocation& invocation) {
  REEF_ASSIGN_OR_RETURN(std::string actor, Ref(session, invocation.args.at(0)));
  REEF_ASSIGN_OR_RETURN(json messages, client::ParseJsonArgument(invocation.args.at(1), "MESSAGES",
                                                                 session.bindings));
  const auto shape_error = Status::InvalidArgument(
      "MESSAGES must be {\"reserved\": [at most one message], \"queued\": [messages...]}");
  if (!messages.is_object()) return shape_error;
  for (const auto& [key, value] : messages.items()) {
    if ((key != "reserved" && key != "queued") || !value.is_array()) return shape_error;
  }
  json reserved = messages.value("reserved", json::array());
  json queued = messages.value("queued", json::array());
  if (reserved.size() > 1) return shape_error;
  size_t reserved_count = reserved.size();
  size_t queued_count = queued.size();
  REEF_ASSIGN_OR_RETURN(
      json result,
      Call(session, "set-messages",
           {{"actor", actor}, {"reserved", std::move(reserved)}, {"queued", std::move(queued)}}));
  PrintResult(session, result,
              fmt::format("@{}: messages replaced ({} reserved, {} queued)", actor, reserved_count,
                          queued_count));
  return Status::Ok();
}

Status RunLogLevel(Session& session, const Invocation& invocation) {
  REEF_ASSIGN_OR_RETURN(std::string actor, Ref(session, invocation.args.at(0)));
  const std::string& level = invocation.args.at(1);
  static constexpr std::string_view kLevels[] = {"trace", "debug", "info",
                                                 "warn",  "error", "fatal"};
  if (std::find(std::begin(kLevels), std::end(kLevels), level) == std::end(kLevels)) {
    return Status::InvalidArgument(
        fmt::format("log level '{}' is not one of trace, debug, info, warn, error, fatal", level));
  }
  REEF_ASSIGN_OR_RETURN(json result,
                        Call(session, "log-level", {{"actor", actor}, {"level", level}}));
  PrintResult(session, result, fmt::format("@{}: log level {}", actor, level));
  return Status::Ok();
}

}  // namespace reef::cli::detail
