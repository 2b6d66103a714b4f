// The `reef` command table: one row per subcommand (STYLE.md habit 6).
//
// Each row registers its options on a CLI11 subcommand and returns the handler that runs
// once the command line parsed. Adding a command is one row in main.cc plus its handler.
//
// Thread ownership: main thread only.
#pragma once

#include <functional>
#include <span>
#include <string_view>

#include "CLI/CLI.hpp"

namespace reef::cli {

// Runs a parsed command; returns the process exit status.
using Handler = std::function<int()>;

struct Command {
  std::string_view group;    // parent subcommand ("wasm"), or "" for a top-level command
  std::string_view name;     // e.g. "run"
  std::string_view summary;  // one line, shown by --help
  // Declares the command's arguments on `app` and returns its handler (which reads the
  // variables the options were bound to).
  std::function<Handler(CLI::App& app)> setup;
};

// Rows of `reef wasm ...`: run, inspect, handle (wasm_commands.cc).
std::span<const Command> WasmCommands();
// The row of `reef serve`: starts the image and its server (serve_command.cc).
std::span<const Command> ServeCommands();
// Rows of the client commands: `reef repl` and one row per image operation (`reef ps`,
// `reef spawn`, ...), all talking to a running server (client_commands.cc, repl.cc).
std::span<const Command> ClientCommands();
// Rows of the program commands `reef deploy`, `reef invoke` and `reef units`, which talk to
// a running server over its HTTP API (program_commands.cc).
std::span<const Command> ProgramCommands();

}  // namespace reef::cli
