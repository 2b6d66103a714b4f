#include "apps/program/program_runtime.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <future>
#include <map>
#include <sstream>
#include <thread>

#include "apps/program/detail/program_state.h"
#include "core/clock.h"

namespace reef::apps::program {

namespace {

using json = nlohmann::json;

constexpr std::string_view kShuttingDown = "Reef is shutting down";

// Writes `text` to `path` through a temporary file, fsync and rename, so a crash leaves
// either the old file or the whole new one.
Status WriteFileDurably(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::path tmp = path;
  tmp += ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status::Unavailable(fmt::format("cannot write {}", tmp.string()));
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      ::close(fd);
      return Status::Unavailable(fmt::format("cannot write {}", tmp.string()));
    }
    done += static_cast<size_t>(n);
  }
  bool synced = ::fsync(fd) == 0;
  ::close(fd);
  std::error_code ec;
  if (!synced) return Status::Unavailable(fmt::format("cannot fsync {}", tmp.string()));
  std::filesystem::rename(tmp, path, ec);
  if (ec)
    return Status::Unavailable(fmt::format("cannot rename to {}: {}", path.string(), ec.message()));
  int dir = ::open(path.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return Status::Ok();
}

// program-<generation>.json files in `dir`, by generation.
std::map<uint64_t, std::filesystem::path> KeptPrograms(const std::filesystem::path& dir) {
  std::map<uint64_t, std::filesystem::path> kept;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    constexpr std::string_view kPrefix = "program-", kSuffix = ".json";
    if (name.size() <= kPrefix.size() + kSuffix.size() || !name.starts_with(kPrefix) ||
        !name.ends_with(kSuffix)) {
      continue;
    }
    std::string digits = name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
    if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 18) continue;
    kept.emplace(std::stoull(digits), entry.path());
  }
  return kept;
}

}  // namespace

std::string_view InvokeModeName(InvokeMode mode) {
  switch (mode) {
    case InvokeMode::kTry:
      return "try";
    case InvokeMode::kEnqueue:
      return "enqueue";
    case InvokeMode::kWait:
      return "wait";
  }
  return "?";
}

Result<InvokeMode> ParseInvokeMode(std::string_view name) {
  for (InvokeMode mode : {InvokeMode::kTry, InvokeMode::kEnqueue, InvokeMode::kWait}) {
    if (InvokeModeName(mode) == name) return mode;
  }
  return Status::InvalidArgument(
      fmt::format("unknown mode \"{}\"; expected try, enqueue or wait", name));
}

Result<uint32_t> ProgramRuntime::State::NextReactor() {
  std::vector<actor::ReactorInfo> up;
  for (const actor::ReactorInfo& r : runtime->Reactors()) {
    if (r.liveness == actor::ReactorLiveness::kUp) up.push_back(r);
  }
  if (up.empty()) return Status::Unavailable("no reactor is up to host a new instance");
  // The Up reactor hosting the fewest actors (all of the fleet's: a reactor that holds
  // thousands of the image's actors gets no new instance while others are lighter); among
  // equals, the next in turn.
  const size_t start = reactor_cursor.fetch_add(1);
  const actor::ReactorInfo* best = nullptr;
  for (size_t k = 0; k < up.size(); ++k) {
    const actor::ReactorInfo& candidate = up[(start + k) % up.size()];
    if (best == nullptr || candidate.actors < best->actors) best = &candidate;
  }
  return best->id;
}

