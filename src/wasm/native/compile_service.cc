// CompileService (compile_service.h): a bounded queue in front of a fixed pool of workers.
#include "wasm/native/compile_service.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <utility>

namespace reef::wasm::native {
namespace {

// The answer to a request the service stopped before compiling.
Status ShutDownBefore(const CompileRequest& request) {
  return Status::Unavailable(
      fmt::format("compile service shut down before compiling module {}", request.module->id()));
}

}  // namespace

CompileService::CompileService(std::shared_ptr<CodeCache> cache, CompileServiceOptions options)
    : cache_(std::move(cache)), max_queued_(options.max_queued) {
  size_t workers = options.workers;
  if (workers == 0) workers = std::max<size_t>(1, std::thread::hardware_concurrency() / 2);
  threads_.reserve(workers);
  for (size_t i = 0; i < workers; ++i) threads_.emplace_back([this] { WorkerLoop(); });
  threads_.emplace_back([this] { LookupLoop(); });
}

CompileService::~CompileService() {
  Shutdown();
}

Status CompileService::Submit(CompileRequest request, CompileCallback done) {
  MutexLock lock(mu_);
  Status refused;
  if (request.module == nullptr || !done) {
    refused = Status::InvalidArgument("compile request needs a module and a callback");
  } else if (stopping_) {
    refused = Status::Unavailable("compile service is shutting down");
  } else if (Waiting() >= max_queued_) {
    refused = Status::LimitExceeded(fmt::format(
        "compile queue full: {} requests waiting (CompileServiceOptions::max_queued)", Waiting()));
  }
  if (!refused.ok()) {
    ++stats_.rejected;
    return refused;
  }
  lookups_.push_back(Job{std::move(request), std::move(done)});
  ++stats_.queued;
  wake_.NotifyAll();
  return Status::Ok();
}

void CompileService::LookupLoop() {
  for (;;) {
    std::optional<Job> job;
    bool cancelled = false;
    {
      MutexLock lock(mu_);
      while (!stopping_ && lookups_.empty()) wake_.Wait(mu_);
      if (lookups_.empty()) return;  // stopping, nothing left
      job.emplace(std::move(lookups_.front()));
      lookups_.pop_front();
      cancelled = stopping_;
      if (cancelled) {
        --stats_.queued;
        ++stats_.cancelled;
      } else {
        looking_up_ = true;
      }
    }
    if (cancelled) {
      job->done(ShutDownBefore(job->request));
      continue;
    }
    const CompileRequest& r = job->request;
    Result<std::optional<CacheResult>> hit =
        cache_->Find(r.module, r.options, static_cast<bool>(r.pass), r.pass_version);
    if (hit.ok() && hit->has_value()) {
      {
        MutexLock lock(mu_);
        looking_up_ = false;
        --stats_.queued;
        ++stats_.completed;
      }
      job->done(std::move(**hit));
      continue;
    }
    // A miss (or an error the worker's GetOrCompile reports the same way) goes to the workers.
    {
      MutexLock lock(mu_);
      looking_up_ = false;
      cancelled = stopping_;
      if (cancelled) {
        --stats_.queued;
        ++stats_.cancelled;
      } else {
        queue_.push_back(std::move(*job));
        wake_.NotifyAll();  // one condition for the workers and the lookup thread
      }
    }
    if (cancelled) job->done(ShutDownBefore(job->request));
  }
}

void CompileService::Shutdown() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  cancel_.store(true);
  wake_.NotifyAll();
  std::call_once(joined_, [this] {
    for (std::thread& thread : threads_) thread.join();
  });
}

CompileServiceStats CompileService::stats() const {
  MutexLock lock(mu_);
  return stats_;
}

void CompileService::WorkerLoop() {
  for (;;) {
    bool cancelled = false;
    std::optional<Job> job;
    {
      MutexLock lock(mu_);
      while (!stopping_ && queue_.empty()) wake_.Wait(mu_);
      if (queue_.empty()) return;  // stopping, nothing left
      job.emplace(std::move(queue_.front()));
      queue_.pop_front();
      --stats_.queued;
      cancelled = stopping_;
      ++(cancelled ? stats_.cancelled : stats_.running);
    }
    if (cancelled) {
      job->done(ShutDownBefore(job->request));
      continue;
    }
    CompileOptions options = job->request.options;
    options.cancel = &cancel_;
    Result<CacheResult> result = cache_->GetOrCompile(job->request.module, options,
                                                      job->request.pass, job->request.pass_version);
    {
      MutexLock lock(mu_);
      --stats_.running;
      ++stats_.completed;
    }
    job->done(std::move(result));
  }
}

}  // namespace reef::wasm::native
