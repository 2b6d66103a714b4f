// Client commands: `reef repl` and one one-shot subcommand per row of the image command
// table (image_commands.h), each connecting to a running `reef serve`, running one operation
// and exiting: 0 on success, 1 with "error: <code>: <message>" on stderr otherwise.
#include <fmt/format.h>

#include <csignal>
#include <memory>
#include <vector>

#include "cli/commands.h"
#include "cli/common_options.h"
#include "cli/image_commands.h"
#include "cli/repl.h"

namespace reef::cli {
namespace {

volatile std::sig_atomic_t g_stop_requested = 0;

extern "C" void OnStopSignal(int) {
  g_stop_requested = 1;
}

// SIGINT and SIGTERM set g_stop_requested instead of ending the process, so `logs -f` can
// unsubscribe and close the connection cleanly.
void CatchStopSignals() {
  struct sigaction action {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

// One subcommand from one table row: CLI11 arguments from its params and options.
Handler SetupImageCommand(const ImageCommand& command, CLI::App& app) {
  struct State {
    CommonOptions common;
    std::vector<std::string> values;         // one per non-variadic param
    std::vector<std::string> variadic;       // the variadic param's values
    std::vector<std::string> option_values;  // one per option with a value
    std::vector<bool> flags;                 // one per option without a value
  };
  auto state = std::make_shared<State>();
  state->values.resize(command.params.size());
  state->option_values.resize(command.options.size());
  state->flags.resize(command.options.size());
  AddCommonOptions(app, state->common);
  app.footer(fmt::format("Usage in the REPL: {}", Usage(command)));
  for (size_t i = 0; i < command.params.size(); ++i) {
    const Param& param = command.params[i];
    std::string help;
    switch (param.kind) {
      case ParamKind::kRef:
        help = "actor ref: @NanoID or NanoID";
        break;
      case ParamKind::kPath:
        help = "source path, e.g. actors/counter";
        break;
      case ParamKind::kJson:
        help = "a JSON value as one argument (quote it for the shell)";
        break;
      case ParamKind::kCount:
        help = "a whole number";
        break;
      case ParamKind::kWord:
        help = std::string(param.name);
        break;
      case ParamKind::kFile:
        help = "a local file";
        break;
    }
    if (param.arity == Arity::kVariadic) {
      app.add_option(std::string(param.name), state->variadic, help);
    } else {
      CLI::Option* option = app.add_option(std::string(param.name), state->values[i], help);
      if (param.arity == Arity::kRequired) option->required();
    }
  }
  for (size_t i = 0; i < command.options.size(); ++i) {
    const Option& option = command.options[i];
    std::string names = option.short_name != 0
                            ? fmt::format("-{},--{}", option.short_name, option.name)
                            : fmt::format("--{}", option.name);
    if (option.value_name.empty()) {
      app.add_flag_callback(
          names, [state, i] { state->flags[i] = true; }, std::string(option.help));
    } else {
      app.add_option(names, state->option_values[i], std::string(option.help))
          ->type_name(std::string(option.value_name));
    }
  }
  return [state, &command, &app]() -> int {
    Invocation invocation;
    for (size_t i = 0; i < command.params.size(); ++i) {
      const Param& param = command.params[i];
      if (param.arity == Arity::kVariadic) {
        for (const std::string& value : state->variadic) invocation.args.push_back(value);
      } else if (app.count(std::string(param.name)) > 0) {
        invocation.args.push_back(state->values[i]);
      }
    }
    for (size_t i = 0; i < command.options.size(); ++i) {
      const Option& option = command.options[i];
      std::string long_name = fmt::format("--{}", option.name);
      if (option.value_name.empty()) {
        if (state->flags[i]) invocation.options[std::string(option.name)] = "";
      } else if (app.count(long_name) > 0) {
        invocation.options[std::string(option.name)] = state->option_values[i];
      }
    }
    // Check JSON arguments before connecting, so a typo is reported as such.
    for (size_t i = 0; i < command.params.size() && i < invocation.args.size(); ++i) {
      if (command.params[i].kind != ParamKind::kJson) continue;
      const Param& param = command.params[i];
      Result<nlohmann::json> parsed = client::ParseJsonArgument(
          invocation.args[i], param.what.empty() ? param.name : param.what, {});
      if (!parsed.ok()) {
        PrintError(parsed.status());
        return 1;
      }
    }
    if (invocation.Has("follow")) CatchStopSignals();
    auto client = ConnectClient(ConnectAddress(state->common.connect), state->common.auth_token);
    if (!client.ok()) {
      PrintError(client.status());
      return 1;
    }
    Session session;
    session.client = client->get();
    session.json_output = state->common.json;
    session.timeout =
        std::chrono::milliseconds(static_cast<int64_t>(state->common.timeout_seconds * 1000));
    session.interrupted = &g_stop_requested;
    Status status = RunCommand(command, session, invocation);
    Status closed = (*client)->Close();
    if (!status.ok()) {
      PrintError(status);
      return 1;
    }
    (void)closed;  // the operation succeeded; a slow close handshake is not the user's error
    return 0;
  };
}

std::vector<Command> BuildRows() {
  std::vector<Command> rows;
  rows.push_back(
      {"", "repl", "Interactive session with the image: line editing, history, `let` bindings",
       [](CLI::App& app) -> Handler {
         auto common = std::make_shared<CommonOptions>();
         AddCommonOptions(app, *common);
         return [common]() -> int {
           ReplOptions options;
           options.address = ConnectAddress(common->connect);
           options.auth_token = common->auth_token;
           options.json_output = common->json;
           options.timeout =
               std::chrono::milliseconds(static_cast<int64_t>(common->timeout_seconds * 1000));
           return RunRepl(options);
         };
       }});
  for (const ImageCommand& command : ImageCommands()) {
    rows.push_back({"", command.name, command.summary,
                    [&command](CLI::App& app) { return SetupImageCommand(command, app); }});
  }
  return rows;
}

}  // namespace

std::span<const Command> ClientCommands() {
  static const std::vector<Command> rows = BuildRows();
  return rows;
}

}  // namespace reef::cli
