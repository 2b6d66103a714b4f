// Options every client command takes (`reef ps`, `reef invoke`, ...): the server address, the
// bearer token, raw JSON output and the answer timeout. One definition for the WebSocket
// commands (client_commands.cc) and the HTTP ones (program_commands.cc).
//
// They are global options, as in docker, kubectl or git: `reef --connect ADDR ps` is
// `reef ps --connect ADDR`. HoistGlobalOptions moves them from before the subcommand to after
// it, where the subcommand declares them.
//
// Thread ownership: main thread only.
#pragma once

#include <fmt/format.h>

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "CLI/CLI.hpp"
#include "client/client.h"

namespace reef::cli {

struct CommonOptions {
  std::string connect;     // HOST:PORT; empty = REEF_CONNECT, else client::kDefaultAddress
  std::string auth_token;  // the server's bearer token; empty = REEF_AUTH_TOKEN, else none
  bool json = false;       // print the server's JSON answer instead of text
  double timeout_seconds = 60;
};

// One global option: its long name and whether it takes a value (`--connect ADDR` or
// `--connect=ADDR`) or is a flag (`--json`).
struct GlobalOption {
  std::string_view name;
  bool takes_value;
};

// The options of CommonOptions, in the order --help lists them.
inline constexpr GlobalOption kGlobalOptions[] = {
    {"--connect", true}, {"--auth-token", true}, {"--json", false}, {"--timeout", true}};

inline void AddCommonOptions(CLI::App& app, CommonOptions& common) {
  app.add_option("--connect", common.connect,
                 fmt::format("server address HOST:PORT (env REEF_CONNECT, default {})",
                             client::kDefaultAddress));
  app.add_option("--auth-token", common.auth_token, "the server's bearer token")
      ->envname("REEF_AUTH_TOKEN");
  app.add_flag("--json", common.json, "print the server's JSON answer instead of text");
  app.add_option("--timeout", common.timeout_seconds,
                 "seconds to wait for the server's answer (default 60)")
      ->check(CLI::Range(0.001, 86400.0));
}

// A command line with its global options moved after the subcommand.
struct HoistedCommandLine {
  std::vector<std::string> args;     // args[0] is the program
  std::vector<std::string> command;  // the subcommand's words ("ps", or "wasm", "run")
  std::vector<std::string> moved;    // the names of the options moved ("--connect", ...)
};

// `args` (args[0] is the program) with the global options that come before the subcommand
// moved to just after it: after its first word, or its first two when the first is one of
// `groups` ("wasm run"). Leaves `args` as they are (and `moved` empty) when nothing precedes
// the subcommand or no subcommand follows (CLI11 then reports the command line as given).
inline HoistedCommandLine HoistGlobalOptions(std::vector<std::string> args,
                                             const std::set<std::string>& groups) {
  std::vector<std::string> hoisted;
  std::vector<std::string> moved;
  std::size_t i = 1;
  while (i < args.size()) {
    const GlobalOption* match = nullptr;
    for (const GlobalOption& option : kGlobalOptions) {
      std::string_view word = args[i];
      if (word == option.name ||
          (option.takes_value && word.starts_with(option.name) &&
           word.size() > option.name.size() && word[option.name.size()] == '=')) {
        match = &option;
      }
    }
    if (match == nullptr) break;
    moved.emplace_back(match->name);
    hoisted.push_back(args[i++]);
    if (match->takes_value && hoisted.back() == match->name && i < args.size()) {
      hoisted.push_back(args[i++]);
    }
  }
  if (hoisted.empty() || i >= args.size() || args[i].starts_with('-')) {
    return {std::move(args), {}, {}};
  }
  std::size_t after = i + 1;
  if (groups.contains(args[i]) && after < args.size() && !args[after].starts_with('-')) ++after;
  HoistedCommandLine out;
  out.args.assign(args.begin(), args.begin() + 1);
  out.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i),
                     args.begin() + static_cast<std::ptrdiff_t>(after));
  out.args.insert(out.args.end(), out.command.begin(), out.command.end());
  out.args.insert(out.args.end(), hoisted.begin(), hoisted.end());
  out.args.insert(out.args.end(), args.begin() + static_cast<std::ptrdiff_t>(after), args.end());
  out.moved = std::move(moved);
  return out;
}

}  // namespace reef::cli
