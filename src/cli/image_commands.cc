// The image command table and its handlers (see image_commands.h). Human output lives in
// output.cc; this file builds requests and decides what to print.
#include "cli/image_commands.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "cli/output.h"
#include "client/json_fields.h"

namespace reef::cli {

using json = nlohmann::json;
using client::ArrayField;
using client::BoolField;
using client::StringField;
using client::UnsignedField;

namespace {

// Largest source file `write` sends (the server's limit on source text).
constexpr size_t kMaxSourceBytes = 1u << 20;
// Fewest hex characters `write --expected` accepts as a prefix of a source id.
constexpr size_t kMinIdPrefix = 8;
// Pages `logs` reads at most before it stops (1,000 entries each).
constexpr int kMaxLogPages = 1000;
// How often `logs -f` looks at the interrupt flag while no event arrives.
constexpr std::chrono::milliseconds kFollowPoll{100};

Result<json> Call(Session& session, std::string_view op, json args) {
  return session.client->Call(op, std::move(args), session.timeout);
}

void PrintJson(const json& value) {
  PrintLine(value.dump(-1, ' ', false, json::error_handler_t::replace));
}

// Prints the result as JSON (--json) or as the given human text.
void PrintResult(const Session& session, const json& result, const std::string& human) {
  if (session.json_output) {
    PrintJson(result);
  } else if (!human.empty()) {
    PrintLine(human);
  }
}

Result<std::string> Ref(const Session& session, const std::string& text) {
  return client::ResolveRef(text, session.bindings);
}

Result<uint64_t> Count(const std::string& text, std::string_view what, uint64_t min, uint64_t max) {
  uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || value < min || value > max) {
    return Status::InvalidArgument(
        fmt::format("{} must be a whole number from {} to {}, not '{}'", what, min, max, text));
  }
  return value;
}

void Remember(Session& session, const json& result) {
  if (result.is_object() && result.contains("path") && result["path"].is_string() &&
      result.contains("source_id") && result["source_id"].is_string()) {
    session.source_ids[result["path"].get<std::string>()] = result["source_id"].get<std::string>();
  }
}

// ------------------------------------------------------------------ actors

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
constexpr char kStop[] = "stop";
constexpr char kKill[] = "kill";
constexpr char kRestart[] = "restart";
constexpr char kPause[] = "pause";
constexpr char kResume[] = "resume";

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

// ------------------------------------------------------------------ logs

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

// ------------------------------------------------------------------ sources

Status RunSources(Session& session, const Invocation&) {
  REEF_ASSIGN_OR_RETURN(json result, Call(session, "sources", json::object()));
  for (const json& source : ArrayField(result, "sources")) Remember(session, source);
  PrintResult(session, result, FormatSources(result));
  return Status::Ok();
}

Status RunRead(Session& session, const Invocation& invocation) {
  json args = {{"path", invocation.args.at(0)}};
  if (invocation.Has("revision")) args["revision"] = invocation.options.at("revision");
  REEF_ASSIGN_OR_RETURN(json result, Call(session, "read", std::move(args)));
  if (!invocation.Has("revision")) Remember(session, result);
  if (session.json_output) {
    PrintJson(result);
  } else {
    // Byte for byte: `reef read x > f` gives back what was written. Only the REPL ends an
    // unterminated last line, so its prompt starts on a line of its own.
    std::string text = StringField(result, "text");
    std::fwrite(text.data(), 1, text.size(), stdout);
    if (session.repl && !text.empty() && text.back() != '\n') std::fputc('\n', stdout);
    std::fflush(stdout);
  }
  return Status::Ok();
}

Result<std::string> ReadSourceFile(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    return Status::NotFound(fmt::format("cannot open '{}': {}", file, std::strerror(errno)));
  }
  std::string text;
  char buffer[64 * 1024];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    text.append(buffer, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxSourceBytes) {
      return Status::LimitExceeded(
          fmt::format("'{}' is larger than {} bytes, the largest source text the server stores",
                      file, kMaxSourceBytes));
    }
  }
  if (in.bad()) return Status::Unavailable(fmt::format("reading '{}' failed", file));
  return text;
}

