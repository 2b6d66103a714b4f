// The image command table and what runs its rows (see image_commands.h): the one table of
// rows, usage lines, parsing a REPL line against a row, running a row's handler, errors and
// output lines, connecting; and the helpers every handler shares (detail/image_handlers.h).
// The handlers live in one file per command group: image_actor_commands.cc,
// image_log_commands.cc and image_source_commands.cc. Human output lives in output.cc.
#include "cli/image_commands.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>

#include "cli/detail/image_handlers.h"

namespace reef::cli {

using json = nlohmann::json;

// ------------------------------------------------------------------ the table

namespace detail {
namespace {

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
      {"rm",
       "Remove a stopped or failed actor for good (kill it first if it runs); drops its mailbox",
       {kRefParam},
       {},
       RunRm},
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
       "Save FILE (.c, .wat or .wasm) as the working source at PATH; refuses to overwrite others' "
       "work",
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
}  // namespace detail

// ------------------------------------------------------------------ running a row

std::span<const ImageCommand> ImageCommands() {
  static const std::vector<ImageCommand> table = detail::BuildTable();
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

// ------------------------------------------------------------------ what every handler shares

namespace detail {

Result<json> Call(Session& session, std::string_view op, json args) {
  return session.client->Call(op, std::move(args), session.timeout);
}

void PrintJson(const json& value) {
  PrintLine(value.dump(-1, ' ', false, json::error_handler_t::replace));
}

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

}  // namespace detail

}  // namespace reef::cli
