// CodeSource: where engines get a module's native code. One per process, shared by every
// engine (each reactor has its own engine); the code it hands out is immutable.
//
// It keeps the modules it has loaded in memory (up to `max_loaded`, least recently used
// dropped first; instances keep their own reference), looks in the disk cache when it has
// one (code_cache.h), and compiles what is missing with the metering pass
// (wasm/detail/meter.h): on the calling thread (Get), or on the compile service's workers
// (Request, which never blocks: an engine in auto mode runs the interpreter meanwhile).
//
// Thread ownership: every method may be called from any thread.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "core/mutex.h"
#include "core/status.h"
#include "wasm/module.h"
#include "wasm/native/code_cache.h"
#include "wasm/native/compile_service.h"
#include "wasm/native/compiler.h"
#include "wasm/native/native_module.h"

namespace reef::wasm::native {

// The metering pass every native module is compiled with (wasm/detail/meter.h). Its layout
// is recovered from the compiled module: the fuel is the last global, the meter table
// follows the module's own tables.
IrPass MeterPass();

// What became of one module's native code: what `reef serve` logs (CodeSourceOptions::
// on_outcome). Hits are not reported unless the entry had to be rebuilt.
struct CodeOutcome {
  std::string module_id;     // Module::id(), 64 hex characters
  std::string_view outcome;  // "compiled", "rebuilt" (the cached entry was bad), "failed"
  double cpu_seconds = 0;    // the C compiler's CPU time (compiled, rebuilt)
  size_t wasm_bytes = 0;     // the module's size
  std::string detail;        // rebuilt: what was wrong; failed: the error; else a cache
                             // store failure, if any
};

struct CodeSourceOptions {
  CompileOptions compile;                      // how the C compiler runs
  std::optional<std::filesystem::path> cache;  // disk cache directory (reef serve --native-cache)
  bool background = false;  // start a CompileService for Request (else Request compiles inline)
  CompileServiceOptions service;
  size_t max_loaded = 512;  // modules kept loaded in memory
  // Told every compile, rebuild and failure (not a shutdown's cancellations), on the thread
  // that finished it (a compile worker, or Get's caller without a service), without any lock
  // of the CodeSource held. Must not block for long.
  std::function<void(const CodeOutcome&)> on_outcome;
};

struct CodeSourceStats {
  uint64_t compiled = 0;    // compiled by the C compiler
  uint64_t from_cache = 0;  // loaded from the disk cache
  uint64_t failed = 0;      // modules whose compile failed (they stay on the interpreter)
  uint64_t pending = 0;     // background compiles requested and not finished
  uint64_t loaded = 0;      // modules in memory now
};

class CodeSource {
 public:
  // Errors: those of CodeCache::Open when `options.cache` is set.
  static Result<std::shared_ptr<CodeSource>> Create(CodeSourceOptions options);
  // The process's default source: no disk cache, compiles on the calling thread at -O1.
  static std::shared_ptr<CodeSource> Default();
  ~CodeSource();
  CodeSource(const CodeSource&) = delete;
  CodeSource& operator=(const CodeSource&) = delete;

  // The loaded code of `module`, or null when it is not loaded (never compiles, never waits).
  std::shared_ptr<const NativeModule> Find(const Module& module);

  // The code of `module`: loaded, from the disk cache, or compiled now. Compiles on the
  // calling thread when there is no compile service, else waits for a worker.
  // Errors: those of GenerateC, Compile (NotFound when no C compiler is installed) and
  // NativeModule::Load; the same error again for a module whose compile failed before.
  Result<std::shared_ptr<const NativeModule>> Get(const std::shared_ptr<const Module>& module);

  // Starts getting `module`'s code in the background unless it is loaded, pending or failed
  // before; returns at once. Without a compile service it does the work now.
  void Request(const std::shared_ptr<const Module>& module);

  // True when `module`'s code is loaded (Find would return it), without counting as a use
  // for the loaded-code LRU. Any thread.
  bool IsLoaded(const Module& module);

  // Stops the compile service (CompileService::Shutdown: compilers in progress are killed,
  // queued requests dropped) so a process that exits leaves no compiler running and no
  // temporary files behind. Later Requests and Gets that need a compile fail Unavailable.
  // Idempotent; any thread.
  void Shutdown();

  // Ok when a C compiler is available (looked up once), else FindCompiler's NotFound.
  Status CompilerStatus();

  const CompileOptions& compile_options() const { return options_.compile; }
  CodeSourceStats stats();

 private:
  explicit CodeSource(CodeSourceOptions options);
  // Loads or compiles `module` on this thread and records the outcome.
  Result<std::shared_ptr<const NativeModule>> Build(const std::shared_ptr<const Module>& module);
  // Counts, records (unless Transient) and reports what became of `module`'s code; returns
  // the code or the error. Takes mu_.
  Result<std::shared_ptr<const NativeModule>> Finish(const Module& module,
                                                     Result<CacheResult> compiled);
  // Records `result` for `id`.
  void Record(const std::string& id, const Result<std::shared_ptr<const NativeModule>>& result)
      REQUIRES(mu_);

  const CodeSourceOptions options_;
  std::shared_ptr<CodeCache> cache_;         // null without a cache directory
  std::unique_ptr<CompileService> service_;  // null unless options.background

  Mutex mu_;
  struct Loaded {
    std::shared_ptr<const NativeModule> code;
    std::list<std::string>::iterator recency;  // its place in recency_
  };
  void Touch(Loaded& loaded) REQUIRES(mu_);  // makes it the most recently used

  std::unordered_map<std::string, Loaded> loaded_ GUARDED_BY(mu_);  // by module id
  std::list<std::string> recency_ GUARDED_BY(mu_);                  // module ids, most recent first
  std::unordered_map<std::string, Status> failed_ GUARDED_BY(mu_);
  std::unordered_set<std::string> pending_ GUARDED_BY(mu_);
  std::optional<Status> compiler_status_ GUARDED_BY(mu_);
  CodeSourceStats stats_ GUARDED_BY(mu_);
};

}  // namespace reef::wasm::native