// The full source id `--expected TEXT` names: a 64-hex id as given, or the current working
// source id of `path` when TEXT is a prefix of it of at least kMinIdPrefix lowercase hex
// characters (the 12-character ids the CLI prints). Errors: Conflict naming the current short
// id when the prefix does not match it; NotFound when `path` has no working source;
// InvalidArgument for text that is neither.
Result<std::string> ExpectedSourceId(Session& session, const std::string& path,
                                     const std::string& text) {
  constexpr size_t kIdLength = 64;
  bool hex = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  });
  if (hex && text.size() == kIdLength) return text;
  if (!hex || text.size() < kMinIdPrefix || text.size() > kIdLength) {
    return Status::InvalidArgument(fmt::format(
        "--expected '{}' is not a source id: give the 64 lowercase hex characters or a prefix of "
        "at least {} of them",
        text, kMinIdPrefix));
  }
  REEF_ASSIGN_OR_RETURN(json result, Call(session, "sources", json::object()));
  for (const json& source : ArrayField(result, "sources")) {
    if (StringField(source, "path") != path) continue;
    std::string current = StringField(source, "source_id");
    if (current.size() == kIdLength && current.starts_with(text)) return current;
    return Status::Conflict(fmt::format(
        "{} changed: its working source is now {}, not --expected {}; read it again and "
        "merge before writing",
        path, ShortId(current), text));
  }
  return Status::NotFound(
      fmt::format("{} has no working source to match --expected {}; use --create", path, text));
}

Status RunWrite(Session& session, const Invocation& invocation) {
  const std::string& path = invocation.args.at(0);
  const std::string& file = invocation.args.at(1);
  std::string kind;
  if (file.ends_with(".c")) {
    kind = "c";
  } else if (file.ends_with(".wat")) {
    kind = "wat";
  } else {
    return Status::InvalidArgument(fmt::format(
        "cannot tell the language of '{}': the file name must end in .c or .wat", file));
  }
  if (invocation.Has("expected") && invocation.Has("create")) {
    return Status::InvalidArgument("give --expected ID or --create, not both");
  }
  REEF_ASSIGN_OR_RETURN(std::string text, ReadSourceFile(file));
  json expected;
  if (invocation.Has("expected")) {
    REEF_ASSIGN_OR_RETURN(expected,
                          ExpectedSourceId(session, path, invocation.options.at("expected")));
  } else if (!invocation.Has("create")) {
    if (auto seen = session.source_ids.find(path); seen != session.source_ids.end()) {
      expected = seen->second;
    } else {
      // Nothing seen yet: take the current id; a missing path is created.
      Result<json> current = Call(session, "read", {{"path", path}});
      if (current.ok()) {
        expected = StringField(*current, "source_id");
      } else if (current.status().code() != Code::kNotFound) {
        return current.status();
      }
    }
  }
  REEF_ASSIGN_OR_RETURN(
      json result,
      Call(session, "write",
           {{"path", path}, {"kind", kind}, {"text", std::move(text)}, {"expected", expected}}));
  Remember(session, result);
  PrintResult(session, result,
              fmt::format("wrote {} (source {})", path, ShortId(StringField(result, "source_id"))));
  return Status::Ok();
}

Status RunCommit(Session& session, const Invocation& invocation) {
  json args = {{"path", invocation.args.at(0)}};
  if (invocation.Has("message")) args["message"] = invocation.options.at("message");
  REEF_ASSIGN_OR_RETURN(json result, Call(session, "commit", std::move(args)));
  PrintResult(session, result,
              fmt::format("committed {} as revision {}", StringField(result, "path"),
                          StringField(result, "revision")));
  return Status::Ok();
}

Status RunHistory(Session& session, const Invocation& invocation) {
  REEF_ASSIGN_OR_RETURN(json result, Call(session, "history", {{"path", invocation.args.at(0)}}));
  PrintResult(session, result, FormatHistory(result));
  return Status::Ok();
}

Status RunRollback(Session& session, const Invocation& invocation) {
  REEF_ASSIGN_OR_RETURN(
      json result, Call(session, "rollback",
                        {{"path", invocation.args.at(0)}, {"revision", invocation.args.at(1)}}));
  Remember(session, result);
  PrintResult(
      session, result,
      fmt::format("{} restored from revision {} (source {}); not committed", invocation.args.at(0),
                  invocation.args.at(1), ShortId(StringField(result, "source_id"))));
  return Status::Ok();
}

// ------------------------------------------------------------------ the table

const Param kRefParam{"REF", ParamKind::kRef};
const Param kPathParam{"PATH", ParamKind::kPath};

