// `reef repl`: the interactive session. Reads command lines (with libedit line editing,
// history in ~/.reef_history and tab completion when stdin is a terminal; plain lines
// otherwise), runs them through the image command table (image_commands.h) on one
// connection, and keeps `let` bindings for the session.
//
// Thread ownership: main thread only; installs a SIGINT handler for the session.
#pragma once

#include <chrono>
#include <string>

namespace reef::cli {

struct ReplOptions {
  std::string address;                        // HOST:PORT of `reef serve`
  std::string auth_token;                     // bearer token; empty = none
  bool json_output = false;                   // print raw result JSON for every command
  std::chrono::milliseconds timeout{60'000};  // per request
};

// Runs the session until `quit`, `exit` or end of input. Returns the process exit status:
// 0 when the session ended normally, 1 when it could not connect or the connection broke.
// Errors of single commands are printed ("error: <code>: <message>") and the session goes on.
int RunRepl(const ReplOptions& options);

}  // namespace reef::cli
