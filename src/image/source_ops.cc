// The image's source store ops (rows of ops.cc's table): sources, read, write, commit,
// history and rollback, over code::SourceStore. Text kinds (c, wat) travel as `text`; a wasm
// binary as `base64` (docs/protocol.md "write").
#include <fmt/format.h>

#include <string>

#include "code/source.h"
#include "core/base64.h"
#include "image/detail/op_table.h"

namespace reef::image::detail {

using json = nlohmann::json;

Result<json> SourcesOp(Ctx& c) {
  REEF_ASSIGN_OR_RETURN(auto entries, c.s.store->List());
  json sources = json::array();
  for (const code::SourceEntry& entry : entries) {
    sources.push_back({{"path", entry.path},
                       {"kind", std::string(code::SourceKindName(entry.kind))},
                       {"source_id", entry.id}});
  }
  return json{{"sources", std::move(sources)}};
}

Result<json> ReadOp(Ctx& c) {
  REEF_ASSIGN_OR_RETURN(std::string path, c.args.String("path"));
  REEF_ASSIGN_OR_RETURN(auto revision, c.args.OptionalString("revision"));
  REEF_ASSIGN_OR_RETURN(code::SourceFile file, revision ? c.s.store->ReadRevision(path, *revision)
                                                        : c.s.store->Read(path));
  // A wasm binary is not text: it travels as base64, under a name of its own.
  bool binary = file.kind == code::SourceKind::kWasm;
  return json{{"path", file.path},
              {"kind", std::string(code::SourceKindName(file.kind))},
              {binary ? "base64" : "text", binary ? Base64Encode(file.text) : file.text},
              {"source_id", file.id}};
}

Result<json> WriteOp(Ctx& c) {
  REEF_ASSIGN_OR_RETURN(std::string path, c.args.String("path"));
  REEF_ASSIGN_OR_RETURN(std::string kind_name, c.args.String("kind"));
  auto kind = code::ParseSourceKind(kind_name);
  if (!kind.ok()) return c.args.Invalid("kind", kind.status().message());
  // Text kinds carry `text`; a wasm binary carries `base64` (and no `text`).
  bool binary = *kind == code::SourceKind::kWasm;
  const char* field = binary ? "base64" : "text";
  if (c.args.Find(binary ? "text" : "base64") != nullptr) {
    return c.args.Invalid(binary ? "text" : "base64",
                          binary ? "is for kinds c and wat; a wasm binary goes in base64"
                                 : "is for kind wasm; c and wat sources go in text");
  }
  const json* text = c.args.Find(field);
  if (text == nullptr || !text->is_string()) return c.args.Invalid(field, "must be a string");
  const std::string& given = text->get_ref<const std::string&>();
  std::string decoded;
  if (binary) {
    // Counted before decoding (a server may take requests larger than the source limit): a
    // binary of at most kMaxSourceBytes has at most this much base64.
    constexpr std::size_t kMaxBase64 = 4 * ((code::kMaxSourceBytes + 2) / 3);
    if (given.size() > kMaxBase64) {
      return Status::LimitExceeded(
          fmt::format("base64 of {} characters: a wasm source is at most {} bytes ({} characters)",
                      given.size(), code::kMaxSourceBytes, kMaxBase64));
    }
    auto bytes = Base64Decode(given);
    if (!bytes.ok()) return c.args.Invalid("base64", bytes.status().message());
    decoded = std::move(*bytes);
  }
  if (c.args.Find("expected") == nullptr) {
    return c.args.Invalid("expected",
                          "is required: the source_id last read, or null to create the path");
  }
  REEF_ASSIGN_OR_RETURN(auto expected, c.args.OptionalString("expected"));
  REEF_ASSIGN_OR_RETURN(std::string id,
                        c.s.store->Write(path, *kind, binary ? decoded : given, expected));
  c.change.actors = std::vector<std::string>{};
  c.change.paths = {path};
  return json{{"path", path}, {"source_id", id}};
}

Result<json> CommitOp(Ctx& c) {
  REEF_ASSIGN_OR_RETURN(std::string path, c.args.String("path"));
  REEF_ASSIGN_OR_RETURN(auto message, c.args.OptionalString("message"));
  REEF_ASSIGN_OR_RETURN(
      std::string revision,
      c.s.store->Commit(path, message ? std::optional<std::string_view>(*message) : std::nullopt));
  c.change.actors = std::vector<std::string>{};
  c.change.paths = {path};
  return json{{"path", path}, {"revision", revision}};
}

Result<json> HistoryOp(Ctx& c) {
  REEF_ASSIGN_OR_RETURN(std::string path, c.args.String("path"));
  REEF_ASSIGN_OR_RETURN(auto revisions, c.s.store->History(path));
  if (revisions.empty()) {
    // Never committed: fine for an existing working source, not_found for an unknown path.
    REEF_RETURN_IF_ERROR(c.s.store->Read(path).status());
  }
  json rows = json::array();
  for (const code::Revision& r : revisions) {
    rows.push_back({{"revision", r.revision},
                    {"source_id", r.source_id},
                    {"kind", std::string(code::SourceKindName(r.kind))},
                    {"unix_ms", r.time_ms},
                    {"message", r.message ? json(*r.message) : json(nullptr)}});
  }
  return json{{"path", path}, {"revisions", std::move(rows)}};
}

Result<json> RollbackOp(Ctx& c) {
  REEF_ASSIGN_OR_RETURN(std::string path, c.args.String("path"));
  REEF_ASSIGN_OR_RETURN(std::string revision, c.args.String("revision"));
  REEF_ASSIGN_OR_RETURN(std::string id, c.s.store->Rollback(path, revision));
  c.change.actors = std::vector<std::string>{};
  c.change.paths = {path};
  return json{{"path", path}, {"source_id", id}};
}

}  // namespace reef::image::detail