Result<Instance*> ProgramRuntime::State::Pick(UnitState& unit,
                                              const std::optional<uint32_t>& target,
                                              InvokeOutcome* outcome) {
  if (target) {
    auto it = unit.instances.find(*target);
    if (it == unit.instances.end()) {
      outcome->failure = InvokeFailure::kNotFound;
      return Status::NotFound(fmt::format("unit {} has no instance {}", unit.spec.name, *target));
    }
    return &it->second;
  }
  auto spawn = [&]() REQUIRES(unit.mu) -> Result<Instance*> {
    REEF_ASSIGN_OR_RETURN(uint32_t reactor, NextReactor());
    actor::SpawnOptions spawn_options;
    spawn_options.mailbox_capacity = unit.spec.inbox_capacity;
    spawn_options.reactor = reactor;
    spawn_options.failure_policy = actor::FailurePolicy::kReset;
    spawn_options.group = group;  // null: the fleet's default group
    uint32_t id = unit.next_instance->fetch_add(1);
    if (group) spawn_options.tag = InstanceTag(unit, id);
    REEF_ASSIGN_OR_RETURN(
        ActorRef ref, runtime->Spawn(unit.implementation, unit.spec.initial_state, spawn_options));
    return &unit.instances.try_emplace(id, id, ref).first->second;
  };
  if (unit.spec.placement == Placement::kSingleton) {
    if (unit.instances.empty()) return spawn();
    return &unit.instances.begin()->second;
  }
  // Replicated: an idle instance, round-robin from the cursor.
  std::vector<Instance*> ring;
  for (auto& [id, instance] : unit.instances) ring.push_back(&instance);
  size_t n = ring.size();
  Instance* least = nullptr;
  uint64_t least_load = UINT64_MAX;
  for (size_t k = 0; k < n; ++k) {
    size_t index = (unit.cursor + k) % n;
    Instance* candidate = ring[index];
    auto usage = runtime->Mailbox(candidate->actor);
    uint64_t load = (usage.ok() ? usage->used : 0) + candidate->use->pending.load();
    if (load == 0) {
      unit.cursor = static_cast<uint32_t>(index + 1);
      return candidate;
    }
    if (load < least_load) {
      least = candidate;
      least_load = load;
    }
  }
  if (n < unit.spec.instance_limit) return spawn();
  unit.cursor = unit.cursor + 1;
  return least;
}

InvokeOutcome ProgramRuntime::Invoke(InvokeRequest request) {
  std::promise<InvokeOutcome> answer;
  std::future<InvokeOutcome> outcome = answer.get_future();
  InvokeAsync(std::move(request),
              [&answer](InvokeOutcome done) { answer.set_value(std::move(done)); });
  return outcome.get();  // InvokeAsync answers within the timeout, or at shutdown
}

void ProgramRuntime::InvokeAsync(InvokeRequest request, InvokeDone done) {
  State& s = *state_;
  InvokeOutcome outcome;
  auto fail = [&](InvokeFailure failure, std::string message) {
    outcome.failure = failure;
    outcome.message = std::move(message);
    done(std::move(outcome));
  };
  if (s.refusing->load()) return fail(InvokeFailure::kUnavailable, std::string(kShuttingDown));
  if (request.timeout.count() < 0 || request.timeout > s.options.max_timeout) {
    return fail(InvokeFailure::kInvalid,
                fmt::format("timeout must be 0..{} ms", s.options.max_timeout.count()));
  }
  if (Status limits = CheckLimits(request.message, s.runtime->options().value_limits);
      !limits.ok()) {
    return fail(InvokeFailure::kInvalid, limits.WithContext("message").ToString());
  }
  // A deploy may retire the unit between the two lookups below: then route again, on the
  // program that replaced it.
  std::shared_ptr<UnitState> unit;
  std::optional<ActorRef> picked_ref;
  std::shared_ptr<InstanceUse> use;
  for (int attempt = 0; !picked_ref; ++attempt) {
    {
      MutexLock lock(s.mu);
      if (!s.current) return fail(InvokeFailure::kNotFound, "no program is deployed");
      auto it = s.units.find(request.unit);
      if (it == s.units.end()) {
        return fail(
            InvokeFailure::kNotFound,
            fmt::format("program {} has no unit {}", s.current->manifest.program, request.unit));
      }
      unit = it->second;
      outcome.generation = s.current->generation;
    }
    MutexLock lock(unit->mu);
    if (unit->retired && attempt < 100) continue;
    auto picked = s.Pick(*unit, request.instance, &outcome);
    if (!picked.ok()) {
      return fail(outcome.failure == InvokeFailure::kNotFound ? InvokeFailure::kNotFound
                                                              : InvokeFailure::kUnavailable,
                  picked.status().message());
    }
    Instance& instance = **picked;
    instance.use->pending.fetch_add(1);
    instance.use->Touch();
    outcome.instance = instance.id;
    picked_ref = instance.actor;
    use = instance.use;
  }
  const ActorRef target = *picked_ref;
  // Runs once, on whichever thread the hand-over ends on (this one, a reactor, or the
  // runtime's at shutdown): books the invocation and answers.
  // Holds nothing of the runtime's by reference: a durable answer may come after it is gone.
  auto finish = [refusing = s.refusing, unit, use, outcome = std::move(outcome),
                 unit_name = request.unit,
                 done = std::move(done)](Result<Value> reply, bool queued) mutable {
    use->Touch();
    if (queued) use->invocations.fetch_add(1);
    use->pending.fetch_sub(1);
    (queued ? unit->invocations : unit->rejected).fetch_add(1);
    if (reply.ok()) {
      outcome.result = std::move(*reply);
      return done(std::move(outcome));
    }
    const Status& sent = reply.status();
    std::string where = fmt::format("unit {} instance {}", unit_name, outcome.instance);
    switch (sent.code()) {
      case Code::kLimitExceeded:
        outcome.failure = InvokeFailure::kInboxFull;
        outcome.message = fmt::format("the inbox of {} is full", where);
        break;
      case Code::kFailedPrecondition:
        outcome.failure = InvokeFailure::kFailed;
        outcome.message = fmt::format("{}: {}", where, sent.message());
        break;
      case Code::kUnavailable:
        outcome.failure = refusing->load() ? InvokeFailure::kUnavailable
                          : queued         ? InvokeFailure::kTimeout
                                           : InvokeFailure::kNoRoom;
        outcome.message = fmt::format("{}: {}", where, sent.message());
        break;
      default:
        outcome.failure = InvokeFailure::kUnavailable;
        outcome.message = fmt::format("{}: {}", where, sent.ToString());
        break;
    }
    done(std::move(outcome));
  };
  // The output gate of durable instances: an answer that says the message was queued, or that
  // gives the handler's reply, waits until the delivery (and the commit) are on disk.
  // (The runtime outlives every answer it gives: a plain pointer, never the last holder.)
  auto answer = [runtime = s.runtime.get(), group = s.group, target, finish = std::move(finish)](
                    Result<Value> reply, bool queued) mutable {
    if (!group || !queued) return finish(std::move(reply), queued);
    runtime->WhenDurable(
        *group, target,
        [finish = std::move(finish), reply = std::move(reply), queued](Status durable) mutable {
          if (!durable.ok()) {
            reply = Status::Internal(
                fmt::format("the invocation was not made durable: {}", durable.message()));
          }
          finish(std::move(reply), queued);
        });
  };
  switch (request.mode) {
    case InvokeMode::kTry: {
      Status sent = s.runtime->TrySend(target, std::move(request.message)).status;
      if (sent.ok()) return answer(Value::Null(), true);
      return answer(sent, false);
    }
    case InvokeMode::kEnqueue:
      return s.runtime->SendAsync(target, std::move(request.message), request.timeout,
                                  std::move(answer));
    case InvokeMode::kWait:
      return s.runtime->CallAsync(target, std::move(request.message), request.timeout,
                                  actor::ReplyPolicy::kOptional, std::move(answer));
  }
}

