// `reef`: the command-line face of Reef. A subcommand is required; `reef --help` lists them.
#include <fmt/format.h>

#include <map>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace {

constexpr const char* kVersion = "0.1.0";

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Reef: a runtime that hosts sandboxed WebAssembly actors.", "reef"};
  const std::string version = std::string("reef ") + kVersion;
  app.set_version_flag("--version", version);
  app.require_subcommand(1);

  std::map<std::string, CLI::App*> groups;
  groups["wasm"] = app.add_subcommand("wasm", "Run and inspect guest modules (.wasm or .wat)");
  groups["wasm"]->require_subcommand(1);
  groups["wasm"]->set_version_flag("--version", version);

  reef::cli::Handler chosen;
  std::vector<std::pair<CLI::App*, reef::cli::Handler>> handlers;
  for (auto table : {reef::cli::ServeCommands(), reef::cli::ClientCommands(),
                     reef::cli::WasmCommands()}) {
    for (const reef::cli::Command& command : table) {
      CLI::App* parent = command.group.empty() ? &app : groups.at(std::string(command.group));
      CLI::App* sub =
          parent->add_subcommand(std::string(command.name), std::string(command.summary));
      sub->set_version_flag("--version", version);  // --help and --version everywhere
      handlers.emplace_back(sub, command.setup(*sub));
    }
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  for (auto& [sub, handler] : handlers) {
    if (sub->parsed()) return handler();
  }
  fmt::print(stderr, "reef: no command given; see reef --help\n");
  return 2;
}
