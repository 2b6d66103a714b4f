// CodeCache: the native tier's compiled libraries, kept on disk so that a module compiled
// once loads again (in this process or after a restart) without wabt or the C compiler.
//
// Entries live in one directory (`reef serve` passes "<data dir>/cache/native", or the
// --native-cache directory), two files each:
//   <key>.so    the shared object exactly as the compiler wrote it (mode 0400: a loaded
//               library is mapped from its file, which must never change in place)
//   <key>.json  its manifest (detail/cache_files.h): the key's parts, the library's SHA-256
//               and size, its exports and imports, what the compile cost; checksummed
// The key is the SHA-256 of everything that changes the library: the module's bytes (its id),
// whether an IR pass ran and its version, kNativeTierVersion, the wabt version, the resolved
// compiler path with its size and modification time, the exact compiler argv (CompileCommand, so
// the optimisation level and extra flags), kGlueAbiVersion and the SHA-256 of rt/wasm-rt.h. The
// wall-time and address-space limits, the temporary directory and the environment are not part of
// it.
//
// Writes are atomic: each file is written under a temporary name in the directory, fsynced
// and renamed into place, the library before its manifest. A hit is trusted only when the
// manifest parses, its checksum holds, its key is the wanted key, the library has the size
// and SHA-256 the manifest names, and the exports and imports agree with the module.
// Anything else (damaged, truncated, foreign, stale) is removed and rebuilt, never loaded.
//
// Thread ownership: any thread. GetOrCompile blocks for a whole compile (seconds): never call
// it on a reactor or a network thread; native/compile_service.h runs it off them. Several
// CodeCaches, in one process or in several, may share a directory; within one CodeCache,
// callers asking for the same key at once wait for one build and share its result.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/mutex.h"
#include "core/status.h"
#include "wasm/module.h"
#include "wasm/native/c_gen.h"
#include "wasm/native/compiler.h"
#include "wasm/native/native_module.h"

namespace reef::wasm::native {

// Version of what the native tier makes of a module beyond the inputs the key names (the C
// generation, Reef's rewrites of wabt's output, the glue's code). Bump it with any change to
// c_gen.cc or c_glue.cc that changes the C for the same module, so old libraries are rebuilt.
inline constexpr uint32_t kNativeTierVersion = 3;

struct CodeCacheOptions {
  // Bound on the bytes of all libraries in the directory. After each store, the least
  // recently used entries (manifest mtime; a hit touches it) are removed until the total fits;
  // the entry just stored always stays. 0: unbounded.
  uint64_t max_bytes = 1ull << 30;
  // A manifest naming a larger library is refused as damaged, bytes.
  uint64_t max_library_bytes = 256ull << 20;
  // Temporary files older than this are a crashed writer's and are removed on the next store.
  std::chrono::seconds stale_temp_age{3600};
};

enum class CacheOutcome : uint8_t {
  kHit,       // loaded from the directory, still loaded in this CodeCache, or just built by
              // a concurrent caller of this CodeCache
  kCompiled,  // no entry: compiled and stored
  kRebuilt,   // an entry failed verification or loading: removed, compiled and stored
};
// "hit", "compiled", "rebuilt".
std::string_view CacheOutcomeName(CacheOutcome outcome);

struct CacheResult {
  std::shared_ptr<const NativeModule> module;
  CacheOutcome outcome = CacheOutcome::kHit;
  std::string key;             // 64 lowercase hex characters
  std::string rebuild_reason;  // kRebuilt: what was wrong with the entry
  // Ok, or why a fresh library could not be stored (the module is loaded all the same).
  Status store_status;
};

// Counts since the CodeCache was opened.
struct CodeCacheStats {
  uint64_t hits = 0;
  uint64_t compiles = 0;  // includes rebuilds
  uint64_t rebuilds = 0;
  uint64_t store_failures = 0;
  uint64_t evictions = 0;  // entries removed by the size bound
};

class CodeCache {
 public:
  // Opens (creating it and missing parents, mode 0700) the cache directory `dir`.
  // Errors: Unavailable when it cannot be created or is not a directory; FailedPrecondition
  // when it is not owned by this user or is writable by group or others (it holds code Reef
  // loads into itself).
  static Result<std::unique_ptr<CodeCache>> Open(std::filesystem::path dir,
                                                 CodeCacheOptions options = {});

