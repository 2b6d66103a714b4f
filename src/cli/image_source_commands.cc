// Image commands on sources (rows of image_commands.cc's table): sources, read, write,
// commit, history and rollback. `write` guards against overwriting others' work: it sends the
// source id it expects to replace (--expected, else the one this session last saw, else the
// current one; none with --create), and the server refuses a write when the working source
// is no longer that one.
//
// Thread ownership: main thread only.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "cli/detail/image_handlers.h"
#include "cli/output.h"
#include "client/json_fields.h"
#include "core/base64.h"

namespace reef::cli::detail {

using json = nlohmann::json;
using client::ArrayField;
using client::StringField;

namespace {

// Largest source file `write` sends (the server's limit on source text).
constexpr size_t kMaxSourceBytes = 1u << 20;
// Largest wasm binary `write` sends: its base64 (4/3 of it) and the request around it (4 KiB
// for the path and the rest) must fit the server's 1 MiB request limit: 765 KiB.
constexpr size_t kMaxWasmBytes = ((1u << 20) - (4u << 10)) / 4 * 3;
// Fewest hex characters `write --expected` accepts as a prefix of a source id.
constexpr size_t kMinIdPrefix = 8;

void Remember(Session& session, const json& result) {
  if (result.is_object() && result.contains("path") && result["path"].is_string() &&
      result.contains("source_id") && result["source_id"].is_string()) {
    session.source_ids[result["path"].get<std::string>()] = result["source_id"].get<std::string>();
  }
}

// The file's bytes, refused as soon as they pass `limit`; `what` names the limit in the error.
Result<std::string> ReadSourceFile(const std::string& file, size_t limit, std::string_view what) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    return Status::NotFound(fmt::format("cannot open '{}': {}", file, std::strerror(errno)));
  }
  std::string text;
  char buffer[64 * 1024];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    text.append(buffer, static_cast<size_t>(in.gcount()));
    if (text.size() > limit) {
      return Status::LimitExceeded(
          fmt::format("'{}' is larger than {} bytes, {}", file, limit, what));
    }
  }
  if (in.bad()) return Status::Unavailable(fmt::format("reading '{}' failed", file));
  return text;
}

// The full source id `--expected TEXT` names: a 64-hex id as given, or the current working
// source id of `path` when TEXT is a prefix of it of at least kMinIdPrefix lowercase hex
// characters (the 12-character ids the CLI prints). Errors: Conflict naming the current short
// id when the prefix does not match it; NotFound when `path` has no working source;
// InvalidArgument for text that is neither.
Result<std::string> ExpectedSourceId(Session& session, const std::string& path,
                                     const std::string& text) {
  constexpr size_t kIdLength = 64;
  bool hex = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  });
  if (hex && text.size() == kIdLength) return text;
  if (!hex || text.size() < kMinIdPrefix || text.size() > kIdLength) {
    return Status::InvalidArgument(fmt::format(
        "--expected '{}' is not a source id: give the 64 lowercase hex characters or a prefix of "
        "at least {} of them",
        text, kMinIdPrefix));
  }
  REEF_ASSIGN_OR_RETURN(json result, Call(session, "sources", json::object()));
  for (const json& source : ArrayField(result, "sources")) {
    if (StringField(source, "path") != path) continue;
    std::string current = StringField(source, "source_id");
    if (current.size() == kIdLength && current.starts_with(text)) return current;
    return Status::Conflict(fmt::format(
        "{} changed: its working source is now {}, not --expected {}; read it again and "
        "merge before writing",
        path, ShortId(current), text));
  }
  return Status::NotFound(
      fmt::format("{} has no working source to match --expected {}; use --create", path, text));
}

}  // namespace

Status RunSources(Session& session, const Invocation&) {
  REEF_ASSIGN_OR_RETURN(json result, Call(session, "sources", json::object()));
  for (const json& source : ArrayField(result, "sources")) Remember(session, source);
  PrintResult(session, result, FormatSources(result));
  return Status::Ok();
}

