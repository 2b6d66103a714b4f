// The code cache's files (native/code_cache.h): the manifest format and durable writes.
//
// A manifest is one JSON object. Its "checksum" member is the lowercase hex SHA-256 of the
// compact dump (ManifestDump) of the object without it, so a manifest whose text changed
// after it was written (a flipped bit that still parses, a half-copied file) is refused
// rather than trusted: its export signatures size the buffers the host hands to the library.
//
// Thread ownership: pure functions and per-call files; any thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "wasm/native/c_gen.h"
#include "wasm/native/compiler.h"

namespace reef::wasm::native::detail {

// Version of the manifest's layout; a manifest of another version is refused (rebuilt).
inline constexpr int kManifestFormat = 2;

struct CacheManifest {
  std::string key;             // 64 lowercase hex characters: SHA-256 of key_parts' dump
  nlohmann::json key_parts;    // the object the key hashes (code_cache.h lists its members)
  std::string library_sha256;  // 64 lowercase hex characters: the library file's SHA-256
  uint64_t library_bytes = 0;  // the library file's size, bytes
  std::vector<NativeExport> exports;
  std::vector<NativeImport> imports;
  std::vector<NativeGlobal> globals;
  bool has_start = false;
  CompileStats stats;  // of the compile that built the library

  NativeInterface interface() const { return {exports, imports, globals, has_start}; }
};

// The canonical compact text of `json` (sorted keys; invalid UTF-8 replaced, never thrown).
std::string ManifestDump(const nlohmann::json& json);

// The manifest as JSON text, with its checksum.
std::string EncodeManifest(const CacheManifest& manifest);

// Parses and checks a manifest. Errors: DataLoss naming the first problem: not a JSON
// object, checksum missing or different, another format, a missing or ill-typed member, a
// key or hash that is not 64 hex characters, an unknown value type, a thunk that is not a C
// identifier.
Result<CacheManifest> DecodeManifest(std::string_view text);

// The whole of `path`, a regular file this user owns (never a symbolic link; a FIFO does not
// block). Errors: NotFound when it does not exist; FailedPrecondition for anything else in its
// place; LimitExceeded when it is longer than `max_bytes`; Unavailable naming the path and
// errno's text otherwise.
Result<std::string> ReadWholeFile(const std::filesystem::path& path, uint64_t max_bytes);

// Writes `bytes` to a new file "<dir>/<name>.tmp-XXXXXX", makes it read-only (mode 0400),
// fsyncs and closes it, and returns its path. Errors: Unavailable naming the path and errno's text
// (the partial file is removed).
Result<std::filesystem::path> WriteTempFile(const std::filesystem::path& dir, std::string_view name,
                                            std::string_view bytes);

// Renames `temp` to `target` (atomically replacing it), then fsyncs the directory of
// `target` so the rename survives a crash. REQUIRES: both in the same directory.
// Errors: Unavailable naming the path and errno's text (`temp` is removed).
Status CommitFile(const std::filesystem::path& temp, const std::filesystem::path& target);

}  // namespace reef::wasm::native::detail
