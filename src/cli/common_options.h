// Options every client command takes (`reef ps`, `reef invoke`, ...): the server address, raw
// JSON output and the answer timeout. One definition for the WebSocket commands
// (client_commands.cc) and the HTTP ones (program_commands.cc).
//
// Thread ownership: main thread only.
#pragma once

#include <fmt/format.h>

#include <string>

#include "CLI/CLI.hpp"
#include "client/client.h"

namespace reef::cli {

struct CommonOptions {
  std::string connect;  // HOST:PORT; empty = REEF_CONNECT, else client::kDefaultAddress
  bool json = false;    // print the server's JSON answer instead of text
  double timeout_seconds = 60;
};

inline void AddCommonOptions(CLI::App& app, CommonOptions& common) {
  app.add_option("--connect", common.connect,
                 fmt::format("server address HOST:PORT (env REEF_CONNECT, default {})",
                             client::kDefaultAddress));
  app.add_flag("--json", common.json, "print the server's JSON answer instead of text");
  app.add_option("--timeout", common.timeout_seconds,
                 "seconds to wait for the server's answer (default 60)")
      ->check(CLI::Range(0.001, 86400.0));
}

}  // namespace reef::cli
