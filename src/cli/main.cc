// `reef`: the command-line face of Reef. A subcommand is required; `reef --help` lists them.
#include <fmt/format.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/common_options.h"
#include "core/version.h"

namespace {

// True when `word` (a command-line word where a subcommand of `parent` is expected) is
// neither an option nor one of its subcommands. CLI11 alone reports such a word as a
// missing subcommand.
bool IsUnknownCommand(CLI::App& parent, std::string_view word) {
  if (word.empty() || word.starts_with('-')) return false;
  return parent
      .get_subcommands([word](CLI::App* sub) { return sub->check_name(std::string(word)); })
      .empty();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Reef: a runtime that hosts sandboxed WebAssembly actors.", "reef"};
  const std::string version = "reef " + std::string(reef::kReefVersion);
  app.set_version_flag("--version", version);
  app.require_subcommand(1);

  std::map<std::string, CLI::App*> groups;
  groups["wasm"] = app.add_subcommand("wasm", "Run and inspect guest modules (.wasm or .wat)");
  groups["wasm"]->require_subcommand(1);
  groups["wasm"]->set_version_flag("--version", version);

  reef::cli::Handler chosen;
  std::vector<std::pair<CLI::App*, reef::cli::Handler>> handlers;
  for (auto table : {reef::cli::ServeCommands(), reef::cli::ClientCommands(),
                     reef::cli::ProgramCommands(), reef::cli::WasmCommands()}) {
    for (const reef::cli::Command& command : table) {
      CLI::App* parent = command.group.empty() ? &app : groups.at(std::string(command.group));
      CLI::App* sub =
          parent->add_subcommand(std::string(command.name), std::string(command.summary));
      sub->set_version_flag("--version", version);  // --help and --version everywhere
      handlers.emplace_back(sub, command.setup(*sub));
    }
  }

  app.footer(
      "The client commands' options --connect, --auth-token, --json and --timeout may also come "
      "before the command, e.g. reef --connect HOST:PORT ps");
  // `reef --connect ADDR ps` is `reef ps --connect ADDR` (common_options.h).
  std::set<std::string> group_names;
  for (const auto& [name, group] : groups) group_names.insert(name);
  reef::cli::HoistedCommandLine line =
      reef::cli::HoistGlobalOptions(std::vector<std::string>(argv, argv + argc), group_names);
  const std::vector<std::string>& args = line.args;
  // A command that is no client command (`reef --connect ADDR wasm run ...`) says so.
  CLI::App* command = &app;
  std::string command_name;
  for (const std::string& word : line.command) {
    auto subs = command->get_subcommands([&word](CLI::App* sub) { return sub->check_name(word); });
    command = subs.empty() ? nullptr : subs.front();
    if (command == nullptr) break;
    command_name += (command_name.empty() ? "" : " ") + word;
  }
  for (const std::string& option : line.moved) {
    if (command != nullptr && command->get_option_no_throw(option) == nullptr) {
      fmt::print(stderr,
                 "error: reef {} does not take {}: it is an option of the client commands; see "
                 "reef {} --help\n",
                 command_name, option, command_name);
      return 2;
    }
  }

  // `reef nosuch` and `reef wasm nosuch`: name the word instead of CLI11's complaint.
  CLI::App* level = &app;
  std::string prefix;
  for (std::size_t i = 1; i < args.size() && level != nullptr; ++i) {
    std::string_view word = args[i];
    if (IsUnknownCommand(*level, word)) {
      fmt::print(stderr, "error: unknown command '{}{}'; see reef {}--help\n", prefix, word,
                 prefix);
      return 2;
    }
    if (word.starts_with('-')) break;
    auto group = groups.find(std::string(word));
    level = level == &app && group != groups.end() ? group->second : nullptr;
    prefix = std::string(word) + " ";
  }

  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend() - 1);  // CLI11's order
    app.parse(std::move(reversed));
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  for (auto& [sub, handler] : handlers) {
    if (sub->parsed()) return handler();
  }
  fmt::print(stderr, "reef: no command given; see reef --help\n");
  return 2;
}