  // The module compiled by `options` (with `pass` run on its IR, `pass_version` naming what
  // the pass does): loaded from the directory when a verified entry exists, else generated,
  // compiled, stored and loaded. REQUIRES: `pass`, when set, may be called on this thread.
  // Blocks: a miss takes the whole compile (bounded by options.wall_time).
  // Errors: InvalidArgument for a null module; those of the key (FindCompiler; Unavailable
  // when the compiler cannot be examined); those of GenerateC, Compile and NativeModule::Load.
  // Failing to store a fresh library is not an error (CacheResult::store_status).
  Result<CacheResult> GetOrCompile(std::shared_ptr<const Module> module,
                                   const CompileOptions& options, const IrPass& pass,
                                   uint32_t pass_version);

  // GetOrCompile's hit, without ever compiling or waiting for another caller's build: the
  // module's code when it is loaded, or on disk with a verified entry (milliseconds). nullopt
  // on a miss, a damaged entry (GetOrCompile rebuilds it) or a build of the key in progress.
  // Errors: those of the key.
  Result<std::optional<CacheResult>> Find(const std::shared_ptr<const Module>& module,
                                          const CompileOptions& options, bool has_pass,
                                          uint32_t pass_version);

  // The key GetOrCompile would use, 64 lowercase hex characters. Examines the compiler file
  // (stat, no process). Errors: as GetOrCompile's key.
  Result<std::string> Key(const Module& module, const CompileOptions& options, bool has_pass,
                          uint32_t pass_version) const;

  // Removes every entry and temporary file of the directory (only names the cache writes).
  // Libraries already loaded stay mapped. Errors: Unavailable naming the failing path.
  Status Clear();

  const std::filesystem::path& dir() const { return dir_; }
  CodeCacheStats stats() const;

 private:
  struct Flight;  // one build of a key in progress
  struct Wanted;  // the key and its parts

  CodeCache(std::filesystem::path dir, CodeCacheOptions options)
      : dir_(std::move(dir)), options_(options) {}
  Result<Wanted> MakeKey(const Module& module, const CompileOptions& options, bool has_pass,
                         uint32_t pass_version) const;
  // A hit on code this process has loaded and still holds, counted.
  std::optional<CacheResult> LoadedHit(const std::string& key) REQUIRES(mu_);
  // The verified entry, loaded; nullptr with *why empty when absent, set when refused.
  std::shared_ptr<const NativeModule> LoadEntry(const std::shared_ptr<const Module>& module,
                                                const Wanted& wanted, std::string* why);
  Result<CacheResult> Build(const std::shared_ptr<const Module>& module,
                            const CompileOptions& options, const IrPass& pass,
                            const Wanted& wanted);
  Result<CacheResult> CompileAndStore(const std::shared_ptr<const Module>& module,
                                      const CompileOptions& options, const IrPass& pass,
                                      const Wanted& wanted);
  void RemoveEntry(const std::string& key);
  void Evict(const std::string& keep);
  std::filesystem::path LibraryPath(std::string_view key) const;
  std::filesystem::path ManifestPath(std::string_view key) const;

  // Constant after construction.
  const std::filesystem::path dir_;
  const CodeCacheOptions options_;

  // Protected by mu_.
  mutable Mutex mu_;
  CondVar flight_done_;
  std::map<std::string, std::shared_ptr<Flight>, std::less<>> flights_ GUARDED_BY(mu_);
  std::map<std::string, std::weak_ptr<const NativeModule>, std::less<>> loaded_ GUARDED_BY(mu_);
  CodeCacheStats stats_ GUARDED_BY(mu_);
};

}  // namespace reef::wasm::native
