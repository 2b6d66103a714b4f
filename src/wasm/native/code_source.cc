// CodeSource (code_source.h).
#include "wasm/native/code_source.h"

#include <algorithm>
#include <future>
#include <utility>

#include "wasm/detail/meter.h"

namespace reef::wasm::native {
namespace {

// A failure that says nothing about the module (the service shut down before or while
// compiling it): it is not remembered, so a later request tries again. A compile past its
// time or memory cap (LimitExceeded) is remembered: it would only fail again.
bool Transient(const Status& status) {
  return status.code() == Code::kUnavailable;
}

}  // namespace

IrPass MeterPass() {
  return [](wabt::Module& ir) -> Result<PassResult> {
    REEF_ASSIGN_OR_RETURN(wasm::detail::MeterLayout layout, wasm::detail::MeterModule(ir));
    return PassResult{layout.fuel_global};
  };
}

CodeSource::CodeSource(CodeSourceOptions options) : options_(std::move(options)) {}

CodeSource::~CodeSource() {
  Shutdown();
}

void CodeSource::Shutdown() {
  if (service_ != nullptr) service_->Shutdown();
}

Result<std::shared_ptr<CodeSource>> CodeSource::Create(CodeSourceOptions options) {
  std::shared_ptr<CodeSource> source(new CodeSource(std::move(options)));
  if (source->options_.cache.has_value()) {
    REEF_ASSIGN_OR_RETURN(std::unique_ptr<CodeCache> cache,
                          CodeCache::Open(*source->options_.cache));
    source->cache_ = std::move(cache);
    if (source->options_.background) {
      source->service_ = std::make_unique<CompileService>(source->cache_, source->options_.service);
    }
  }
  return source;
}

std::shared_ptr<CodeSource> CodeSource::Default() {
  static const std::shared_ptr<CodeSource> source(new CodeSource(CodeSourceOptions{}));
  return source;
}

bool CodeSource::IsLoaded(const Module& module) {
  MutexLock lock(mu_);
  return loaded_.contains(module.id());
}

std::shared_ptr<const NativeModule> CodeSource::Find(const Module& module) {
  MutexLock lock(mu_);
  auto it = loaded_.find(module.id());
  if (it == loaded_.end()) return nullptr;
  Touch(it->second);
  return it->second.code;
}

Result<std::shared_ptr<const NativeModule>> CodeSource::Get(
    const std::shared_ptr<const Module>& module) {
  {
    MutexLock lock(mu_);
    if (auto it = loaded_.find(module->id()); it != loaded_.end()) {
      Touch(it->second);
      return it->second.code;
    }
    if (auto it = failed_.find(module->id()); it != failed_.end()) return it->second;
  }
  if (service_ == nullptr) return Build(module);
  // Wait for a worker: a compile never runs on the calling thread when there is a service.
  auto done = std::make_shared<std::promise<Result<std::shared_ptr<const NativeModule>>>>();
  std::future<Result<std::shared_ptr<const NativeModule>>> result = done->get_future();
  const Status submitted = service_->Submit(
      CompileRequest{module, options_.compile, MeterPass(), wasm::detail::kMeterVersion},
      [this, module, done](Result<CacheResult> compiled) {
        done->set_value(Finish(*module, std::move(compiled)));
      });
  if (!submitted.ok()) return submitted;
  return result.get();
}

void CodeSource::Request(const std::shared_ptr<const Module>& module) {
  {
    MutexLock lock(mu_);
    const std::string& id = module->id();
    if (loaded_.contains(id) || failed_.contains(id) || pending_.contains(id)) return;
    pending_.insert(id);
  }
  if (service_ == nullptr) {
    (void)Build(module);
    return;
  }
  const Status submitted = service_->Submit(
      CompileRequest{module, options_.compile, MeterPass(), wasm::detail::kMeterVersion},
      [this, module](Result<CacheResult> compiled) { (void)Finish(*module, std::move(compiled)); });
  if (!submitted.ok()) {
    MutexLock lock(mu_);
    pending_.erase(module->id());
  }
}

Result<std::shared_ptr<const NativeModule>> CodeSource::Build(
    const std::shared_ptr<const Module>& module) {
  if (cache_ != nullptr) {
    return Finish(*module, cache_->GetOrCompile(module, options_.compile, MeterPass(),
                                                wasm::detail::kMeterVersion));
  }
  Result<std::shared_ptr<const NativeModule>> compiled =
      NativeModule::Compile(module, options_.compile, MeterPass());
  if (!compiled.ok()) return Finish(*module, compiled.status());
  return Finish(*module, CacheResult{*compiled, CacheOutcome::kCompiled, {}, {}, Status::Ok()});
}

Result<std::shared_ptr<const NativeModule>> CodeSource::Finish(const Module& module,
                                                               Result<CacheResult> compiled) {
  std::optional<CodeOutcome> outcome;
  Result<std::shared_ptr<const NativeModule>> out = Status::Internal("not finished");
  if (compiled.ok()) {
    out = compiled->module;
    if (compiled->outcome != CacheOutcome::kHit) {
      outcome = CodeOutcome{module.id(), CacheOutcomeName(compiled->outcome),
                            compiled->module->compile_stats().cpu_seconds, module.bytes().size(),
                            compiled->outcome == CacheOutcome::kRebuilt
                                ? compiled->rebuild_reason
                                : std::string(compiled->store_status.message())};
    }
  } else {
    out = compiled.status();
    if (!Transient(compiled.status())) {
      outcome = CodeOutcome{module.id(), "failed", 0, module.bytes().size(),
                            std::string(compiled.status().message())};
    }
  }
  {
    MutexLock lock(mu_);
    if (compiled.ok()) {
      ++(compiled->outcome == CacheOutcome::kHit ? stats_.from_cache : stats_.compiled);
    }
    // A shutdown is no verdict on the module: a later Get or Request tries again.
    if (compiled.ok() || !Transient(compiled.status())) {
      Record(module.id(), out);
    } else {
      pending_.erase(module.id());
    }
  }
  if (outcome.has_value() && options_.on_outcome) options_.on_outcome(*outcome);
  return out;
}

void CodeSource::Record(const std::string& id,
                        const Result<std::shared_ptr<const NativeModule>>& result) {
  pending_.erase(id);
  if (!result.ok()) {
    failed_.emplace(id, result.status());
    ++stats_.failed;
    return;
  }
  if (auto it = loaded_.find(id); it != loaded_.end()) {
    Touch(it->second);
    return;
  }
  recency_.push_front(id);
  loaded_.emplace(id, Loaded{*result, recency_.begin()});
  while (loaded_.size() > std::max<size_t>(options_.max_loaded, 1)) {
    loaded_.erase(recency_.back());
    recency_.pop_back();
  }
}

void CodeSource::Touch(Loaded& loaded) {
  recency_.splice(recency_.begin(), recency_, loaded.recency);
}

Status CodeSource::CompilerStatus() {
  MutexLock lock(mu_);
  if (!compiler_status_.has_value()) compiler_status_ = FindCompiler(options_.compile).status();
  return *compiler_status_;
}

CodeSourceStats CodeSource::stats() {
  MutexLock lock(mu_);
  CodeSourceStats out = stats_;
  out.pending = pending_.size();
  out.loaded = loaded_.size();
  return out;
}

}  // namespace reef::wasm::native
