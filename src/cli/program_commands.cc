// Program commands: `reef deploy`, `reef invoke` and `reef units`, the CLI face of the HTTP
// API's programs and units (docs/http-api.md "Programs and units"). Each sends one HTTP
// request to a running `reef serve` (client/http_client.h) and exits: 0 on success, 1 with
// "error: <code>: <message>" on stderr otherwise (the server's own code for an HTTP error).
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/commands.h"
#include "cli/common_options.h"
#include "cli/image_commands.h"
#include "cli/output.h"
#include "client/http_client.h"
#include "client/json_fields.h"
#include "client/repl_syntax.h"
#include "core/base64.h"

namespace reef::cli {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Limits of `reef deploy`, in bytes: the manifest, each module file, and the whole request
// (the server's body limit for POST /programs; base64 makes a module a third larger).
constexpr size_t kMaxManifestBytes = 1u << 20;
constexpr size_t kMaxModuleBytes = 64u << 20;
constexpr size_t kMaxDeployRequestBytes = 64u << 20;
// The manifest's file name inside a program directory.
constexpr std::string_view kManifestFile = "program.json";
// The first four bytes of every WebAssembly binary.
constexpr std::string_view kWasmMagic{"\0asm", 4};
// How much longer than the server's own --timeout-ms `reef invoke` waits for its answer, so
// the server's 504 arrives before the client gives up.
constexpr std::chrono::milliseconds kInvokeGrace{5'000};

// The HTTP options of a command: its address, token and deadline (at least `at_least`).
client::HttpOptions HttpOptionsOf(const CommonOptions& common,
                                  std::chrono::milliseconds at_least = {}) {
  client::HttpOptions options;
  options.address = ConnectAddress(common.connect);
  if (!common.auth_token.empty()) options.auth_token = common.auth_token;
  options.timeout = std::max(
      at_least, std::chrono::milliseconds(static_cast<int64_t>(common.timeout_seconds * 1000)));
  return options;
}

// Prints the server's error answer as "error: <code>: <message>", with a hint for a refused
// token and the server's Retry-After when it sent one; returns the exit status 1.
int FailHttp(const client::HttpResponse& response) {
  client::HttpError error = client::DescribeHttpError(response);
  std::string text = fmt::format("error: {}: {}", error.code, EscapeControl(error.message));
  if (response.status == 401) {
    text += " (set REEF_AUTH_TOKEN or --auth-token to the server's token)";
  }
  if (response.retry_after) text += fmt::format(" (retry after {} s)", *response.retry_after);
  std::fflush(stdout);
  fmt::print(stderr, "{}\n", text);
  std::fflush(stderr);
  return 1;
}

// Sends `request`; on a 2xx answer with a JSON body stores the body and returns true,
// otherwise prints the error (local or the server's) and returns false.
bool Send(const client::HttpOptions& options, const client::HttpRequest& request, json* body) {
  Result<client::HttpResponse> response = client::HttpCall(options, request);
  if (!response.ok()) {
    Fail(response.status());
    return false;
  }
  if (response->status < 200 || response->status > 299) {
    FailHttp(*response);
    return false;
  }
  *body = json::parse(response->body, nullptr, false);
  if (body->is_discarded()) {
    Fail(Status::Internal(fmt::format("the answer to {} {} from {} is not JSON",
                                      client::HttpMethodName(request.method), request.target,
                                      options.address)));
    return false;
  }
  return true;
}

// Prints the answer: compact JSON with --json, else the human text.
void PrintAnswer(const CommonOptions& common, const json& body, const std::string& human) {
  PrintLine(common.json ? body.dump(-1, ' ', false, json::error_handler_t::replace) : human);
}

// `text` as one URL path segment: unreserved characters (RFC 3986 section 2.3) kept, every
// other byte percent-encoded.
std::string PathSegment(std::string_view text) {
  std::string out;
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_' || c == '.' || c == '~';
    if (unreserved) {
      out += c;
    } else {
      out += fmt::format("%{:02X}", byte);
    }
  }
  return out;
}

// ------------------------------------------------------------------------------- deploy

// The bytes of `path`, at most `max_bytes` of them. `what` names the file in errors.
Result<std::string> ReadFile(const fs::path& path, size_t max_bytes, std::string_view what) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    return Status::NotFound(
        fmt::format("{}: {} does not exist or is not a file", what, path.string()));
  }
  uintmax_t size = fs::file_size(path, ec);
  if (ec) return Status::Unavailable(fmt::format("{}: {}: {}", what, path.string(), ec.message()));
  if (size > max_bytes) {
    return Status::LimitExceeded(fmt::format("{}: {} is {} bytes; the limit is {} bytes", what,
                                             path.string(), size, max_bytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::Unavailable(
        fmt::format("{}: cannot open {}: {}", what, path.string(), std::strerror(errno)));
  }
  std::string bytes(static_cast<size_t>(size), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (static_cast<uintmax_t>(in.gcount()) != size) {
    return Status::Unavailable(fmt::format("{}: reading {} failed", what, path.string()));
  }
  return bytes;
}

// The body of POST /programs for the program directory `dir`: {"manifest": <program.json>,
// "modules": {name: base64 of the file}}. Checks only what the CLI must know to read the
// files; the server validates the manifest itself.
Result<json> DeployRequest(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return Status::NotFound(
        fmt::format("program directory '{}' does not exist or is not a directory", dir.string()));
  }
  fs::path manifest_path = dir / kManifestFile;
  REEF_ASSIGN_OR_RETURN(std::string text, ReadFile(manifest_path, kMaxManifestBytes, "manifest"));
  json manifest;
  try {
    manifest = json::parse(text);
  } catch (const json::parse_error& e) {
    // e.what() is "[json.exception.parse_error.101] parse error at line 3, column 5: ...".
    std::string_view why = e.what();
    if (size_t end = why.find("] "); end != std::string_view::npos) why.remove_prefix(end + 2);
    return Status::InvalidArgument(
        fmt::format("{} is not valid JSON: {}", manifest_path.string(), why));
  }
  if (!manifest.is_object()) {
    return Status::InvalidArgument(
        fmt::format("{} must hold a JSON object (see docs/http-api.md \"Programs and units\")",
                    manifest_path.string()));
  }
  const json* modules = client::FindField(manifest, "modules");
  if (modules == nullptr || !modules->is_object() || modules->empty()) {
    return Status::InvalidArgument(fmt::format(
        "{}: \"modules\" must be an object of module name -> .wasm file path relative to {}",
        manifest_path.string(), dir.string()));
  }
  json encoded = json::object();
  size_t request_bytes = text.size();
  for (const auto& [name, file] : modules->items()) {
    std::string what = fmt::format("module '{}'", name);
    if (!file.is_string() || file.get_ref<const std::string&>().empty()) {
      return Status::InvalidArgument(
          fmt::format("{}: modules.{} must be a file path relative to {}", manifest_path.string(),
                      name, dir.string()));
    }
    fs::path relative(file.get_ref<const std::string&>());
    if (relative.is_absolute()) {
      return Status::InvalidArgument(
          fmt::format("{}: modules.{} is '{}'; it must be relative to {}", manifest_path.string(),
                      name, relative.string(), dir.string()));
    }
    REEF_ASSIGN_OR_RETURN(std::string bytes, ReadFile(dir / relative, kMaxModuleBytes, what));
    if (!std::string_view(bytes).starts_with(kWasmMagic)) {
      return Status::InvalidArgument(
          fmt::format("{}: {} is not a WebAssembly binary (it does not start with \\0asm); "
                      "compile text (.wat) with wat2wasm first",
                      what, (dir / relative).string()));
    }
    std::string base64 = Base64Encode(bytes);
    request_bytes += base64.size();
    if (request_bytes > kMaxDeployRequestBytes) {
      return Status::LimitExceeded(fmt::format(
          "the program in {} is too large to deploy: its modules encode to more than {} bytes, "
          "the server's request limit",
          dir.string(), kMaxDeployRequestBytes));
    }
    encoded[name] = std::move(base64);
  }
  return json{{"manifest", std::move(manifest)}, {"modules", std::move(encoded)}};
}

Handler SetupDeploy(CLI::App& app) {
  struct State {
    CommonOptions common;
    std::string dir;
  };
  auto state = std::make_shared<State>();
  AddCommonOptions(app, state->common);
  app.add_option("PROGRAM_DIR", state->dir,
                 "directory holding program.json and the .wasm files its \"modules\" name")
      ->required();
  return [state]() -> int {
    Result<json> request = DeployRequest(state->dir);
    if (!request.ok()) return Fail(request.status());
    json body;
    if (!Send(HttpOptionsOf(state->common),
              {client::HttpMethod::kPost, "/programs", request->dump()}, &body)) {
      return 1;
    }
    PrintAnswer(state->common, body, FormatDeploy(body));
    return 0;
  };
}

// ------------------------------------------------------------------------------- invoke

Handler SetupInvoke(CLI::App& app) {
  struct State {
    CommonOptions common;
    std::string unit;
    std::string message;
    std::string mode = "wait";
    uint64_t instance = 0;  // 0: not given
    uint64_t timeout_ms = 10'000;
  };
  auto state = std::make_shared<State>();
  AddCommonOptions(app, state->common);
  app.add_option("UNIT", state->unit, "the unit to invoke")->required();
  app.add_option("MESSAGE", state->message,
                 "the message, a JSON value as one argument (quote it for the shell)")
      ->required();
  app.add_option("--mode", state->mode,
                 "wait: run it and print the handler's reply (default); enqueue: queue it, "
                 "waiting up to --timeout-ms for inbox room; try: queue it only if the inbox "
                 "has room now")
      ->check(CLI::IsMember({"wait", "enqueue", "try"}));
  app.add_option("--instance", state->instance,
                 "the instance number to deliver to (default: any instance, spawning one if "
                 "the unit may)")
      ->check(CLI::PositiveNumber);
  app.add_option("--timeout-ms", state->timeout_ms,
                 "milliseconds the server waits for the reply (wait) or for inbox room "
                 "(enqueue); default 10000")
      ->check(CLI::Range(uint64_t{0}, uint64_t{60'000}));
  app.get_option("--timeout")
      ->description(
          "seconds to wait for the server's answer (default 60, and at least --timeout-ms "
          "plus 5 s, so the server's own timeout answers first)");
  return [state]() -> int {
    Result<json> message = client::ParseJsonArgument(state->message, "MESSAGE", {});
    if (!message.ok()) return Fail(message.status());
    std::string target = fmt::format("/units/{}/invoke?mode={}&timeout_ms={}",
                                     PathSegment(state->unit), state->mode, state->timeout_ms);
    if (state->instance != 0) target += fmt::format("&instance={}", state->instance);
    client::HttpOptions options =
        HttpOptionsOf(state->common, std::chrono::milliseconds(state->timeout_ms) + kInvokeGrace);
    json body;
    if (!Send(options, {client::HttpMethod::kPost, target, message->dump()}, &body)) return 1;
    std::string human;
    if (const json* result = client::FindField(body, "result"); result != nullptr) {
      human = result->dump(-1, ' ', false, json::error_handler_t::replace);
    } else {
      const json* instance = client::FindField(body, "instance");
      human = fmt::format("queued on instance {}",
                          instance != nullptr ? instance->dump() : std::string("?"));
    }
    PrintAnswer(state->common, body, human);
    return 0;
  };
}

// -------------------------------------------------------------------------------- units

Handler SetupUnits(CLI::App& app) {
  struct State {
    CommonOptions common;
    std::string unit;
  };
  auto state = std::make_shared<State>();
  AddCommonOptions(app, state->common);
  app.add_option("UNIT", state->unit, "list this unit's instances instead of the table of units");
  return [state]() -> int {
    bool one = !state->unit.empty();
    std::string target =
        one ? fmt::format("/units/{}/instances", PathSegment(state->unit)) : "/units";
    json body;
    if (!Send(HttpOptionsOf(state->common), {client::HttpMethod::kGet, target, ""}, &body)) {
      return 1;
    }
    PrintAnswer(state->common, body, one ? FormatInstances(body) : FormatUnits(body));
    return 0;
  };
}

}  // namespace

std::span<const Command> ProgramCommands() {
  static const Command rows[] = {
      {"", "deploy", "Deploy a program directory (program.json and its .wasm modules)",
       SetupDeploy},
      {"", "invoke", "Send a message to a unit of the deployed program", SetupInvoke},
      {"", "units", "List the deployed program's units, or one unit's instances", SetupUnits},
  };
  return rows;
}

}  // namespace reef::cli
