// Image commands: one table row per operation of the live image (`ps`, `spawn`, `send`, ...;
// docs/protocol.md "Image operations"), shared by the one-shot subcommands (`reef ps`) and
// `reef repl` (STYLE.md habit 6). A row declares its parameters and options once; the one-shot
// CLI turns them into CLI11 arguments, the REPL parses its line against them, and both run
// the row's handler, which builds the request, calls the server and prints the result.
//
// Thread ownership: main thread only (a Session holds one client::Client).
#pragma once

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "client/client.h"
#include "client/repl_syntax.h"
#include "core/status.h"

namespace reef::cli {

// What a positional parameter holds; decides parsing, validation and REPL completion.
enum class ParamKind {
  kRef,    // an actor: @NanoID, a bare NanoID, or (in the REPL) a bound name
  kPath,   // a source path, "actors/counter"
  kJson,   // a JSON value; in the REPL it is the rest of the line
  kCount,  // a non-negative whole number
  kWord,   // any other word (a revision id, a log level)
  kFile,   // a local file name
};

enum class Arity { kRequired, kOptional, kVariadic };

struct Param {
  std::string_view name;  // "PATH", shown in usage lines
  ParamKind kind;
  Arity arity = Arity::kRequired;
  std::string_view what = {};  // how errors name a kJson value ("STATE"); defaults to name
};

struct Option {
  std::string_view name;        // long name without dashes, "revision"
  char short_name = 0;          // 'm' for -m, 0 for none
  std::string_view value_name;  // "R"; empty for a flag without a value
  std::string_view help;
};

// The parsed arguments of one command, whichever face parsed them.
struct Invocation {
  std::vector<std::string> args;               // positional values in order
  std::map<std::string, std::string> options;  // long name -> value ("" for flags)
  bool Has(std::string_view option) const { return options.contains(std::string(option)); }
};

// One connection plus what a face remembers between commands.
struct Session {
  client::Client* client = nullptr;  // REQUIRES: non-null and connected while commands run
  client::Bindings bindings;         // REPL `let` names; empty for one-shot commands
  std::map<std::string, std::string> source_ids;  // path -> the source_id last seen for it
  bool json_output = false;                       // print raw result JSON instead of human text
  std::chrono::milliseconds timeout{60'000};      // per request
  std::string let_name;  // set by the REPL while running `let NAME = spawn ...`
  // True inside `reef repl`: the connection keeps its cursors (`events`) between commands.
  bool repl = false;
  // Set by SIGINT/SIGTERM handlers; `logs -f` stops following when it becomes non-zero.
  const volatile std::sig_atomic_t* interrupted = nullptr;
};

// Runs a command: builds its request(s), calls the server, prints to stdout.
// Errors: whatever the arguments or the server report; nothing is printed to stdout then.
using CommandRun = Status (*)(Session& session, const Invocation& invocation);

struct ImageCommand {
  std::string_view name;
  std::string_view summary;
  std::vector<Param> params;
  std::vector<Option> options;
  CommandRun run;
};

// The rows, in the order `help` lists them.
std::span<const ImageCommand> ImageCommands();
// The row named `name`, or nullptr.
const ImageCommand* FindImageCommand(std::string_view name);
// "read PATH [--revision R]": the command's usage line.
std::string Usage(const ImageCommand& command);

// Parses the arguments of a REPL line (everything after the command word) against the row:
// words (quotes allowed), options by long or short name, and a kJson parameter as the rest of
// the line. Errors: InvalidArgument with the usage line for a missing or extra argument or an
// unknown option.
Result<Invocation> ParseReplArguments(const ImageCommand& command, std::string_view rest);

// Runs `command`'s handler; a nlohmann exception that escapes it (a response of a shape the
// handler did not expect) becomes Internal instead of ending the process.
Status RunCommand(const ImageCommand& command, Session& session, const Invocation& invocation);

// Prints `status` as "error: <code>: <message>" on stderr (stdout is flushed first); a refused
// token (client::IsUnauthenticated) as "error: unauthenticated: <message>".
void PrintError(const Status& status);
// PrintError(status); returns the exit status 1.
int Fail(const Status& status);
// Writes `text` and a newline to stdout and flushes it.
void PrintLine(std::string_view text);

// The address to connect to: `flag` when non-empty, else REEF_CONNECT when set, else
// client::kDefaultAddress.
std::string ConnectAddress(std::string_view flag);

// Connects as the CLI does (5 s connect timeout), with `auth_token` as the bearer token unless
// it is empty (CommonOptions::auth_token: --auth-token or REEF_AUTH_TOKEN).
Result<std::unique_ptr<client::Client>> ConnectClient(const std::string& address,
                                                      const std::string& auth_token);

}  // namespace reef::cli