std::vector<ImageCommand> BuildTable() {
  return {
      {"ps", "List the image's actors", {}, {}, RunPs},
      {"spawn",
       "Spawn an actor from the working source at PATH with initial state JSON",
       {kPathParam, {"JSON", ParamKind::kJson, Arity::kRequired, "STATE"}},
       {{"mailbox-capacity", 0, "N", "mailbox capacity in messages (server default if unset)"}},
       RunSpawn},
      {"send",
       "Queue message JSON for actor REF (host as sender)",
       {kRefParam, {"JSON", ParamKind::kJson, Arity::kRequired, "MESSAGE"}},
       {},
       RunSend},
      {"tick",
       "Run N scheduler ticks (default 1), BUDGET instructions per slice (default 32)",
       {{"N", ParamKind::kCount, Arity::kOptional},
        {"BUDGET", ParamKind::kCount, Arity::kOptional}},
       {},
       RunTick},
      {"inspect",
       "Show an actor's snapshot: status, state, mailbox, ...",
       {kRefParam},
       {},
       RunInspect},
      {"events",
       "Read lifecycle events (continues from this connection's cursor)",
       {{"REF", ParamKind::kRef, Arity::kVariadic}},
       {{"after", 0, "SEQ", "read from after this seq instead of the cursor"},
        {"limit", 0, "N", "at most N events (1..10000, default 1000)"}},
       RunEvents},
      {"stop",
       "Stop an actor gracefully (runs on_shutdown at the next ticks)",
       {kRefParam},
       {},
       RunLifecycle<kStop>},
      {"kill",
       "Stop an actor at once, dropping its invocation",
       {kRefParam},
       {},
       RunLifecycle<kKill>},
      {"restart",
       "Restart a stopped or failed actor (same ref, next incarnation)",
       {kRefParam},
       {},
       RunLifecycle<kRestart>},
      {"pause", "Keep an actor from being scheduled", {kRefParam}, {}, RunLifecycle<kPause>},
      {"resume", "Let a paused actor run again", {kRefParam}, {}, RunLifecycle<kResume>},
      {"reload",
       "Recompile the actor's working source; switch at its next handler boundary",
       {kRefParam},
       {},
       RunReload},
      {"become",
       "Switch the actor to the working source at PATH at its next handler boundary",
       {kRefParam, kPathParam},
       {},
       RunBecome},
      {"sources", "List working sources", {}, {}, RunSources},
      {"read",
       "Print the working source at PATH (or a revision of it)",
       {kPathParam},
       {{"revision", 'r', "R", "print this committed revision instead"}},
       RunRead},
      {"write",
       "Save FILE (.c or .wat) as the working source at PATH; refuses to overwrite others' work",
       {kPathParam, {"FILE", ParamKind::kFile}},
       {{"expected", 0, "ID", "the source id you last saw (default: the current one)"},
        {"create", 0, "", "PATH must not exist yet"}},
       RunWrite},
      {"commit",
       "Snapshot the working source at PATH as a new revision",
       {kPathParam},
       {{"message", 'm', "MSG", "revision message"}},
       RunCommit},
      {"history", "List the revisions of PATH, newest first", {kPathParam}, {}, RunHistory},
      {"rollback",
       "Restore REVISION as the working source at PATH (does not commit)",
       {kPathParam, {"REVISION", ParamKind::kWord}},
       {},
       RunRollback},
      {"logs",
       "Print retained actor logs; -f follows new entries until Ctrl+C",
       {{"REF", ParamKind::kRef, Arity::kVariadic}},
       {{"follow", 'f', "", "keep printing new entries until Ctrl+C"}},
       RunLogs},
      {"set-state",
       "Replace the state of a paused, stopped or failed actor",
       {kRefParam, {"JSON", ParamKind::kJson, Arity::kRequired, "STATE"}},
       {},
       RunSetState},
      {"set-messages",
       "Replace the mailbox of a paused, stopped or failed actor: {\"reserved\":[],\"queued\":[]}",
       {kRefParam, {"JSON", ParamKind::kJson, Arity::kRequired, "MESSAGES"}},
       {},
       RunSetMessages},
      {"log-level",
       "Set an actor's minimum log level (trace debug info warn error fatal)",
       {kRefParam, {"LEVEL", ParamKind::kWord}},
       {},
       RunLogLevel},
  };
}

}  // namespace

std::span<const ImageCommand> ImageCommands() {
  static const std::vector<ImageCommand> table = BuildTable();
  return table;
}