void ProgramRuntime::RefuseInvocations() {
  state_->refusing->store(true);
  state_->runtime->FailPendingCalls(std::string(kShuttingDown));
}

void ProgramRuntime::BeginStop() {
  RefuseInvocations();
  {
    MutexLock lock(state_->stop_mu);
    state_->stopping = true;  // Drain's loop ends at its next look
  }
  state_->stop_cv.NotifyAll();
}

Result<DeployReport> ProgramRuntime::State::Publish(std::shared_ptr<const Program> program,
                                                    std::vector<Tagged>* retiring) {
  DeployReport report;
  report.generation = program->generation;
  report.program = program->manifest.program;
  std::map<std::string, std::shared_ptr<UnitState>> next;
  MutexLock lock(mu);
  for (const auto& [name, unit] : program->units) {
    auto old = units.find(name);
    if (old != units.end() && old->second->code_fingerprint == unit.code_fingerprint) {
      MutexLock unit_lock(old->second->mu);
      old->second->spec = unit.spec;  // limits apply from now on; instances stay
      next.emplace(name, old->second);
      report.unchanged.push_back(name);
      continue;
    }
    auto state = std::make_shared<UnitState>();
    auto& ids = instance_ids[name];
    if (!ids) ids = std::make_shared<std::atomic<uint32_t>>(1);
    state->name = name;
    state->next_instance = ids;
    state->implementation = unit.implementation;
    state->code_fingerprint = unit.code_fingerprint;
    state->code_generation = program->generation;
    {
      MutexLock unit_lock(state->mu);  // never waited for: nothing else has the state yet
      state->spec = unit.spec;
    }
    next.emplace(name, std::move(state));
    (old != units.end() ? report.changed : report.added).push_back(name);
  }
  for (auto& [name, state] : units) {
    if (next.count(name) > 0 && next.at(name) == state) continue;
    if (program->units.count(name) == 0) report.removed.push_back(name);
    MutexLock unit_lock(state->mu);
    state->retired = true;
    retired.push_back(state);
    if (group) {  // durable: marked, so that a restart keeps them retired
      for (const auto& [id, instance] : state->instances) {
        retiring->emplace_back(instance.actor, InstanceTag(*state, id, /*retired=*/true));
      }
    }
  }
  units = std::move(next);
  current = std::move(program);
  // Restored instances no program took at start: given to these units now, before any
  // invocation can see the units and spawn an instance in their place.
  if (!unattached.empty()) Reattach(std::exchange(unattached, {}), retiring);
  return report;
}

