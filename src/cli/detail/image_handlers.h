// Internals of the image command table (image_commands.h): the helpers every handler shares
// and the handlers the table's rows name, one file a command group. Not a public header.
//   image_commands.cc         the table, REPL parsing, running a row; the shared helpers
//   image_actor_commands.cc   actors: ps, spawn, send, tick, inspect, events, stop ... log-level
//   image_log_commands.cc     logs (-f follows them)
//   image_source_commands.cc  sources: sources, read, write, commit, history, rollback
//
// Thread ownership: main thread only (a Session holds one client::Client).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "cli/image_commands.h"
#include "core/status.h"

namespace reef::cli::detail {

// ---- What every handler shares (image_commands.cc) -------------------------------------

// The result of operation `op` called with `args` on the session's connection (waiting up to
// session.timeout). Errors: whatever the client or the server reports.
Result<nlohmann::json> Call(Session& session, std::string_view op, nlohmann::json args);
// Prints `value` as one line of compact JSON (invalid UTF-8 replaced).
void PrintJson(const nlohmann::json& value);
// Prints the result as JSON (--json) or as the given human text.
void PrintResult(const Session& session, const nlohmann::json& result, const std::string& human);
// The actor `text` names (client::ResolveRef, with the session's bindings).
Result<std::string> Ref(const Session& session, const std::string& text);
// `text` as a whole number from `min` to `max`. Errors: InvalidArgument naming `what`.
Result<uint64_t> Count(const std::string& text, std::string_view what, uint64_t min, uint64_t max);

// ---- Handlers (CommandRun) of the table's rows, by group ---------------------------------

// Actors (image_actor_commands.cc).
Status RunPs(Session& session, const Invocation& invocation);
Status RunSpawn(Session& session, const Invocation& invocation);
Status RunSend(Session& session, const Invocation& invocation);
Status RunTick(Session& session, const Invocation& invocation);
Status RunInspect(Session& session, const Invocation& invocation);
Status RunEvents(Session& session, const Invocation& invocation);
// The lifecycle operation `kOp` on one actor; instantiated for the five operations below.
template <const char* kOp>
Status RunLifecycle(Session& session, const Invocation& invocation);
inline constexpr char kStop[] = "stop";
inline constexpr char kKill[] = "kill";
inline constexpr char kRestart[] = "restart";
inline constexpr char kPause[] = "pause";
inline constexpr char kResume[] = "resume";
Status RunReload(Session& session, const Invocation& invocation);
// rm REF: removes a stopped or failed actor; prints "removed @REF (N message(s) dropped)".
Status RunRm(Session& session, const Invocation& invocation);
Status RunBecome(Session& session, const Invocation& invocation);
Status RunSetState(Session& session, const Invocation& invocation);
Status RunSetMessages(Session& session, const Invocation& invocation);
Status RunLogLevel(Session& session, const Invocation& invocation);

// Logs (image_log_commands.cc).
Status RunLogs(Session& session, const Invocation& invocation);

// Sources (image_source_commands.cc).
Status RunSources(Session& session, const Invocation& invocation);
Status RunRead(Session& session, const Invocation& invocation);
Status RunWrite(Session& session, const Invocation& invocation);
Status RunCommit(Session& session, const Invocation& invocation);
Status RunHistory(Session& session, const Invocation& invocation);
Status RunRollback(Session& session, const Invocation& invocation);

}  // namespace reef::cli::detail