Status RunRead(Session& session, const Invocation& invocation) {
  json args = {{"path", invocation.args.at(0)}};
  if (invocation.Has("revision")) args["revision"] = invocation.options.at("revision");
  REEF_ASSIGN_OR_RETURN(json result, Call(session, "read", std::move(args)));
  if (!invocation.Has("revision")) Remember(session, result);
  if (session.json_output) {
    PrintJson(result);
  } else {
    // Byte for byte: `reef read x > f` gives back what was written. Only the REPL ends an
    // unterminated last line, so its prompt starts on a line of its own. A wasm binary goes
    // to a file or pipe as is, never to a terminal.
    std::string text = StringField(result, "text");
    if (StringField(result, "kind") == "wasm") {
      auto bytes = Base64Decode(StringField(result, "base64"));
      if (!bytes.ok()) {
        return Status::Internal("the server sent a wasm source that is not base64: " +
                                bytes.status().message());
      }
      if (session.repl || ::isatty(STDOUT_FILENO) != 0) {
        std::printf("%s is a wasm binary of %zu bytes; to save it: reef read %s > FILE.wasm\n",
                    invocation.args.at(0).c_str(), bytes->size(), invocation.args.at(0).c_str());
        return Status::Ok();
      }
      text = std::move(*bytes);
    }
    std::fwrite(text.data(), 1, text.size(), stdout);
    if (session.repl && !text.empty() && text.back() != '\n') std::fputc('\n', stdout);
    std::fflush(stdout);
  }
  return Status::Ok();
}

Status RunWrite(Session& session, const Invocation& invocation) {
  const std::string& path = invocation.args.at(0);
  const std::string& file = invocation.args.at(1);
  std::string kind;
  if (file.ends_with(".c")) {
    kind = "c";
  } else if (file.ends_with(".wat")) {
    kind = "wat";
  } else if (file.ends_with(".wasm")) {
    kind = "wasm";  // built by another toolchain (AssemblyScript, Rust, ...): sent as base64
  } else {
    return Status::InvalidArgument(fmt::format(
        "cannot tell the language of '{}': the file name must end in .c, .wat or .wasm", file));
  }
  if (invocation.Has("expected") && invocation.Has("create")) {
    return Status::InvalidArgument("give --expected ID or --create, not both");
  }
  REEF_ASSIGN_OR_RETURN(
      std::string text,
      kind == "wasm"
          ? ReadSourceFile(file, kMaxWasmBytes,
                           "the largest wasm source (its base64 must fit the server's 1 MiB "
                           "request limit; a release build is much smaller than a debug one)")
          : ReadSourceFile(file, kMaxSourceBytes, "the largest source text the server stores"));
  json expected;
  if (invocation.Has("expected")) {
    REEF_ASSIGN_OR_RETURN(expected,
                          ExpectedSourceId(session, path, invocation.options.at("expected")));
  } else if (!invocation.Has("create")) {
    if (auto seen = session.source_ids.find(path); seen != session.source_ids.end()) {
      expected = seen->second;
    } else {
      // Nothing seen yet: take the current id; a missing path is created.
      Result<json> current = Call(session, "read", {{"path", path}});
      if (current.ok()) {
        expected = StringField(*current, "source_id");
      } else if (current.status().code() != Code::kNotFound) {
        return current.status();
      }
    }
  }
  REEF_ASSIGN_OR_RETURN(
      json result,
      Call(session, "write",
           {{"path", path},
            {"kind", kind},
            {kind == "wasm" ? "base64" : "text", kind == "wasm" ? Base64Encode(text) : text},
            {"expected", expected}}));
  Remember(session, result);
  PrintResult(session, result,
              fmt::format("wrote {} (source {})", path, ShortId(StringField(result, "source_id"))));
  return Status::Ok();
}

Status RunCommit(Session& session, const Invocation& invocation) {
  json args = {{"path", invocation.args.at(0)}};
  if (invocation.Has("message")) args["message"] = invocation.options.at("message");
  REEF_ASSIGN_OR_RETURN(json result, Call(session, "commit", std::move(args)));
  PrintResult(session, result,
              fmt::format("committed {} as revision {}", StringField(result, "path"),
                          StringField(result, "revision")));
  return Status::Ok();
}

Status RunHistory(Session& session, const Invocation& invocation) {
  REEF_ASSIGN_OR_RETURN(json result, Call(session, "history", {{"path", invocation.args.at(0)}}));
  PrintResult(session, result, FormatHistory(result));
  return Status::Ok();
}

Status RunRollback(Session& session, const Invocation& invocation) {
  REEF_ASSIGN_OR_RETURN(
      json result, Call(session, "rollback",
                        {{"path", invocation.args.at(0)}, {"revision", invocation.args.at(1)}}));
  Remember(session, result);
  PrintResult(
      session, result,
      fmt::format("{} restored from revision {} (source {}); not committed", invocation.args.at(0),
                  invocation.args.at(1), ShortId(StringField(result, "source_id"))));
  return Status::Ok();
}

}  // namespace reef::cli::detail