Status ProgramRuntime::State::TrialInstantiate(const std::shared_ptr<const wasm::Module>& module) {
  REEF_ASSIGN_OR_RETURN(uint32_t reactor, runtime->PlaceWork());
  Status instantiated = Status::Ok();
  REEF_RETURN_IF_ERROR(runtime->PostAndWait(reactor, [&] {
    try {
      wasm::Engine engine(actor::AbiV1Registry(), options.limits.engine);
      instantiated = engine.Instantiate(module).status();
    } catch (const std::exception& e) {  // on a reactor: never let it end the process
      instantiated = Status::Internal(fmt::format("instantiating failed: {}", e.what()));
    }
  }));
  return instantiated;
}

Result<DeployReport> ProgramRuntime::Deploy(const nlohmann::json& body) {
  State& s = *state_;
  MutexLock lock(s.deploy_mu);
  uint64_t generation = s.last_generation + 1;
  REEF_ASSIGN_OR_RETURN(auto program,
                        BuildProgram(body, generation, UnixNowMs(), s.options.limits,
                                     [&s](const std::shared_ptr<const wasm::Module>& module) {
                                       return s.TrialInstantiate(module);
                                     }));
  json kept = {
      {"generation", generation}, {"deployed_at_ms", program->deployed_at_ms}, {"request", body}};
  REEF_RETURN_IF_ERROR(
      WriteFileDurably(s.programs_dir / fmt::format("program-{}.json", generation), kept.dump()));
  s.last_generation = generation;
  auto files = KeptPrograms(s.programs_dir);
  while (files.size() > std::max<uint32_t>(1, s.options.kept_programs)) {
    std::error_code ec;
    std::filesystem::remove(files.begin()->second, ec);
    files.erase(files.begin());
  }
  std::vector<Tagged> retiring;
  auto report = s.Publish(std::move(program), &retiring);
  if (report.ok()) {
    s.Settle(std::move(retiring));
    spdlog::info(
        "deployed program {} generation {}: {} added, {} changed, {} unchanged, {} "
        "removed",
        report->program, generation, report->added.size(), report->changed.size(),
        report->unchanged.size(), report->removed.size());
  }
  return report;
}

void ProgramRuntime::DeployAsync(nlohmann::json body, DeployDone done) {
  auto owned_body = std::make_shared<nlohmann::json>(std::move(body));
  SubmitForResult<DeployReport>(
      *state_->deploys, "the deploy", [this, owned_body] { return Deploy(*owned_body); },
      std::move(done),
      fmt::format("{} deploys are waiting already (or Reef is shutting down); try again later",
                  kMaxWaitingDeploys));
}

std::shared_ptr<const Program> ProgramRuntime::Current() const {
  MutexLock lock(state_->mu);
  return state_->current;
}

void ProgramRuntime::State::EvictIdle() {
  std::vector<std::shared_ptr<UnitState>> live, old;
  {
    MutexLock lock(mu);
    for (auto& [name, unit] : units) live.push_back(unit);
    old = retired;
  }
  auto sweep = [&](UnitState& unit, bool is_retired) {
    MutexLock lock(unit.mu);
    if (!is_retired &&
        (unit.spec.placement == Placement::kSingleton || unit.spec.idle_eviction_ms == 0)) {
      return;
    }
    auto idle_for = std::chrono::milliseconds(is_retired ? 0 : unit.spec.idle_eviction_ms);
    Clock::time_point now = Clock::now();
    for (auto it = unit.instances.begin(); it != unit.instances.end();) {
      Instance& instance = it->second;
      auto usage = runtime->Mailbox(instance.actor);
      if (!usage.ok()) {  // gone already
        it = unit.instances.erase(it);
        continue;
      }
      if (instance.use->pending.load() > 0 || usage->used > 0) {
        instance.use->Touch();  // busy counts as used
        ++it;
        continue;
      }
      if (now - instance.use->LastUsed() < idle_for || !runtime->Remove(instance.actor).ok()) {
        ++it;
        continue;
      }
      unit.evicted.fetch_add(1);
      it = unit.instances.erase(it);
    }
  };
  for (auto& unit : live) sweep(*unit, false);
  for (auto& unit : old) sweep(*unit, true);
  MutexLock lock(mu);
  std::erase_if(retired, [](const std::shared_ptr<UnitState>& unit) {
    MutexLock unit_lock(unit->mu);
    return unit->instances.empty();
  });
}

