// CompileService: a fixed pool of worker threads that run CodeCache::GetOrCompile for the
// threads that must never block (reactors, HTTP and WebSocket handlers).
//
// Parallelism and memory: at most `workers` builds run at once, each C compiler process capped
// by its CompileOptions (address_space_bytes of address space, wall_time), so compilers use
// at most workers x address_space_bytes; wabt's C generation runs in this process on the
// worker, bounded by the module size limits. Further requests wait in a FIFO queue of
// `max_queued` entries; a request beyond that is refused at once.
//
// Every request first passes a lookup thread that answers cache hits at once (CodeCache::Find),
// so a hit never waits behind a compile; only misses queue for the workers.
//
// One per process, owned by whoever composes the runtime; it shares the CodeCache it is given.
//
// Thread ownership: Submit, Shutdown, workers and stats may be called from any thread except
// the service's own workers (callbacks must not call Shutdown or destroy the service).
// Callbacks always run on one of the service's threads (a worker or the lookup thread), never
// on the submitting thread: a reactor's callback hands its result back through the reactor's
// own queue.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/mutex.h"
#include "core/status.h"
#include "wasm/module.h"
#include "wasm/native/code_cache.h"

namespace reef::wasm::native {

struct CompileServiceOptions {
  size_t workers = 0;      // compile threads; 0: max(1, hardware threads / 2)
  size_t max_queued = 64;  // requests waiting for a worker (running ones not counted)
};

struct CompileRequest {
  std::shared_ptr<const Module> module;
  CompileOptions options;
  IrPass pass;  // run on a worker thread, on a miss only
  uint32_t pass_version = 0;
};

// Receives one request's outcome (CodeCache::GetOrCompile's, or Unavailable when the service
// shut down before the request ran), exactly once, on a worker thread. It holds up that
// worker while it runs, so it should only hand the result on; it must not throw.
using CompileCallback = std::function<void(Result<CacheResult>)>;

struct CompileServiceStats {
  uint64_t queued = 0;     // waiting now
  uint64_t running = 0;    // compiling or loading now
  uint64_t completed = 0;  // callbacks run with GetOrCompile's outcome
  uint64_t cancelled = 0;  // callbacks run with the shutdown error
  uint64_t rejected = 0;   // Submit calls refused (queue full, shutting down, bad request)
};

class CompileService {
 public:
  // Starts the workers. REQUIRES: cache != nullptr.
  explicit CompileService(std::shared_ptr<CodeCache> cache, CompileServiceOptions options = {});
  // Shutdown().
  ~CompileService();
  CompileService(const CompileService&) = delete;
  CompileService& operator=(const CompileService&) = delete;

  // Queues `request` and returns at once (a short lock, never a compile). On Ok, `done` runs
  // exactly once, later, on a worker thread. Errors, after which `done` never runs:
  // InvalidArgument for a null module or an empty callback; LimitExceeded "compile queue
  // full: <n> requests waiting (CompileServiceOptions::max_queued)"; Unavailable "compile
  // service is shutting down".
  Status Submit(CompileRequest request, CompileCallback done);

  // Stops accepting requests; queued ones complete with Unavailable ("compile service shut
  // down before compiling ...") on the workers; compilers in progress are killed (their
  // requests complete with Unavailable, their temporary files removed); then the workers are
  // joined. Idempotent.
  void Shutdown();

  size_t workers() const { return threads_.size() - 1; }
  CompileServiceStats stats() const;

 private:
  struct Job {
    CompileRequest request;
    CompileCallback done;
  };
  void WorkerLoop();
  // The lookup thread: answers every request the cache already holds (CodeCache::Find,
  // milliseconds) and queues the rest for the workers, so a cache hit never waits behind a
  // compile.
  void LookupLoop();
  // Requests accepted and not yet running or answered.
  size_t Waiting() const REQUIRES(mu_) {
    return lookups_.size() + (looking_up_ ? 1 : 0) + queue_.size();
  }

  // Constant after construction.
  const std::shared_ptr<CodeCache> cache_;
  const size_t max_queued_;
  std::vector<std::thread> threads_;  // workers, then the lookup thread; joined by Shutdown
  std::once_flag joined_;             // Shutdown joins the threads once

  // Protected by mu_.
  mutable Mutex mu_;
  CondVar wake_;
  std::deque<Job> lookups_ GUARDED_BY(mu_);  // submitted, not yet looked up in the cache
  bool looking_up_ GUARDED_BY(mu_) = false;  // the lookup thread holds a request
  std::deque<Job> queue_ GUARDED_BY(mu_);    // misses, waiting for a worker
  bool stopping_ GUARDED_BY(mu_) = false;
  std::atomic<bool> cancel_{false};  // set by Shutdown: compiles in progress are killed
  CompileServiceStats stats_ GUARDED_BY(mu_);
};

}  // namespace reef::wasm::native
