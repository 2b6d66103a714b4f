// Human output of the client commands: compact text for the results of docs/protocol.md's
// operations and of the HTTP API's program routes (tables for lists, `key: value` lines for a
// snapshot). Every function takes the operation's "result" JSON (for the HTTP routes: the
// response body), tolerates missing or ill-typed fields (printed as "?"), and returns the text
// without a trailing newline. `--json` bypasses all of this.
//
// Thread ownership: pure functions; any thread.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace reef::cli {

// `text` with control characters escaped so it stays on one line: "\n", "\t", "\r", and
// "\xNN" for the other bytes below 0x20 and 0x7F. Other bytes (UTF-8 included) are kept.
std::string EscapeControl(std::string_view text);

// The first 12 characters of a source or implementation id (64 hex characters).
std::string ShortId(std::string_view id);

// `ps`: an aligned table ACTOR STATUS INC QUEUED IMPLEMENTATION STATE, or "no actors".
std::string FormatPs(const nlohmann::json& result);
// `tick`: "100 ticks: 3 slices, 250 instructions, 2 commits, 0 failures".
std::string FormatTick(const nlohmann::json& result);
// `inspect`: one "key: value" line per snapshot field; values as compact JSON, strings with
// control characters escaped; queued messages one per line, at most 10, then "... N more".
std::string FormatSnapshot(const nlohmann::json& snapshot);
// `events`: one line per event: "#seq kind @actor (incarnation N) detail". When more events
// remain, a hint: in the REPL (`repl`) to run events again (the connection keeps the cursor),
// else to run `events --after <next_after>`.
std::string FormatEvents(const nlohmann::json& result, bool repl);
// `stop`, `kill`, ...: "@ref: stopped (incarnation 0)".
std::string FormatLifecycle(const nlohmann::json& result);
// "removed @REF (N message(s) dropped)" for rm's {"actor", "dropped_messages"}.
std::string FormatRemoved(const nlohmann::json& result);
// `reload`, `become`: "@ref: switches to LABEL (id) at its next handler boundary", or
// "@ref: now runs LABEL (id)" when the server says it was installed at once.
std::string FormatPendingInstall(const nlohmann::json& result);
// `sources`: an aligned table PATH KIND SOURCE, or "no sources".
std::string FormatSources(const nlohmann::json& result);
// `history`: an aligned table REVISION WHEN KIND SOURCE MESSAGE, or "no revisions".
std::string FormatHistory(const nlohmann::json& result);
// One log entry: "#seq HH:MM:SS.mmm level @ref message" (UTC time; control characters in the
// message escaped, see EscapeControl).
std::string FormatLogEntry(const nlohmann::json& entry);

// `deploy` (POST /programs): "deployed counter-demo as generation 2", then one line per unit
// list: "  added:     counter, worker" ("-" for an empty list).
std::string FormatDeploy(const nlohmann::json& body);
// `units` (GET /units): an aligned table UNIT MODULE HANDLER PLACEMENT INSTANCES INBOX
// INVOCATIONS REJECTED POISONED EVICTED ("INSTANCES" is "live/limit"), or "no units".
std::string FormatUnits(const nlohmann::json& body);
// `units UNIT` (GET /units/{unit}/instances): an aligned table INSTANCE ACTOR REACTOR STATUS
// INC TIER QUEUED INVOCATIONS IDLE FAILURE ("QUEUED" is "queued/capacity", IDLE in ms), or
// "no instances of UNIT".
std::string FormatInstances(const nlohmann::json& body);

}  // namespace reef::cli