void ProgramRuntime::State::EvictLoop() {
  MutexLock lock(stop_mu);
  while (!stopping) {
    stop_cv.WaitFor(stop_mu, options.eviction_interval);
    if (stopping) break;
    lock.Unlock();
    EvictIdle();
    lock.Lock();
  }
}

const ProgramRuntimeOptions& ProgramRuntime::options() const {
  return state_->options;
}

actor::Runtime& ProgramRuntime::runtime() {
  return *state_->runtime;
}

const actor::DurableImage* ProgramRuntime::durable() const {
  return state_->durable.get();
}

ProgramRuntime::ProgramRuntime(std::unique_ptr<State> state) : state_(std::move(state)) {}

ProgramRuntime::~ProgramRuntime() {
  BeginStop();               // ends drains in progress early (Drain)
  state_->deploys.reset();   // waits for the deploy in progress; drops those waiting
  state_->drains.reset();    // the same for drains
  state_->controls.reset();  // and for views and kills
  if (state_->evictor.joinable()) state_->evictor.join();
  state_->runtime.reset();
}

Result<std::unique_ptr<ProgramRuntime>> ProgramRuntime::Open(ProgramRuntimeOptions options) {
  auto state = std::make_unique<State>();
  state->options = std::move(options);
  state->programs_dir = state->options.data_dir / "programs";
  std::error_code ec;
  std::filesystem::create_directories(state->programs_dir, ec);
  if (ec) {
    return Status::Unavailable(
        fmt::format("cannot create {}: {}", state->programs_dir.string(), ec.message()));
  }
  state->runtime = std::move(state->options.fleet);
  if (!state->runtime) {
    REEF_ASSIGN_OR_RETURN(state->runtime, actor::Runtime::CreateFleet(state->options.reactors));
  }
  std::vector<Tagged> restored;
  if (state->options.durable) {
    REEF_ASSIGN_OR_RETURN(restored, state->OpenDurable());
  } else if (std::filesystem::exists(state->options.data_dir / "units", ec)) {
    spdlog::warn(
        "unit instances: ephemeral: the durable instances in {} are left as they are and not "
        "loaded; start without --ephemeral to get them back",
        (state->options.data_dir / "units").string());
  }

  auto kept = KeptPrograms(state->programs_dir);
  MutexLock deploy_lock(state->deploy_mu);  // as Deploy; never waited for: nothing runs yet
  std::vector<Tagged> retiring;
  // The kept program's Publish takes the restored instances; without one, the next deploy's.
  state->unattached = std::move(restored);
  if (!kept.empty()) {
    state->last_generation = kept.rbegin()->first;
    const auto& [generation, path] = *kept.rbegin();
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    json file = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
    Result<std::shared_ptr<const Program>> program =
        file.is_discarded() || !file.contains("request")
            ? Result<std::shared_ptr<const Program>>(
                  Status::DataLoss("not a program file (JSON with \"request\")"))
            : BuildProgram(file["request"], generation, file.value("deployed_at_ms", int64_t{0}),
                           state->options.limits,
                           [raw = state.get()](const std::shared_ptr<const wasm::Module>& module) {
                             return raw->TrialInstantiate(module);
                           });
    if (program.ok()) {
      REEF_ASSIGN_OR_RETURN(DeployReport report, state->Publish(std::move(*program), &retiring));
      spdlog::info("program {} generation {} redeployed from {}", report.program, generation,
                   path.string());
    } else {
      spdlog::error("cannot redeploy the kept program {}: {} (left in place; deploy again)",
                    path.string(), program.status().ToString());
    }
  }
  state->Settle(std::move(retiring));
  deploy_lock.Unlock();
  state->deploys = std::make_unique<IoPool>("program deploys", 1, kMaxWaitingDeploys);
  state->drains = std::make_unique<IoPool>("reactor drains", 2, kMaxWaitingDrains);
  state->controls = std::make_unique<IoPool>("unit controls", 2, kMaxWaitingControls);
  State* raw = state.get();
  state->evictor = std::thread([raw] { raw->EvictLoop(); });
  return std::unique_ptr<ProgramRuntime>(new ProgramRuntime(std::move(state)));
}

}  // namespace reef::apps::program
