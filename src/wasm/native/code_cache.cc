// CodeCache (code_cache.h): key, verified load, compile and atomic store, size bound.
#include "wasm/native/code_cache.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <map>
#include <optional>
#include <string_view>
#include <system_error>
#include <vector>

#include "core/ids.h"
#include "wabt/config.h"
#include "wasm/native/detail/cache_files.h"
#include "wasm/native/detail/rt_header.h"
#include "wasm/native/process.h"

namespace reef::wasm::native {

struct CodeCache::Wanted {
  std::string key;
  nlohmann::json parts;
  std::vector<std::string> argv;  // the compiler command the key names
};

// Its members are protected by CodeCache::mu_, which GUARDED_BY cannot name from here (the
// analysis knows no link between a flight and the cache that holds it).
struct CodeCache::Flight {
  bool done = false;
  std::optional<Result<CacheResult>> result;  // set when done
};

namespace {

constexpr uint64_t kMaxManifestBytes = 4ull << 20;
constexpr std::string_view kLibrarySuffix = ".so";
constexpr std::string_view kManifestSuffix = ".json";
constexpr std::string_view kTempMarker = ".tmp-";
// Loaded modules remembered (weakly) before expired ones are dropped.
constexpr size_t kLoadedPruneSize = 256;

std::string Sha256Text(std::string_view text) {
  return Sha256Hex(std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

bool IsKey(std::string_view text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// The key of a file name the cache writes ("<key>.so", "<key>.json", either with
// ".tmp-XXXXXX"), or "" for any other name.
std::string_view KeyOfFileName(std::string_view name, bool* temp) {
  const std::string_view key = name.substr(0, std::min<size_t>(64, name.size()));
  std::string_view rest = name.substr(key.size());
  if (!IsKey(key)) return {};
  if (rest.starts_with(kLibrarySuffix)) {
    rest.remove_prefix(kLibrarySuffix.size());
  } else if (rest.starts_with(kManifestSuffix)) {
    rest.remove_prefix(kManifestSuffix.size());
  } else {
    return {};
  }
  *temp = rest.starts_with(kTempMarker) && rest.size() == kTempMarker.size() + 6;
  return rest.empty() || *temp ? key : std::string_view();
}

// `--version` output of `compiler`, run once per process and path.
Result<std::string> CompilerVersion(const std::filesystem::path& compiler) {
  static Mutex mu;
  static auto* versions PT_GUARDED_BY(mu) = new std::map<std::string, std::string>();
  {
    MutexLock lock(mu);
    if (auto it = versions->find(compiler.string()); it != versions->end()) return it->second;
  }
  ProcessLimits limits;
  limits.wall_time = std::chrono::seconds(10);
  limits.address_space_bytes = 1ull << 30;
  REEF_ASSIGN_OR_RETURN(ProcessResult run,
                        RunProcess({compiler.string(), "--version"},
                                   {"PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C"}, "/", limits));
  if (!run.ok() || run.output.empty()) {
    return Status::Unavailable(fmt::format(
        "cannot identify the C compiler for the code cache key: `{} --version` failed ({}): {}",
        compiler.string(), run.timed_out ? "timed out" : fmt::format("exit code {}", run.exit_code),
        run.output));
  }
  MutexLock lock(mu);
  return versions->emplace(compiler.string(), run.output).first->second;
}

// True when `file` runs another compiler rather than being one: a script ("#!") or a known
// compiler cache or distributor. Its own size and time say nothing of what it runs.
bool IsCompilerWrapper(const std::filesystem::path& file) {
  static constexpr std::string_view kWrappers[] = {"ccache", "sccache", "distcc", "icecc"};
  const std::string name = file.filename().string();
  for (std::string_view wrapper : kWrappers) {
    if (name == wrapper) return true;
  }
  char head[2] = {};
  std::ifstream in(file, std::ios::binary);
  return in.read(head, 2) && head[0] == '#' && head[1] == '!';
}

// What identifies the compiler `compiler` names, without running it when it can (ccache's
// "mtime" check): the file it resolves to (symlinks followed, so switching `cc` to another
// compiler changes it), with its size and modification time, which an upgrade changes. A
// wrapper (a script, ccache) is also asked its `--version`, once per process, which reaches
// the compiler behind it.
Result<std::string> CompilerIdentity(const std::filesystem::path& compiler) {
  std::error_code error;
  const std::filesystem::path file = std::filesystem::canonical(compiler, error);
  struct stat info {};
  if (error || ::stat(file.c_str(), &info) != 0) {
    return Status::Unavailable(
        fmt::format("cannot identify the C compiler for the code cache key: {} cannot be examined",
                    compiler.string()));
  }
  std::string identity =
      fmt::format("{} size={} mtime_ns={}", file.string(), info.st_size,
                  int64_t{info.st_mtim.tv_sec} * 1'000'000'000 + info.st_mtim.tv_nsec);
  if (IsCompilerWrapper(file)) {
    REEF_ASSIGN_OR_RETURN(std::string version, CompilerVersion(compiler));
    identity += " version=" + version;
  }
  return identity;
}

const std::string& WasmRtHeaderSha256() {
  static const std::string hash = Sha256Text(detail::kWasmRtHeaderText);
  return hash;
}

// Empty when the manifest's exports and imports fit the module, else what differs.
std::string CheckAgainstModule(const Module& module, const detail::CacheManifest& manifest) {
  size_t next = 0;
  for (const ImportInfo& import : module.imports()) {
    if (import.kind != ExternKind::kFunc) continue;
    if (next >= manifest.imports.size()) return "manifest lists fewer imports than the module";
    const NativeImport& listed = manifest.imports[next++];
    if (listed.module != import.module || listed.name != import.name ||
        listed.signature != import.signature) {
      return fmt::format("manifest import {} is {}.{}, the module's is {}.{}", next - 1,
                         listed.module, listed.name, import.module, import.name);
    }
  }
  if (next != manifest.imports.size()) return "manifest lists more imports than the module";
  for (const NativeExport& e : manifest.exports) {
    const ExportInfo* found = module.FindExport(e.name);
    if (found == nullptr || found->kind != ExternKind::kFunc || found->signature != e.signature) {
      return fmt::format(
          "manifest export '{}' is not a function export of the module with "
          "signature {}",
          e.name, e.signature.ToString());
    }
  }
  return "";
}

}  // namespace

std::string_view CacheOutcomeName(CacheOutcome outcome) {
  switch (outcome) {
    case CacheOutcome::kHit:
      return "hit";
    case CacheOutcome::kCompiled:
      return "compiled";
    case CacheOutcome::kRebuilt:
      return "rebuilt";
  }
  return "unknown";
}

// ---- Opening and keys ---------------------------------------------------------------------

Result<std::unique_ptr<CodeCache>> CodeCache::Open(std::filesystem::path dir,
                                                   CodeCacheOptions options) {
  if (dir.empty()) return Status::InvalidArgument("code cache directory is empty");
  std::filesystem::path prefix;
  for (const std::filesystem::path& part : dir) {
    prefix /= part;
    if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) {
      return Status::Unavailable(fmt::format("cannot create code cache directory '{}': {}",
                                             prefix.string(),
                                             std::generic_category().message(errno)));
    }
  }
  struct stat info {};
  if (::stat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    return Status::Unavailable(
        fmt::format("code cache path '{}' is not a directory", dir.string()));
  }
  if (info.st_uid != ::geteuid() || (info.st_mode & 022) != 0) {
    return Status::FailedPrecondition(fmt::format(
        "code cache directory '{}' (mode {:o}) must be owned by this user and writable by no "
        "one else: Reef loads code from it (chmod 700 it)",
        dir.string(), info.st_mode & 07777));
  }
  return std::unique_ptr<CodeCache>(new CodeCache(std::move(dir), options));
}

Result<CodeCache::Wanted> CodeCache::MakeKey(const Module& module, const CompileOptions& options,
                                             bool has_pass, uint32_t pass_version) const {
  REEF_ASSIGN_OR_RETURN(std::filesystem::path compiler, FindCompiler(options));
  REEF_ASSIGN_OR_RETURN(std::string identity, CompilerIdentity(compiler));
  Wanted wanted;
  wanted.argv = CompileCommand(compiler, options);
  wanted.parts = {
      {"manifest_format", detail::kManifestFormat},
      {"tier", kNativeTierVersion},
      {"module", module.id()},
      {"pass", has_pass ? nlohmann::json(pass_version) : nlohmann::json(nullptr)},
      {"wabt", WABT_VERSION_STRING},
      {"compiler", compiler.string()},
      {"compiler_identity", identity},
      {"argv", wanted.argv},
      {"glue_abi", kGlueAbiVersion},
      {"wasm_rt_h", WasmRtHeaderSha256()},
  };
  wanted.key = Sha256Text(detail::ManifestDump(wanted.parts));
  return wanted;
}

Result<std::string> CodeCache::Key(const Module& module, const CompileOptions& options,
                                   bool has_pass, uint32_t pass_version) const {
  REEF_ASSIGN_OR_RETURN(Wanted wanted, MakeKey(module, options, has_pass, pass_version));
  return wanted.key;
}

std::filesystem::path CodeCache::LibraryPath(std::string_view key) const {
  return dir_ / fmt::format("{}{}", key, kLibrarySuffix);
}

std::filesystem::path CodeCache::ManifestPath(std::string_view key) const {
  return dir_ / fmt::format("{}{}", key, kManifestSuffix);
}

CodeCacheStats CodeCache::stats() const {
  MutexLock lock(mu_);
  return stats_;
}

// ---- GetOrCompile -------------------------------------------------------------------------

Result<CacheResult> CodeCache::GetOrCompile(std::shared_ptr<const Module> module,
                                            const CompileOptions& options, const IrPass& pass,
                                            uint32_t pass_version) {
  if (module == nullptr) return Status::InvalidArgument("code cache: no module to compile");
  REEF_ASSIGN_OR_RETURN(Wanted wanted,
                        MakeKey(*module, options, static_cast<bool>(pass), pass_version));
  auto flight = std::make_shared<Flight>();
  {
    MutexLock lock(mu_);
    if (std::optional<CacheResult> hit = LoadedHit(wanted.key)) return *std::move(hit);
    if (auto it = flights_.find(wanted.key); it != flights_.end()) {
      std::shared_ptr<Flight> other = it->second;
      while (!other->done) flight_done_.Wait(mu_);
      if (!other->result->ok()) return other->result->status();
      ++stats_.hits;  // built by the caller it waited for
      return CacheResult{(*other->result)->module, CacheOutcome::kHit, wanted.key, "",
                         Status::Ok()};
    }
    flights_.emplace(wanted.key, flight);
  }

  Result<CacheResult> result = Build(module, options, pass, wanted);

  {
    MutexLock lock(mu_);
    if (result.ok()) {
      const CacheResult& r = *result;
      if (r.outcome == CacheOutcome::kHit) ++stats_.hits;
      if (r.outcome != CacheOutcome::kHit) ++stats_.compiles;
      if (r.outcome == CacheOutcome::kRebuilt) ++stats_.rebuilds;
      if (!r.store_status.ok()) ++stats_.store_failures;
      if (loaded_.size() >= kLoadedPruneSize) {
        std::erase_if(loaded_, [](const auto& entry) { return entry.second.expired(); });
      }
      loaded_[wanted.key] = r.module;
    }
    flight->result = result;
    flight->done = true;
    flights_.erase(wanted.key);
  }
  flight_done_.NotifyAll();
  return result;
}

std::optional<CacheResult> CodeCache::LoadedHit(const std::string& key) {
  auto it = loaded_.find(key);
  if (it == loaded_.end()) return std::nullopt;
  std::shared_ptr<const NativeModule> still = it->second.lock();
  if (still == nullptr) return std::nullopt;
  ++stats_.hits;
  return CacheResult{std::move(still), CacheOutcome::kHit, key, "", Status::Ok()};
}

Result<std::optional<CacheResult>> CodeCache::Find(const std::shared_ptr<const Module>& module,
                                                   const CompileOptions& options, bool has_pass,
                                                   uint32_t pass_version) {
  if (module == nullptr) return Status::InvalidArgument("code cache: no module to find");
  REEF_ASSIGN_OR_RETURN(Wanted wanted, MakeKey(*module, options, has_pass, pass_version));
  {
    MutexLock lock(mu_);
    if (std::optional<CacheResult> hit = LoadedHit(wanted.key)) return hit;
    if (flights_.contains(wanted.key)) return std::optional<CacheResult>();
  }
  std::string why;
  std::shared_ptr<const NativeModule> hit = LoadEntry(module, wanted, &why);
  if (hit == nullptr) return std::optional<CacheResult>();
  MutexLock lock(mu_);
  ++stats_.hits;
  loaded_[wanted.key] = hit;
  return std::optional<CacheResult>(
      CacheResult{std::move(hit), CacheOutcome::kHit, wanted.key, "", Status::Ok()});
}

Result<CacheResult> CodeCache::Build(const std::shared_ptr<const Module>& module,
                                     const CompileOptions& options, const IrPass& pass,
                                     const Wanted& wanted) {
  std::string why;
  if (std::shared_ptr<const NativeModule> hit = LoadEntry(module, wanted, &why)) {
    return CacheResult{std::move(hit), CacheOutcome::kHit, wanted.key, "", Status::Ok()};
  }
  if (!why.empty()) RemoveEntry(wanted.key);
  REEF_ASSIGN_OR_RETURN(CacheResult result, CompileAndStore(module, options, pass, wanted));
  if (!why.empty()) {
    result.outcome = CacheOutcome::kRebuilt;
    result.rebuild_reason = std::move(why);
  }
  return result;
}

std::shared_ptr<const NativeModule> CodeCache::LoadEntry(
    const std::shared_ptr<const Module>& module, const Wanted& wanted, std::string* why) {
  Result<std::string> text = detail::ReadWholeFile(ManifestPath(wanted.key), kMaxManifestBytes);
  if (!text.ok()) {
    if (text.status().code() != Code::kNotFound) *why = text.status().message();
    return nullptr;  // no manifest: a miss (a library alone is overwritten by the store)
  }
  Result<detail::CacheManifest> manifest = detail::DecodeManifest(*text);
  if (!manifest.ok()) {
    *why = manifest.status().message();
    return nullptr;
  }
  if (manifest->key != wanted.key) {
    *why = fmt::format("manifest is for key {}, not {}", manifest->key, wanted.key);
    return nullptr;
  }
  if (manifest->library_bytes > options_.max_library_bytes) {
    *why = fmt::format("manifest names a library of {} bytes, over the {} allowed",
                       manifest->library_bytes, options_.max_library_bytes);
    return nullptr;
  }
  const std::filesystem::path library = LibraryPath(wanted.key);
  Result<std::string> bytes = detail::ReadWholeFile(library, options_.max_library_bytes);
  if (!bytes.ok()) {
    *why = bytes.status().code() == Code::kNotFound ? "the library file is missing"
                                                    : bytes.status().message();
    return nullptr;
  }
  if (bytes->size() != manifest->library_bytes) {
    *why = fmt::format("library has {} bytes, its manifest says {} (truncated or replaced)",
                       bytes->size(), manifest->library_bytes);
    return nullptr;
  }
  if (Sha256Text(*bytes) != manifest->library_sha256) {
    *why = "library's SHA-256 differs from its manifest (damaged or replaced)";
    return nullptr;
  }
  if (std::string mismatch = CheckAgainstModule(*module, *manifest); !mismatch.empty()) {
    *why = std::move(mismatch);
    return nullptr;
  }
  // Between the check and dlopen the file can only be replaced by another complete build of
  // the same key (writers rename whole files) or removed (then dlopen fails: rebuilt).
  Result<std::shared_ptr<const NativeModule>> loaded =
      NativeModule::LoadFile(module, library, manifest->interface(), manifest->stats);
  if (!loaded.ok()) {
    *why = loaded.status().message();
    return nullptr;
  }
  ::utimensat(AT_FDCWD, ManifestPath(wanted.key).c_str(), nullptr, 0);  // recently used
  return *loaded;
}

Result<CacheResult> CodeCache::CompileAndStore(const std::shared_ptr<const Module>& module,
                                               const CompileOptions& options, const IrPass& pass,
                                               const Wanted& wanted) {
  REEF_ASSIGN_OR_RETURN(GeneratedC c, GenerateC(*module, pass));
  REEF_ASSIGN_OR_RETURN(SharedObject built, Compile(c, options));
  CacheResult result{nullptr, CacheOutcome::kCompiled, wanted.key, "", Status::Ok()};
  if (built.command != wanted.argv) {  // the compiler found changed since the key was made
    result.store_status = Status::FailedPrecondition(
        "the compiler command changed while compiling; the library is not stored");
  }
  Result<std::string> bytes = Status::Unavailable("not read");
  if (result.store_status.ok()) {
    bytes = detail::ReadWholeFile(built.library, options_.max_library_bytes);
    if (!bytes.ok()) result.store_status = bytes.status();
  }
  // The library is loaded from its temporary name, complete and written by this call, then
  // renamed into place: no other writer or remover can change what is loaded.
  std::optional<std::filesystem::path> temp;
  if (result.store_status.ok()) {
    Result<std::filesystem::path> written =
        detail::WriteTempFile(dir_, wanted.key + std::string(kLibrarySuffix), *bytes);
    if (written.ok()) temp = *written;
    if (!written.ok()) result.store_status = written.status();
  }
  if (temp.has_value()) {
    Result<std::shared_ptr<const NativeModule>> loaded =
        NativeModule::LoadFile(module, *temp, c.interface(), built.stats);
    if (!loaded.ok()) {
      ::unlink(temp->c_str());
      return loaded.status();
    }
    result.module = *loaded;
    result.store_status = detail::CommitFile(*temp, LibraryPath(wanted.key));
  }
  if (result.store_status.ok()) {
    const detail::CacheManifest manifest{wanted.key,    wanted.parts, Sha256Text(*bytes),
                                         bytes->size(), c.exports,    c.imports,
                                         c.globals,     c.has_start,  built.stats};
    Result<std::filesystem::path> written = detail::WriteTempFile(
        dir_, wanted.key + std::string(kManifestSuffix), detail::EncodeManifest(manifest));
    result.store_status =
        written.ok() ? detail::CommitFile(*written, ManifestPath(wanted.key)) : written.status();
  }
  if (result.module == nullptr) {
    REEF_ASSIGN_OR_RETURN(result.module, NativeModule::Load(module, std::move(built), c));
  }
  if (result.store_status.ok()) Evict(wanted.key);
  return result;
}

// ---- Removal ------------------------------------------------------------------------------

void CodeCache::RemoveEntry(const std::string& key) {
  ::unlink(ManifestPath(key).c_str());  // the manifest first: without it the entry is absent
  ::unlink(LibraryPath(key).c_str());
}

void CodeCache::Evict(const std::string& keep) {
  struct Entry {
    std::filesystem::file_time_type used{};     // the manifest's mtime
    std::filesystem::file_time_type written{};  // the library's mtime
    uint64_t bytes = 0;                         // the library's size
    bool has_manifest = false;
  };
  std::map<std::string, Entry, std::less<>> entries;
  const auto now = std::filesystem::file_time_type::clock::now();
  std::error_code ec;
  for (const auto& file : std::filesystem::directory_iterator(dir_, ec)) {
    const std::string name = file.path().filename().string();
    bool temp = false;
    const std::string_view key = KeyOfFileName(name, &temp);
    std::error_code file_ec;
    const auto modified = file.last_write_time(file_ec);
    if (key.empty() || file_ec) continue;
    if (temp) {  // a crashed writer's, once old enough that no writer can still own it
      if (now - modified > options_.stale_temp_age) ::unlink(file.path().c_str());
      continue;
    }
    Entry& entry = entries[std::string(key)];
    if (name.ends_with(kManifestSuffix)) {
      entry.has_manifest = true;
      entry.used = modified;
    } else {
      entry.bytes = file.file_size(file_ec);
      entry.written = modified;
    }
  }
  uint64_t total = 0;
  std::vector<std::pair<std::filesystem::file_time_type, std::string>> by_use;
  for (const auto& [key, entry] : entries) {
    // A library without a manifest is a writer's between its two renames, or one that
    // crashed there; once old, nothing will ever name it.
    if (!entry.has_manifest && now - entry.written > options_.stale_temp_age) {
      ::unlink(LibraryPath(key).c_str());
      continue;
    }
    total += entry.bytes;
    if (entry.has_manifest && key != keep) by_use.emplace_back(entry.used, key);
  }
  if (options_.max_bytes == 0 || total <= options_.max_bytes) return;
  std::sort(by_use.begin(), by_use.end());
  uint64_t evicted = 0;
  for (const auto& [used, key] : by_use) {
    if (total <= options_.max_bytes) break;
    RemoveEntry(key);
    total -= std::min(total, entries[key].bytes);
    ++evicted;
  }
  MutexLock lock(mu_);
  stats_.evictions += evicted;
}

Status CodeCache::Clear() {
  std::error_code ec;
  for (const auto& file : std::filesystem::directory_iterator(dir_, ec)) {
    const std::string name = file.path().filename().string();
    bool temp = false;
    if (KeyOfFileName(name, &temp).empty()) continue;
    if (::unlink(file.path().c_str()) != 0 && errno != ENOENT) {
      return Status::Unavailable(fmt::format("cannot remove '{}': {}", file.path().string(),
                                             std::generic_category().message(errno)));
    }
  }
  if (ec) {
    return Status::Unavailable(
        fmt::format("cannot list code cache '{}': {}", dir_.string(), ec.message()));
  }
  return Status::Ok();
}

}  // namespace reef::wasm::native