const ImageCommand* FindImageCommand(std::string_view name) {
  for (const ImageCommand& command : ImageCommands()) {
    if (command.name == name) return &command;
  }
  return nullptr;
}

std::string Usage(const ImageCommand& command) {
  std::string usage(command.name);
  for (const Option& option : command.options) {
    usage += option.short_name != 0 ? fmt::format(" [-{}", option.short_name)
                                    : fmt::format(" [--{}", option.name);
    if (!option.value_name.empty()) usage += fmt::format(" {}", option.value_name);
    usage += "]";
  }
  for (const Param& param : command.params) {
    switch (param.arity) {
      case Arity::kRequired:
        usage += fmt::format(" {}", param.name);
        break;
      case Arity::kOptional:
        usage += fmt::format(" [{}]", param.name);
        break;
      case Arity::kVariadic:
        usage += fmt::format(" [{}...]", param.name);
        break;
    }
  }
  return usage;
}

Result<Invocation> ParseReplArguments(const ImageCommand& command, std::string_view rest) {
  Invocation invocation;
  auto usage = [&](std::string_view problem) {
    return Status::InvalidArgument(fmt::format("{}; usage: {}", problem, Usage(command)));
  };
  size_t param = 0;
  while (true) {
    if (param < command.params.size() && command.params[param].kind == ParamKind::kJson) {
      std::string_view json_text = client::Trim(rest);
      if (json_text.empty()) return usage(fmt::format("{} is missing", command.params[param].name));
      invocation.args.emplace_back(json_text);
      ++param;
      rest = {};
      break;
    }
    REEF_ASSIGN_OR_RETURN(std::optional<std::string> word, client::NextWord(&rest));
    if (!word) break;
    if (word->size() > 1 && word->front() == '-' && !command.options.empty()) {
      const Option* found = nullptr;
      for (const Option& option : command.options) {
        if (*word == fmt::format("--{}", option.name) ||
            (option.short_name != 0 && *word == fmt::format("-{}", option.short_name))) {
          found = &option;
        }
      }
      if (found == nullptr) return usage(fmt::format("unknown option '{}'", *word));
      std::string value;
      if (!found->value_name.empty()) {
        REEF_ASSIGN_OR_RETURN(std::optional<std::string> next, client::NextWord(&rest));
        if (!next) return usage(fmt::format("{} needs a value", *word));
        value = std::move(*next);
      }
      invocation.options[std::string(found->name)] = std::move(value);
      continue;
    }
    if (param >= command.params.size()) {
      return usage(fmt::format("unexpected argument '{}'", *word));
    }
    invocation.args.push_back(std::move(*word));
    if (command.params[param].arity != Arity::kVariadic) ++param;
  }
  for (size_t i = param; i < command.params.size(); ++i) {
    if (command.params[i].arity == Arity::kRequired) {
      return usage(fmt::format("{} is missing", command.params[i].name));
    }
  }
  if (!client::Trim(rest).empty()) {
    return usage(fmt::format("unexpected '{}'", client::Trim(rest)));
  }
  return invocation;
}

void PrintError(const Status& status) {
  std::fflush(stdout);
  // A refused token reads as the server's own code, not as a failed precondition.
  fmt::print(stderr, "error: {}\n",
             client::IsUnauthenticated(status) ? status.message() : status.ToString());
  std::fflush(stderr);
}

int Fail(const Status& status) {
  PrintError(status);
  return 1;
}

void PrintLine(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

Status RunCommand(const ImageCommand& command, Session& session, const Invocation& invocation) {
  try {
    return command.run(session, invocation);
  } catch (const json::exception& e) {
    // The handlers read responses through client/json_fields.h; this is the last line of
    // defence should one still meet a shape it did not expect.
    return Status::Internal(
        fmt::format("{}: the server's response was malformed: {}", command.name, e.what()));
  }
}

std::string ConnectAddress(std::string_view flag) {
  if (!flag.empty()) return std::string(flag);
  const char* env = std::getenv("REEF_CONNECT");
  if (env != nullptr && *env != '\0') return env;
  return std::string(client::kDefaultAddress);
}

Result<std::unique_ptr<client::Client>> ConnectClient(const std::string& address,
                                                      const std::string& auth_token) {
  client::ClientOptions options;
  options.address = address;
  if (!auth_token.empty()) options.auth_token = auth_token;
  return client::Client::Connect(std::move(options));
}

}  // namespace reef::cli
