// `reef repl` (see repl.h). Line editing goes through libedit's readline-compatible API. Ctrl+C
// is caught by our own SIGINT handler (libedit's is off): at the prompt it ends the line
// being edited, which is then discarded; during `logs -f` it stops following.
#include "cli/repl.h"

#include <editline/readline.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/image_commands.h"
#include "client/json_fields.h"

namespace reef::cli {
namespace {

// Entries kept in the history file.
constexpr int kHistoryEntries = 1000;
// Longest line the non-terminal reader accepts, in bytes.
constexpr size_t kMaxLineBytes = 4u << 20;

volatile std::sig_atomic_t g_interrupted = 0;

extern "C" void OnInterrupt(int) {
  g_interrupted = 1;
}

// The session completion reads from (readline's callbacks take no user data).
Session* g_session = nullptr;
std::vector<std::string> g_candidates;

// REPL-only commands, listed by `help` after the image commands.
struct ReplCommand {
  std::string_view usage;
  std::string_view summary;
};
constexpr ReplCommand kReplCommands[] = {
    {"let NAME = spawn PATH JSON", "spawn an actor and bind NAME to its ref for this session"},
    {"help [COMMAND]", "list commands, or show one command's usage and options"},
    {"quit, exit, Ctrl+D", "leave the REPL (the image keeps running)"},
};

std::string Help() {
  std::vector<std::pair<std::string, std::string_view>> rows;
  for (const ImageCommand& command : ImageCommands()) {
    rows.emplace_back(Usage(command), command.summary);
  }
  for (const ReplCommand& command : kReplCommands) {
    rows.emplace_back(std::string(command.usage), command.summary);
  }
  size_t width = 0;
  for (const auto& row : rows) width = std::max(width, row.first.size());
  std::string out;
  for (const auto& [usage, summary] : rows) {
    out += fmt::format("  {:<{}}  {}\n", usage, width, summary);
  }
  out +=
      "REF is @NanoID, a NanoID or a `let` name; in JSON, {\"$actor\": \"NAME\"} names an "
      "actor.\nCtrl+C leaves `logs -f` and clears the line at the prompt.";
  return out;
}

// `help COMMAND`: the command's usage line, what it does, and its options.
Result<std::string> CommandHelp(std::string_view name) {
  const ImageCommand* command = FindImageCommand(name);
  if (command == nullptr) {
    return Status::InvalidArgument(
        fmt::format("unknown command '{}'; type help for the list", name));
  }
  std::string out = fmt::format("  {}\n  {}\n", Usage(*command), command->summary);
  for (const Option& option : command->options) {
    std::string flag = option.short_name != 0
                           ? fmt::format("-{}, --{}", option.short_name, option.name)
                           : fmt::format("--{}", option.name);
    if (!option.value_name.empty()) flag += fmt::format(" {}", option.value_name);
    out += fmt::format("    {:<24}  {}\n", flag, option.help);
  }
  return out;
}

// ------------------------------------------------------------------ running one line

enum class LineOutcome { kContinue, kQuit };

// Runs one line. `interactive`: stdin is a terminal (commands that run until Ctrl+C need it).
Status RunLine(Session& session, std::string_view line, bool interactive, LineOutcome* outcome) {
  *outcome = LineOutcome::kContinue;
  REEF_ASSIGN_OR_RETURN(std::optional<client::LetLine> let, client::ParseLet(line));
  std::string_view rest = line;
  if (let) {
    rest = let->rest;
    std::string_view probe = rest;
    REEF_ASSIGN_OR_RETURN(std::optional<std::string> word, client::NextWord(&probe));
    if (!word || *word != "spawn") {
      return Status::InvalidArgument("`let` binds the result of spawn: let NAME = spawn PATH JSON");
    }
  }
  REEF_ASSIGN_OR_RETURN(std::optional<std::string> name, client::NextWord(&rest));
  if (!name) return Status::Ok();
  if (*name == "quit" || *name == "exit") {
    *outcome = LineOutcome::kQuit;
    return Status::Ok();
  }
  if (*name == "help" || *name == "?") {
    REEF_ASSIGN_OR_RETURN(std::optional<std::string> topic, client::NextWord(&rest));
    std::string text = Help() + "\n";
    if (topic) {
      REEF_ASSIGN_OR_RETURN(text, CommandHelp(*topic));
    }
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
    return Status::Ok();
  }
  const ImageCommand* command = FindImageCommand(*name);
  if (command == nullptr) {
    return Status::InvalidArgument(
        fmt::format("unknown command '{}'; type help for the list", *name));
  }
  REEF_ASSIGN_OR_RETURN(Invocation invocation, ParseReplArguments(*command, rest));
  if (!interactive && invocation.Has("follow")) {
    // Nothing could stop it: Ctrl+C needs a terminal, and end of input is not read meanwhile.
    return Status::FailedPrecondition(
        "logs -f needs an interactive terminal; use `reef logs -f` from a shell");
  }
  session.let_name = let ? let->name : "";
  Status status = RunCommand(*command, session, invocation);
  session.let_name.clear();
  return status;
}

// ------------------------------------------------------------------ line editing

// Reads one character for libedit: a whole UTF-8 sequence as one code point, so non-ASCII
// input survives libedit's one-int-per-character interface. On Ctrl+C returns '\n', which
// ends the line; the caller sees g_interrupted and discards it.
int ReadCharacter(FILE*) {
  auto read_byte = [](unsigned char* byte) -> int {
    while (true) {
      ssize_t n = ::read(STDIN_FILENO, byte, 1);
      if (n == 1) return 1;
      if (n == 0) return 0;
      if (errno == EINTR) {
        if (g_interrupted) return -2;
        continue;
      }
      return -1;
    }
  };
  unsigned char lead = 0;
  int got = read_byte(&lead);
  if (got == -2) return '\n';
  if (got != 1) return EOF;
  int length = lead < 0x80           ? 1
               : (lead >> 5) == 0x6  ? 2
               : (lead >> 4) == 0xE  ? 3
               : (lead >> 3) == 0x1E ? 4
                                     : 1;
  if (length == 1) return lead;
  int code_point = lead & (0x3F >> (length - 1));
  for (int i = 1; i < length; ++i) {
    unsigned char next = 0;
    got = read_byte(&next);
    if (got == -2) return '\n';
    if (got != 1 || (next & 0xC0) != 0x80) return 0xFFFD;
    code_point = (code_point << 6) | (next & 0x3F);
  }
  return code_point;
}

char* NextCandidate(const char* text, int state) {
  static size_t next = 0;
  if (state == 0) next = 0;
  std::string_view prefix(text);
  while (next < g_candidates.size()) {
    const std::string& candidate = g_candidates[next++];
    if (candidate.starts_with(prefix)) return strdup(candidate.c_str());
  }
  return nullptr;
}

void AddBoundNames() {
  for (const auto& [name, ref] : g_session->bindings) g_candidates.push_back(name);
}

void AddSourcePaths() {
  Result<nlohmann::json> sources =
      g_session->client->Call("sources", nlohmann::json::object(), std::chrono::seconds(2));
  if (!sources.ok()) return;
  for (const auto& source : client::ArrayField(*sources, "sources")) {
    if (source.is_object() && source.contains("path") && source["path"].is_string()) {
      g_candidates.push_back(source["path"].get<std::string>());
    }
  }
}

char** Complete(const char* text, int start, int) {
  rl_attempted_completion_over = 1;
  rl_completion_append_character = ' ';
  g_candidates.clear();
  std::string before(rl_line_buffer, static_cast<size_t>(std::max(start, 0)));
  client::CompletionContext context = client::ClassifyCompletion(before);
  using Kind = client::CompletionContext::Kind;
  switch (context.kind) {
    case Kind::kCommand:
      for (const ImageCommand& command : ImageCommands()) g_candidates.emplace_back(command.name);
      for (const char* extra : {"let", "help", "quit", "exit"}) g_candidates.emplace_back(extra);
      break;
    case Kind::kActorString:
      rl_completion_append_character = '"';
      AddBoundNames();
      break;
    case Kind::kArgument: {
      if (context.command == "let") {
        g_candidates.emplace_back("=");
        break;
      }
      const ImageCommand* command = FindImageCommand(context.command);
      if (command == nullptr || command->params.empty()) break;
      size_t index = std::min(context.index, command->params.size() - 1);
      if (context.index >= command->params.size() &&
          command->params.back().arity != Arity::kVariadic) {
        break;
      }
      switch (command->params[index].kind) {
        case ParamKind::kRef:
          AddBoundNames();
          break;
        case ParamKind::kPath:
          AddSourcePaths();
          break;
        case ParamKind::kFile:
          rl_attempted_completion_over = 0;  // libedit completes file names
          return nullptr;
        case ParamKind::kWord:
          if (command->name == "log-level") {
            for (const char* level : {"trace", "debug", "info", "warn", "error", "fatal"}) {
              g_candidates.emplace_back(level);
            }
          }
          break;
        case ParamKind::kJson:
        case ParamKind::kCount:
          break;
      }
      break;
    }
  }
  if (g_candidates.empty()) return nullptr;
  return rl_completion_matches(text, NextCandidate);
}

std::string HistoryPath() {
  const char* home = std::getenv("HOME");
  if (home == nullptr || *home == '\0') return "";
  return std::string(home) + "/.reef_history";
}

void SetUpLineEditing() {
  rl_readline_name = const_cast<char*>("reef");
  rl_catch_signals = 0;
  rl_getc_function = ReadCharacter;
  rl_attempted_completion_function = Complete;
  // Words end at JSON punctuation too, so `{"$actor": "rec<TAB>` completes "rec".
  static char kBreaks[] = " \t\n\"{}[],:=";
  rl_completer_word_break_characters = kBreaks;
  using_history();
  stifle_history(kHistoryEntries);
  if (std::string path = HistoryPath(); !path.empty()) read_history(path.c_str());
}

void SaveHistory() {
  std::string path = HistoryPath();
  if (path.empty()) return;
  if (write_history(path.c_str()) == 0) history_truncate_file(path.c_str(), kHistoryEntries);
}

// The next line, or nullopt at end of input. Sets *interrupted when Ctrl+C ended the line.
std::optional<std::string> ReadLine(bool terminal, bool* interrupted) {
  g_interrupted = 0;
  *interrupted = false;
  if (terminal) {
    char* raw = readline("reef> ");
    *interrupted = g_interrupted != 0;
    if (raw == nullptr) return std::nullopt;
    std::string line(raw);
    std::free(raw);
    if (!*interrupted && !client::Trim(line).empty()) add_history(line.c_str());
    return line;
  }
  std::string line;
  while (!std::getline(std::cin, line)) {
    if (std::cin.eof() || !g_interrupted) return std::nullopt;
    std::cin.clear();  // a signal interrupted the read; go on reading
    g_interrupted = 0;
  }
  if (line.size() > kMaxLineBytes) {
    PrintError(Status::LimitExceeded(
        fmt::format("line of {} bytes is longer than {} bytes", line.size(), kMaxLineBytes)));
    return std::string();
  }
  return line;
}

}  // namespace

int RunRepl(const ReplOptions& options) {
  auto client = ConnectClient(options.address, options.auth_token);
  if (!client.ok()) {
    PrintError(client.status());
    return 1;
  }
  struct sigaction action {};
  action.sa_handler = OnInterrupt;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: a blocked read returns EINTR
  sigaction(SIGINT, &action, nullptr);

  Session session;
  session.client = client->get();
  session.json_output = options.json_output;
  session.timeout = options.timeout;
  session.interrupted = &g_interrupted;
  session.repl = true;
  g_session = &session;

  bool terminal = ::isatty(STDIN_FILENO) != 0;
  if (terminal) {
    SetUpLineEditing();
    fmt::print("connected to {}; type help for commands, quit to leave\n", options.address);
    std::fflush(stdout);
  }
  int exit_status = 0;
  while (true) {
    bool interrupted = false;
    std::optional<std::string> line = ReadLine(terminal, &interrupted);
    if (!line) {
      if (terminal) std::fputc('\n', stdout);
      break;
    }
    if (interrupted) continue;  // Ctrl+C at the prompt: drop the line
    g_interrupted = 0;
    LineOutcome outcome = LineOutcome::kContinue;
    Status status = RunLine(session, *line, terminal, &outcome);
    if (g_interrupted) std::fputc('\n', stdout);  // after the ^C the terminal echoed
    Status lost = session.client->failure();
    // The reason the connection went is said once, in the closing message below.
    if (!status.ok() && (lost.ok() || status.message() != lost.message())) PrintError(status);
    if (outcome == LineOutcome::kQuit) break;
    if (!lost.ok()) {
      PrintError(Status::Unavailable(fmt::format(
          "lost the connection: {}; the REPL ends (bindings are gone, the image may still run)",
          lost.message())));
      exit_status = 1;
      break;
    }
  }
  if (terminal) SaveHistory();
  g_session = nullptr;
  (void)(*client)->Close();
  return exit_status;
}

}  // namespace reef::cli
