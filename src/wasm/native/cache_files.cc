// The code cache's manifest format and durable file writes (detail/cache_files.h).
#include "wasm/native/detail/cache_files.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <system_error>

#include "core/ids.h"

namespace reef::wasm::native::detail {
namespace {

using nlohmann::json;

constexpr ValType kAllTypes[] = {ValType::kI32,      ValType::kI64,  ValType::kF32,
                                 ValType::kF64,      ValType::kV128, ValType::kFuncRef,
                                 ValType::kExternRef};

Status FileError(std::string_view what, const std::filesystem::path& path) {
  return Status::Unavailable(fmt::format("code cache: {} '{}': {}", what, path.string(),
                                         std::generic_category().message(errno)));
}

bool IsHex64(const std::string& text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

bool IsCIdentifier(const std::string& text) {
  if (text.empty() || text.size() > 256 || (text[0] >= '0' && text[0] <= '9')) return false;
  return std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

json TypesToJson(const std::vector<ValType>& types) {
  json out = json::array();
  for (ValType type : types) out.push_back(std::string(ValTypeName(type)));
  return out;
}

std::vector<ValType> TypesFromJson(const json& in) {
  std::vector<ValType> out;
  for (const json& name : in) {
    const std::string text = name.get<std::string>();
    auto found = std::find_if(std::begin(kAllTypes), std::end(kAllTypes),
                              [&text](ValType type) { return ValTypeName(type) == text; });
    if (found == std::end(kAllTypes)) throw std::invalid_argument("unknown value type " + text);
    out.push_back(*found);
  }
  return out;
}

CacheManifest FromJson(const json& in) {
  if (in.at("format").get<int>() != kManifestFormat) {
    throw std::invalid_argument(
        fmt::format("format {} (this build reads {})", in.at("format").dump(), kManifestFormat));
  }
  CacheManifest out;
  out.key = in.at("key").get<std::string>();
  out.key_parts = in.at("key_parts");
  const json& library = in.at("library");
  out.library_sha256 = library.at("sha256").get<std::string>();
  out.library_bytes = library.at("bytes").get<uint64_t>();
  if (!IsHex64(out.key) || !IsHex64(out.library_sha256)) {
    throw std::invalid_argument("key or library hash is not 64 lowercase hex characters");
  }
  for (const json& e : in.at("exports")) {
    NativeExport x{e.at("name").get<std::string>(),
                   {TypesFromJson(e.at("params")), TypesFromJson(e.at("results"))},
                   e.at("thunk").get<std::string>()};
    if (!IsCIdentifier(x.thunk)) throw std::invalid_argument("thunk is not a C identifier");
    out.exports.push_back(std::move(x));
  }
  for (const json& i : in.at("imports")) {
    out.imports.push_back(
        NativeImport{i.at("module").get<std::string>(),
                     i.at("name").get<std::string>(),
                     {TypesFromJson(i.at("params")), TypesFromJson(i.at("results"))}});
  }
  for (const json& g : in.at("globals")) {
    const std::vector<ValType> type = TypesFromJson(json::array({g.at("type")}));
    out.globals.push_back(NativeGlobal{type[0], g.at("mutable").get<bool>()});
  }
  out.has_start = in.at("has_start").get<bool>();
  const json& stats = in.at("compile");
  out.stats.cpu_seconds = static_cast<double>(stats.at("cpu_us").get<uint64_t>()) / 1e6;
  out.stats.wall_seconds = static_cast<double>(stats.at("wall_us").get<uint64_t>()) / 1e6;
  out.stats.c_bytes = stats.at("c_bytes").get<size_t>();
  return out;
}

}  // namespace

std::string ManifestDump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string EncodeManifest(const CacheManifest& manifest) {
  json out;
  out["format"] = kManifestFormat;
  out["key"] = manifest.key;
  out["key_parts"] = manifest.key_parts;
  out["library"] = {{"sha256", manifest.library_sha256}, {"bytes", manifest.library_bytes}};
  json exports = json::array();
  for (const NativeExport& e : manifest.exports) {
    exports.push_back({{"name", e.name},
                       {"params", TypesToJson(e.signature.params)},
                       {"results", TypesToJson(e.signature.results)},
                       {"thunk", e.thunk}});
  }
  out["exports"] = std::move(exports);
  json imports = json::array();
  for (const NativeImport& i : manifest.imports) {
    imports.push_back({{"module", i.module},
                       {"name", i.name},
                       {"params", TypesToJson(i.signature.params)},
                       {"results", TypesToJson(i.signature.results)}});
  }
  out["imports"] = std::move(imports);
  json globals = json::array();
  for (const NativeGlobal& g : manifest.globals) {
    globals.push_back({{"type", std::string(ValTypeName(g.type))}, {"mutable", g.mutable_}});
  }
  out["globals"] = std::move(globals);
  out["has_start"] = manifest.has_start;
  // Whole microseconds: integers dump and parse back to the same text, so the checksum holds.
  out["compile"] = {
      {"cpu_us", static_cast<uint64_t>(std::llround(manifest.stats.cpu_seconds * 1e6))},
      {"wall_us", static_cast<uint64_t>(std::llround(manifest.stats.wall_seconds * 1e6))},
      {"c_bytes", manifest.stats.c_bytes}};
  const std::string body = ManifestDump(out);
  out["checksum"] =
      Sha256Hex(std::span(reinterpret_cast<const uint8_t*>(body.data()), body.size()));
  return ManifestDump(out) + "\n";
}

Result<CacheManifest> DecodeManifest(std::string_view text) {
  json in = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!in.is_object()) return Status::DataLoss("manifest is not a JSON object");
  auto checksum = in.find("checksum");
  if (checksum == in.end() || !checksum->is_string()) {
    return Status::DataLoss("manifest has no checksum");
  }
  const std::string expected = checksum->get<std::string>();
  in.erase(checksum);
  const std::string body = ManifestDump(in);
  if (Sha256Hex(std::span(reinterpret_cast<const uint8_t*>(body.data()), body.size())) !=
      expected) {
    return Status::DataLoss("manifest checksum differs: its text changed after it was written");
  }
  try {
    return FromJson(in);
  } catch (const std::exception& e) {
    return Status::DataLoss(fmt::format("manifest refused: {}", e.what()));
  }
}

Result<std::string> ReadWholeFile(const std::filesystem::path& path, uint64_t max_bytes) {
  // O_NONBLOCK: a FIFO put in a file's place must not block the open (it is refused below);
  // O_NOFOLLOW: nor may a symbolic link lead elsewhere.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0 && errno == ENOENT)
    return Status::NotFound(fmt::format("no file '{}'", path.string()));
  if (fd < 0 && errno == ELOOP) {
    return Status::FailedPrecondition(
        fmt::format("'{}' is a symbolic link: refused", path.string()));
  }
  if (fd < 0) return FileError("cannot open", path);
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    Status status = FileError("cannot stat", path);
    ::close(fd);
    return status;
  }
  // Reef loads code from these files: only a regular file this user owns is taken (one that
  // another user planted while the directory was open to them is not).
  if (!S_ISREG(info.st_mode) || info.st_uid != ::geteuid()) {
    ::close(fd);
    return Status::FailedPrecondition(
        fmt::format("'{}' is not a regular file owned by this user: refused", path.string()));
  }
  if (static_cast<uint64_t>(info.st_size) > max_bytes) {
    ::close(fd);
    return Status::LimitExceeded(fmt::format("'{}' has {} bytes, more than the {} allowed",
                                             path.string(), info.st_size, max_bytes));
  }
  std::string bytes(static_cast<size_t>(info.st_size), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Status status = FileError("cannot read", path);
      ::close(fd);
      return status;
    }
    if (n == 0) break;  // shrank since fstat: the caller's size check sees it
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  bytes.resize(done);
  return bytes;
}

Result<std::filesystem::path> WriteTempFile(const std::filesystem::path& dir, std::string_view name,
                                            std::string_view bytes) {
  std::string temp = (dir / fmt::format("{}.tmp-XXXXXX", name)).string();
  const int fd = ::mkstemp(temp.data());  // mode 0600 until written
  if (fd < 0) return FileError("cannot create", temp);
  bool written = true;
  while (written && !bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    written = n > 0;
    if (written) bytes.remove_prefix(static_cast<size_t>(n));
  }
  // Read-only from here on: a loaded library is mapped from its file, so the file must never
  // change in place (writers replace whole files by rename).
  Status status = written && ::fchmod(fd, 0400) == 0 && ::fsync(fd) == 0
                      ? Status::Ok()
                      : FileError("cannot write", temp);
  if (::close(fd) != 0 && status.ok()) status = FileError("cannot close", temp);
  if (!status.ok()) {
    ::unlink(temp.c_str());
    return status;
  }
  return std::filesystem::path(temp);
}

Status CommitFile(const std::filesystem::path& temp, const std::filesystem::path& target) {
  if (::rename(temp.c_str(), target.c_str()) != 0) {
    Status status = FileError("cannot rename into", target);
    ::unlink(temp.c_str());
    return status;
  }
  const std::filesystem::path dir = target.parent_path();
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return FileError("cannot open", dir);
  Status status = ::fsync(dir_fd) == 0 ? Status::Ok() : FileError("cannot sync", dir);
  ::close(dir_fd);
  return status;
}

}  // namespace reef::wasm::native::detail
