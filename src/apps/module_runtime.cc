#include "apps/module_runtime.h"

#include <fmt/format.h>
#include <openssl/sha.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>

#include <future>
#include <set>
#include <thread>

#include "apps/detail/module_runtime_impl.h"

namespace reef::apps {

using store::ModuleKind;
using json = nlohmann::json;

// ---- Modules and runners ------------------------------------------------------------------

Result<std::shared_ptr<const wasm::Module>> ModuleRuntime::Impl::LoadModule(
    ModuleKind kind, std::string_view name, std::string_view version, std::string_view sha256) {
  {
    MutexLock lock(compiled_mu);
    if (auto it = compiled.find(std::string(sha256)); it != compiled.end()) return it->second;
  }
  std::shared_ptr<const wasm::Module> module;
  REEF_ASSIGN_OR_RETURN(auto cached, store->GetArtifact(sha256, "wasm"));
  if (cached) {
    auto loaded = wasm::Module::FromBinary(*cached, Key(kind, name));
    if (loaded.ok() && (*loaded)->id() == sha256) module = *loaded;
  }
  if (!module) {
    REEF_ASSIGN_OR_RETURN(auto bytes, store->LoadBytes(kind, name, version));
    REEF_ASSIGN_OR_RETURN(module, wasm::Module::FromBinary(bytes, Key(kind, name)));
    if (module->id() != sha256) {
      return Status::DataLoss(fmt::format("{}@{}: stored bytes hash to {}, expected {}",
                                          Key(kind, name), version, module->id(), sha256));
    }
    REEF_RETURN_IF_ERROR(store->PutArtifact(sha256, "wasm", bytes));
  }
  MutexLock lock(compiled_mu);
  compiled[std::string(sha256)] = module;
  return module;
}

std::optional<ModuleStatus> ModuleRuntime::Impl::StopRunner(const ModuleKey& key,
                                                            bool handing_over) {
  std::unique_ptr<Runner> runner;
  {
    MutexLock lock(mu);
    auto it = runners.find(key);
    if (it == runners.end()) return std::nullopt;
    runner = std::move(it->second);
    runners.erase(it);
    if (handing_over) {
      ModuleStatus shown = runner->Snapshot();
      shown.failures += carried_failures[key];
      shown.state = "restarting";
      shown.up = true;
      switching[key] = std::move(shown);
    }
  }
  runner->Stop();
  ModuleStatus last = runner->Snapshot();
  MutexLock lock(mu);
  carried_failures[key] += last.failures;
  last.failures = carried_failures[key];
  if (auto it = switching.find(key); it != switching.end()) it->second.failures = last.failures;
  return last;
}

Status ModuleRuntime::Impl::StartRunner(ModuleKind kind, const std::string& name) {
  ModuleKey key{kind, name};
  std::optional<ModuleStatus> last = StopRunner(key, /*handing_over=*/true);
  uint64_t position = last ? last->position : 0;
  struct Done {
    Impl& impl;
    const ModuleKey& key;
    ~Done() {
      MutexLock lock(impl.mu);
      impl.switching.erase(key);
    }
  } done{*this, key};
  REEF_ASSIGN_OR_RETURN(auto active, store->Active(kind, name));
  if (!active) return Status::Ok();
  REEF_ASSIGN_OR_RETURN(auto module, LoadModule(kind, name, active->version, active->sha256));
  RunnerSpec spec;
  spec.kind = kind;
  spec.name = name;
  spec.version = active->version;
  spec.module = std::move(module);
  REEF_ASSIGN_OR_RETURN(spec.env, store->Env(kind, name));
  spec.db_path = DatabasePath(kind, name);
  spec.events = &events;
  spec.keys = keys.get();
  spec.options = &options;
  spec.initial_position = position;  // shown until the runner has read its database
  spec.fleet = fleet;
  spec.effect_io = effect_io.get();
  spec.store = store.get();
  // After losing its lease, a runner is replaced by one that stands by (not on its own thread:
  // replacing it joins that thread).
  // The database may still be unreachable (why the lease was lost): the task tries again with
  // backoff until the runner stands by or the runtime stops. It is counted in flight, so Stop
  // waits for it; if it cannot be queued, the runner stays "lease lost" until the next
  // SyncModule (the store's reconnection or the module's next change).
  spec.restart = [this, kind, name] {
    if (!Enter(Key(kind, name)).ok()) return;  // stopping
    bool queued = io->TrySubmit([this, kind, name] {
      for (auto pause = std::chrono::milliseconds(100);;
           pause = std::min(pause * 2, std::chrono::milliseconds(5'000))) {
        {
          MutexLock lock(lifecycle_mu);
          if (stop_requested.load()) break;
          Status s = StartRunner(kind, name);
          if (s.ok()) break;
          spdlog::warn("{} could not stand by again (retrying in {} ms): {}", Key(kind, name),
                       pause.count(), s.message());
        }
        for (auto slept = std::chrono::milliseconds(0); slept < pause && !stop_requested.load();
             slept += std::chrono::milliseconds(50)) {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
      }
      Leave();
    });
    if (!queued) {
      spdlog::error("{} lost its lease and cannot be restarted now (I/O queue full)",
                    Key(kind, name));
      Leave();
    }
  };
  REEF_ASSIGN_OR_RETURN(spec.reactor, fleet->PlaceWork());
  std::unique_ptr<Runner> runner;
  {
    MutexLock lock(mu);
    auto [it, first] = restarts.try_emplace(key, 0);
    if (!first) ++it->second;
    spec.restarts = it->second;
  }
  REEF_ASSIGN_OR_RETURN(int64_t epoch, WatermarkEpoch(kind, name));
  RunnerFacts facts{spec.version, spec.env, epoch};
  runner = kind == ModuleKind::kProjector ? MakeProjectorRunner(std::move(spec))
                                          : MakeEffectRunner(std::move(spec));
  runner->Start();
  MutexLock lock(mu);
  runners[key] = std::move(runner);
  runner_facts[key] = std::move(facts);
  return Status::Ok();
}

Result<int64_t> ModuleRuntime::Impl::WatermarkEpoch(ModuleKind kind, const std::string& name) {
  if (kind != ModuleKind::kEffect || !store->shared()) return int64_t{0};
  REEF_ASSIGN_OR_RETURN(auto shared, store->LoadWatermark(name));
  return shared.epoch;
}

Status ModuleRuntime::Impl::SyncModule(ModuleKind kind, const std::string& name) {
  if (kind == ModuleKind::kCommand) {
    Forget(kind, name);
    return Status::Ok();
  }
  const ModuleKey key{kind, name};
  REEF_ASSIGN_OR_RETURN(auto active, store->Active(kind, name));
  if (!active) {
    if (StopRunner(key)) spdlog::info("{} deactivated by another node", Key(kind, name));
    return Status::Ok();
  }
  REEF_ASSIGN_OR_RETURN(auto env, store->Env(kind, name));
  REEF_ASSIGN_OR_RETURN(int64_t epoch, WatermarkEpoch(kind, name));  // a replay elsewhere
  {
    MutexLock lock(mu);
    auto runner = runners.find(key);
    auto facts = runner_facts.find(key);
    if (runner != runners.end() && facts != runner_facts.end() &&
        facts->second.version == active->version && facts->second.env == env &&
        facts->second.epoch == epoch) {
      const std::string state = runner->second->Snapshot().state;
      if (state != "failed" && state != "lease lost" && state != "stopped") return Status::Ok();
    }
  }
  spdlog::info("{} version {}: following another node's change", Key(kind, name), active->version);
  return StartRunner(kind, name);
}

void ModuleRuntime::Impl::OnStoreChange(const store::StoreChange& change) {
  using What = store::StoreChange::What;
  if (change.what == What::kKeyScope) {
    if (stop_requested.load()) return;  // keys may be gone (the runtime is being destroyed)
    keys->Forget(change.name);
    fold_cache.Clear();  // decision states may hold what the shredded events said
    return;
  }
  MutexLock lock(lifecycle_mu);
  if (stop_requested.load()) return;
  if (change.what == What::kModule) {
    if (Status s = SyncModule(change.kind, change.name); !s.ok()) {
      spdlog::error("{}: cannot follow another node's change: {}", Key(change.kind, change.name),
                    s.message());
    }
    return;
  }
  // Everything: every module this process knows or the store has active. (Just after the
  // store reconnected, the database may still be starting: try a few times.)
  std::set<ModuleKey> keys_to_sync;
  auto active = store->ListActive();
  for (int attempt = 1; !active.ok() && attempt < 10 && !stop_requested.load(); ++attempt) {
    lock.Unlock();
    std::this_thread::sleep_for(std::chrono::milliseconds(200 * attempt));
    lock.Lock();
    active = store->ListActive();
  }
  if (!active.ok()) {
    spdlog::error("cannot follow other nodes' changes: {}", active.status().message());
    return;
  }
  for (const store::ActiveModule& m : *active) keys_to_sync.insert({m.kind, m.name});
  {
    MutexLock inner(mu);
    for (const auto& [key, runner] : runners) keys_to_sync.insert(key);
    for (const auto& [command, generation] : command_generations) {
      keys_to_sync.insert({ModuleKind::kCommand, command});
    }
    for (const auto& [command, facts] : active_commands) {
      keys_to_sync.insert({ModuleKind::kCommand, command});
    }
  }
  for (const auto& [kind, name] : keys_to_sync) {
    if (Status s = SyncModule(kind, name); !s.ok()) {
      spdlog::error("{}: cannot follow other nodes' changes: {}", Key(kind, name), s.message());
    }
  }
}

Status ModuleRuntime::Impl::EnvChanged(ModuleKind kind, const std::string& name) {
  if (kind == ModuleKind::kCommand) {
    Forget(kind, name);
    return Status::Ok();
  }
  bool running;
  {
    MutexLock lock(mu);
    running = runners.count({kind, name}) > 0;
  }
  return running ? StartRunner(kind, name) : Status::Ok();
}

Result<std::optional<store::ActiveModule>> ModuleRuntime::Impl::ActiveCommand(
    std::string_view name) {
  uint64_t generation;
  {
    MutexLock lock(mu);
    if (auto it = active_commands.find(name); it != active_commands.end()) return it->second;
    generation = command_generations[std::string(name)];
  }
  REEF_ASSIGN_OR_RETURN(auto active, store->Active(ModuleKind::kCommand, name));
  MutexLock lock(mu);
  // A change since the read may have made it stale: used once, never cached.
  if (command_generations[std::string(name)] == generation) {
    active_commands[std::string(name)] = active;
  }
  return active;
}

void ModuleRuntime::Impl::Forget(ModuleKind kind, std::string_view name) {
  if (kind != ModuleKind::kCommand) return;
  {
    MutexLock lock(mu);
    ++command_generations[std::string(name)];
    if (auto it = active_commands.find(name); it != active_commands.end()) {
      active_commands.erase(it);
    }
    if (auto it = env_cache.find(name); it != env_cache.end()) env_cache.erase(it);
  }
  fold_cache.ForgetCommand(name);  // their keys hold the old generation: never found again
  // Appends that passed their generation check before the bump end before this returns.
  WriterLock gate(append_gate);
}

Result<std::map<std::string, std::string>> ModuleRuntime::Impl::CommandEnv(std::string_view name) {
  uint64_t generation;
  {
    MutexLock lock(mu);
    if (auto it = env_cache.find(name); it != env_cache.end()) return it->second;
    generation = command_generations[std::string(name)];
  }
  REEF_ASSIGN_OR_RETURN(auto env, store->Env(ModuleKind::kCommand, name));
  MutexLock lock(mu);
  if (command_generations[std::string(name)] == generation) env_cache[std::string(name)] = env;
  return env;
}

std::optional<ModuleRuntime::Impl::CachedCommandFacts> ModuleRuntime::Impl::CachedCommand(
    std::string_view name) {
  CachedCommandFacts facts;
  {
    MutexLock lock(mu);
    auto active = active_commands.find(name);
    auto env = env_cache.find(name);
    if (active == active_commands.end() || !active->second || env == env_cache.end()) {
      return std::nullopt;
    }
    facts.active = *active->second;
    facts.env = env->second;
  }
  MutexLock lock(compiled_mu);
  auto module = compiled.find(facts.active.sha256);
  if (module == compiled.end()) return std::nullopt;
  facts.module = module->second;
  return facts;
}

uint64_t ModuleRuntime::Impl::CommandGeneration(std::string_view name) {
  MutexLock lock(mu);
  auto it = command_generations.find(name);
  return it == command_generations.end() ? 0 : it->second;
}

// ---- The lifecycle ------------------------------------------------------------------------

ModuleRuntime::ModuleRuntime(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ModuleRuntime::~ModuleRuntime() {
  Stop();
  if (impl_->results_db != nullptr) sqlite3_close_v2(impl_->results_db);
  // The store first: its watcher thread calls into the members below until it is joined.
  impl_->store.reset();
  impl_->keys.reset();
}

Result<std::unique_ptr<ModuleRuntime>> ModuleRuntime::Open(events::EventStore& events,
                                                           RuntimeOptions options) {
  auto impl = std::make_unique<Impl>(events, std::move(options));
  if (impl->options.store_conninfo.empty()) {
    REEF_ASSIGN_OR_RETURN(impl->store,
                          store::ModuleStore::Open(impl->options.data_dir, impl->options.store));
  } else {
    REEF_ASSIGN_OR_RETURN(
        impl->store, store::ModuleStore::OpenPostgres(impl->options.store_conninfo,
                                                      impl->options.data_dir, impl->options.store));
  }
  impl->keys = std::make_unique<KeyRing>(*impl->store);
  REEF_RETURN_IF_ERROR(impl->OpenResults());
  impl->fleet = impl->options.fleet;
  if (!impl->fleet) {
    REEF_ASSIGN_OR_RETURN(impl->fleet, actor::Runtime::CreateFleet(impl->options.reactors));
  }
  impl->options.fleet.reset();  // held once, in impl->fleet
  impl->reactor_instances.resize(impl->fleet->ReactorCount());
  impl->io = std::make_unique<IoPool>("command I/O", std::max(1u, impl->options.io_threads),
                                      impl->options.max_executions);
  impl->query_io = std::make_unique<IoPool>(
      "projector queries", std::max(1u, impl->options.query_threads), impl->options.max_executions);
  // Each effect worker has one task at most waiting here (SerialQueue), so the bound is loose.
  impl->effect_io = std::make_unique<IoPool>(
      "effect workers' I/O", std::max(1u, impl->options.effect_io_threads), 1u << 16);
  std::unique_ptr<ModuleRuntime> runtime(new ModuleRuntime(std::move(impl)));
  Impl& r = *runtime->impl_;
  // Other processes sharing the store: follow their changes (a no-op for the embedded store).
  r.store->Watch([&r](const store::StoreChange& change) { r.OnStoreChange(change); });
  REEF_ASSIGN_OR_RETURN(auto active, r.store->ListActive());
  MutexLock lock(r.lifecycle_mu);
  for (const store::ActiveModule& m : active) {
    if (m.kind == ModuleKind::kCommand) continue;
    // (The store's watcher may have started it already, following "everything".)
    Status started = r.SyncModule(m.kind, m.name);
    if (!started.ok()) {
      spdlog::error("{} could not start: {}", Key(m.kind, m.name), started.message());
    }
  }
  return runtime;
}

void ModuleRuntime::BeginStop() {
  MutexLock lock(impl_->flight_mu);
  impl_->stop_requested.store(true, std::memory_order_relaxed);
}

void ModuleRuntime::Stop() {
  BeginStop();
  {
    // Executions and queries in progress end first; they need the reactors and I/O threads.
    MutexLock lock(impl_->flight_mu);
    while (impl_->in_flight > 0) impl_->flight_cv.Wait(impl_->flight_mu);
  }
  // The reactors' instances end on their reactors' threads, like any instance that ran there.
  for (uint32_t reactor = 0; reactor < impl_->reactor_instances.size(); ++reactor) {
    (void)impl_->fleet->PostAndWait(reactor,
                                    [this, reactor] { impl_->reactor_instances[reactor].clear(); });
  }
  MutexLock lock(impl_->lifecycle_mu);
  std::vector<ModuleKey> keys;
  {
    MutexLock inner(impl_->mu);
    for (const auto& [key, runner] : impl_->runners) keys.push_back(key);
  }
  for (const ModuleKey& key : keys) impl_->StopRunner(key);
}

Result<store::UploadResult> ModuleRuntime::Upload(ModuleKind kind, std::string_view name,
                                                  std::string_view version,
                                                  std::span<const uint8_t> wasm, bool activate) {
  REEF_RETURN_IF_ERROR(store::ValidateModuleName(name));
  REEF_RETURN_IF_ERROR(store::ParseSemVer(version).status());
  if (wasm.size() > impl_->options.store.max_module_bytes) {
    return Status::LimitExceeded(fmt::format("module of {} bytes exceeds max_module_bytes={}",
                                             wasm.size(), impl_->options.store.max_module_bytes));
  }
  auto module = wasm::Module::FromBinary(wasm, Key(kind, name) + ".wasm");
  if (!module.ok()) return Status::InvalidArgument(module.status().message());
  // Instantiating checks the imports against the kind's manifest and runs the start function.
  auto probe =
      ModuleInstance::Create(kind, *module, fmt::format("{}@{}", Key(kind, name), version));
  if (!probe.ok()) return Status::InvalidArgument(probe.status().message());
  REEF_ASSIGN_OR_RETURN(auto uploaded, impl_->store->Upload(kind, name, version, wasm));
  REEF_RETURN_IF_ERROR(impl_->store->PutArtifact(uploaded.version.sha256, "wasm", wasm));
  if (activate) REEF_RETURN_IF_ERROR(Activate(kind, name, version));
  return uploaded;
}

Status ModuleRuntime::Activate(ModuleKind kind, std::string_view name, std::string_view version) {
  MutexLock lock(impl_->lifecycle_mu);
  REEF_ASSIGN_OR_RETURN(auto info, impl_->store->Get(kind, name));
  const store::ModuleVersion* found = nullptr;
  for (const auto& v : info.versions) {
    if (v.version == version) found = &v;
  }
  if (found == nullptr) {
    return Status::NotFound(fmt::format("{} has no version {}", Key(kind, name), version));
  }
  if (info.active_version == version) {
    MutexLock inner(impl_->mu);
    auto it = impl_->runners.find({kind, std::string(name)});
    if (kind == ModuleKind::kCommand ||
        (it != impl_->runners.end() && it->second->Snapshot().state != "failed")) {
      return Status::Ok();  // already active and running: nothing to upgrade
    }
    // A failed runner of this version is started again below.
  }
  // Load before switching, so a broken version never replaces a working one.
  REEF_RETURN_IF_ERROR(impl_->LoadModule(kind, name, version, found->sha256).status());
  REEF_RETURN_IF_ERROR(impl_->store->SetActive(kind, name, version));
  impl_->Forget(kind, name);
  spdlog::info("{} version {} is active", Key(kind, name), version);
  if (kind == ModuleKind::kCommand) return Status::Ok();
  return impl_->StartRunner(kind, std::string(name));
}

Status ModuleRuntime::Deactivate(ModuleKind kind, std::string_view name) {
  MutexLock lock(impl_->lifecycle_mu);
  REEF_RETURN_IF_ERROR(impl_->store->ClearActive(kind, name));
  impl_->Forget(kind, name);
  impl_->StopRunner({kind, std::string(name)});
  spdlog::info("{} deactivated", Key(kind, name));
  return Status::Ok();
}

Status ModuleRuntime::Replay(ModuleKind kind, std::string_view name) {
  if (kind == ModuleKind::kCommand) {
    return Status::InvalidArgument("commands have no state to replay; only projectors and effects");
  }
  MutexLock lock(impl_->lifecycle_mu);
  REEF_ASSIGN_OR_RETURN(auto active, impl_->store->Active(kind, name));
  if (!active) {
    return Status::FailedPrecondition(
        fmt::format("{} is not active; activate a version before replaying", Key(kind, name)));
  }
  impl_->StopRunner({kind, std::string(name)});
  if (kind == ModuleKind::kEffect && impl_->store->shared()) {
    REEF_RETURN_IF_ERROR(impl_->store->ResetWatermark(name));
  }
  auto path = impl_->DatabasePath(kind, name);
  for (const char* suffix : {"", "-wal", "-shm"}) {
    std::error_code ec;
    std::filesystem::remove(path.string() + suffix, ec);
    if (ec) {
      return Status::Unavailable(
          fmt::format("cannot delete {}{}: {}", path.string(), suffix, ec.message()));
    }
  }
  spdlog::info("{} replays from position 0", Key(kind, name));
  return impl_->StartRunner(kind, std::string(name));
}

Status ModuleRuntime::SetEnv(ModuleKind kind, std::string_view name, std::string_view key,
                             std::string_view value) {
  MutexLock lock(impl_->lifecycle_mu);
  REEF_RETURN_IF_ERROR(impl_->store->SetEnv(kind, name, key, value));
  return impl_->EnvChanged(kind, std::string(name));
}

Status ModuleRuntime::DeleteEnv(ModuleKind kind, std::string_view name, std::string_view key) {
  MutexLock lock(impl_->lifecycle_mu);
  REEF_RETURN_IF_ERROR(impl_->store->DeleteEnv(kind, name, key));
  return impl_->EnvChanged(kind, std::string(name));
}

Status ModuleRuntime::DeleteVersion(ModuleKind kind, std::string_view name,
                                    std::string_view version) {
  MutexLock lock(impl_->lifecycle_mu);
  return impl_->store->DeleteVersion(kind, name, version);
}

Status ModuleRuntime::DeleteModule(ModuleKind kind, std::string_view name) {
  MutexLock lock(impl_->lifecycle_mu);
  REEF_RETURN_IF_ERROR(impl_->store->DeleteModule(kind, name));
  impl_->Forget(kind, name);
  return Status::Ok();
}

Result<json> ModuleRuntime::QueryProjector(std::string_view name, std::string_view sql,
                                           const json& params) {
  REEF_RETURN_IF_ERROR(store::ValidateModuleName(name));
  auto path = impl_->DatabasePath(ModuleKind::kProjector, name);
  if (!std::filesystem::exists(path)) {
    return Status::NotFound(fmt::format("projector '{}' has no database yet", name));
  }
  return QueryReadModel(path, sql, params, &impl_->stop_requested);
}

Status ModuleRuntime::Impl::Enter(std::string_view what) {
  MutexLock lock(flight_mu);
  if (stop_requested.load(std::memory_order_relaxed))
    return Status::Unavailable(fmt::format("{}: the server is stopping", what));
  if (in_flight >= options.max_executions) {
    return Status::Unavailable(
        fmt::format("{}: {} command executions and projector queries are in progress, the "
                    "limit; retry later",
                    what, in_flight));
  }
  ++in_flight;
  return Status::Ok();
}

void ModuleRuntime::Impl::Leave() {
  MutexLock lock(flight_mu);
  if (--in_flight == 0) flight_cv.NotifyAll();
}

void ModuleRuntime::QueryProjectorAsync(std::string name, std::string sql, json params,
                                        QueryDone done) {
  const std::string label = fmt::format("projectors/{}", name);
  if (Status entered = impl_->Enter(label); !entered.ok()) return done(entered);
  // The pool's queue is bounded by max_executions, which Enter counted: it takes this.
  auto work = std::make_shared<QueryDone>(std::move(done));
  const auto queued_at = std::chrono::steady_clock::now();
  bool queued = impl_->query_io->TrySubmit([this, name = std::move(name), sql = std::move(sql),
                                            params = std::move(params), work, queued_at, label] {
    const auto waited = std::chrono::steady_clock::now() - queued_at;
    if (impl_->stop_requested.load(std::memory_order_relaxed)) {
      (*work)(Status::Unavailable(label + ": the server is stopping; the query was not run"));
    } else if (waited > kMaxReadModelQueryWait) {
      (*work)(Status::Unavailable(fmt::format(
          "{}: the query waited {} ms for one of the {} query threads (longer than {} s) and "
          "was not run; the server is busy with other queries, retry later",
          label, std::chrono::duration_cast<std::chrono::milliseconds>(waited).count(),
          impl_->options.query_threads, kMaxReadModelQueryWait.count())));
    } else {
      (*work)(QueryProjector(name, sql, params));
    }
    impl_->Leave();
  });
  if (!queued) {
    (*work)(Status::Unavailable(label + ": the I/O threads are stopping"));
    impl_->Leave();
  }
}

Status ModuleRuntime::ShredScope(std::string_view scope) {
  Status shredded = impl_->keys->Shred(scope);
  // Kept decision states may hold what the shredded events said: fold again from scratch.
  impl_->fold_cache.Clear();
  return shredded;
}

const RuntimeOptions& ModuleRuntime::options() const {
  return impl_->options;
}
store::ModuleStore& ModuleRuntime::modules() {
  return *impl_->store;
}
KeyRing& ModuleRuntime::keys() {
  return *impl_->keys;
}
events::EventStore& ModuleRuntime::event_store() {
  return impl_->events;
}

}  // namespace reef::apps
