#include "apps/module_runtime.h"

#include <fmt/format.h>
#include <openssl/sha.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>

#include <array>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "apps/detail/keyed_turns.h"
#include "apps/module_abi.h"
#include "apps/runners.h"
#include "core/cbor.h"
#include "wasm/module.h"

namespace reef::apps {

using store::ModuleKind;
using json = nlohmann::json;

namespace {

constexpr size_t kFoldBatchEvents = 256;

std::array<uint8_t, 32> Sha256(std::string_view text) {
  std::array<uint8_t, 32> out;
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), out.data());
  return out;
}

// A UUID (version 8, RFC 9562 section 5.8) made of the first 16 bytes of SHA-256(text).
events::EventId DerivedId(std::string_view text) {
  auto digest = Sha256(text);
  events::EventId id;
  std::copy_n(digest.begin(), id.size(), id.begin());
  id[6] = static_cast<uint8_t>((id[6] & 0x0f) | 0x80);
  id[8] = static_cast<uint8_t>((id[8] & 0x3f) | 0x80);
  return id;
}

// The execution id of a command run with an idempotency key: the same for every run of that
// key, so its events get the same ids (execution id + "#" + index) and the event store, where
// ids are unique, stores them once whatever happens between append and record.
std::string KeyedExecutionId(std::string_view command, std::string_view key) {
  return events::FormatEventId(
      DerivedId(fmt::format("command {}\nidempotency key {}", command, key)));
}

events::EventId CommandEventId(std::string_view execution_id, size_t index) {
  return DerivedId(fmt::format("{}#{}", execution_id, index));
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string Key(ModuleKind kind, std::string_view name) {
  return fmt::format("{}/{}", store::ModuleKindPlural(kind), name);
}

// The (kind, name) key of the runners map and the counters.
using ModuleKey = std::pair<ModuleKind, std::string>;

struct CommandCounters {
  uint64_t appended = 0;
  uint64_t rejected = 0;
  uint64_t conflicts = 0;  // attempts retried after a conflict
  uint64_t failed = 0;
  std::string last_error;  // the last failure's message ("" until one)
};

std::string EscapeLabel(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\\' || c == '"') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace

struct ModuleRuntime::Impl {
  events::EventStore& events;
  RuntimeOptions options;
  std::unique_ptr<store::ModuleStore> store;
  std::unique_ptr<KeyRing> keys;
  sqlite3* results_db = nullptr;  // command_results in reef.sqlite; guarded by results_mu
  std::mutex results_mu;

  std::mutex compiled_mu;
  std::map<std::string, std::shared_ptr<const wasm::Module>> compiled;  // by SHA-256

  // Command executions whose queries hash to the same stripe take turns (ExecuteOnce).
  std::array<std::mutex, 256> query_turns;
  // Executions with the same command and idempotency key take turns (Execute).
  detail::KeyedTurns key_turns;

  // Serializes lifecycle changes (activate, deactivate, replay, env, delete).
  std::mutex lifecycle_mu;
  // Guards runners, restarts, carried_failures, switching, command_counters, env_cache.
  mutable std::mutex mu;
  std::map<ModuleKey, std::unique_ptr<Runner>> runners;
  std::map<ModuleKey, uint64_t> restarts;
  std::map<ModuleKey, uint64_t> carried_failures;
  // The last status of runners being replaced (StartRunner), shown until the next one runs.
  std::map<ModuleKey, ModuleStatus> switching;
  std::map<std::string, CommandCounters, std::less<>> command_counters;
  std::map<std::string, std::map<std::string, std::string>, std::less<>> env_cache;  // commands
  // Active command versions (nullopt: none), so an execution does not query reef.sqlite.
  std::map<std::string, std::optional<store::ActiveModule>, std::less<>> active_commands;

  Impl(events::EventStore& e, RuntimeOptions o) : events(e), options(std::move(o)) {}

  std::filesystem::path DatabasePath(ModuleKind kind, std::string_view name) const {
    return options.data_dir / store::ModuleKindPlural(kind) / (std::string(name) + ".sqlite");
  }

  // The validated module of one stored version: from memory, else from cache/<sha256>.wasm,
  // else from the module store (which checks the SHA-256), then written to the cache.
  Result<std::shared_ptr<const wasm::Module>> LoadModule(ModuleKind kind, std::string_view name,
                                                         std::string_view version,
                                                         std::string_view sha256) {
    {
      std::lock_guard lock(compiled_mu);
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
    std::lock_guard lock(compiled_mu);
    compiled[std::string(sha256)] = module;
    return module;
  }

  // Stops the runner of (kind, name), if any, and returns its last status (failures carried
  // over included); nullopt when none ran. With `handing_over`, the statuses show it as up and
  // "restarting" from the moment it is taken out until StartRunner puts the next one in.
  // REQUIRES: lifecycle_mu.
  std::optional<ModuleStatus> StopRunner(const ModuleKey& key, bool handing_over = false) {
    std::unique_ptr<Runner> runner;
    {
      std::lock_guard lock(mu);
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
    std::lock_guard lock(mu);
    carried_failures[key] += last.failures;
    last.failures = carried_failures[key];
    if (auto it = switching.find(key); it != switching.end()) it->second.failures = last.failures;
    return last;
  }

  // Starts the active version of a projector or effect (stopping a running one first). While
  // one runner hands over to the next, the statuses show the old one as up and "restarting",
  // so an upgrade is not an outage and no counter goes back (docs/operations.md "Monitoring").
  // REQUIRES: lifecycle_mu.
  Status StartRunner(ModuleKind kind, const std::string& name) {
    ModuleKey key{kind, name};
    std::optional<ModuleStatus> last = StopRunner(key, /*handing_over=*/true);
    uint64_t position = last ? last->position : 0;
    struct Done {
      Impl& impl;
      const ModuleKey& key;
      ~Done() {
        std::lock_guard lock(impl.mu);
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
    std::unique_ptr<Runner> runner;
    {
      std::lock_guard lock(mu);
      auto [it, first] = restarts.try_emplace(key, 0);
      if (!first) ++it->second;
      spec.restarts = it->second;
    }
    runner = kind == ModuleKind::kProjector ? MakeProjectorRunner(std::move(spec))
                                            : MakeEffectRunner(std::move(spec));
    runner->Start();
    std::lock_guard lock(mu);
    runners[key] = std::move(runner);
    return Status::Ok();
  }

  // Refreshes what depends on the module's env (commands: the cache; others: a restart).
  // REQUIRES: lifecycle_mu.
  Status EnvChanged(ModuleKind kind, const std::string& name) {
    if (kind == ModuleKind::kCommand) {
      Forget(kind, name);
      return Status::Ok();
    }
    bool running;
    {
      std::lock_guard lock(mu);
      running = runners.count({kind, name}) > 0;
    }
    return running ? StartRunner(kind, name) : Status::Ok();
  }

  Result<std::optional<store::ActiveModule>> ActiveCommand(std::string_view name) {
    {
      std::lock_guard lock(mu);
      if (auto it = active_commands.find(name); it != active_commands.end()) return it->second;
    }
    REEF_ASSIGN_OR_RETURN(auto active, store->Active(ModuleKind::kCommand, name));
    std::lock_guard lock(mu);
    active_commands[std::string(name)] = active;
    return active;
  }

  // Drops cached facts about module (kind, name) after a lifecycle change.
  void Forget(ModuleKind kind, std::string_view name) {
    if (kind != ModuleKind::kCommand) return;
    std::lock_guard lock(mu);
    if (auto it = active_commands.find(name); it != active_commands.end())
      active_commands.erase(it);
    if (auto it = env_cache.find(name); it != env_cache.end()) env_cache.erase(it);
  }

  Result<std::map<std::string, std::string>> CommandEnv(std::string_view name) {
    {
      std::lock_guard lock(mu);
      if (auto it = env_cache.find(name); it != env_cache.end()) return it->second;
    }
    REEF_ASSIGN_OR_RETURN(auto env, store->Env(ModuleKind::kCommand, name));
    std::lock_guard lock(mu);
    env_cache[std::string(name)] = env;
    return env;
  }

  // ---- Command idempotency records ----

  Status OpenResults() {
    int rc = sqlite3_open_v2((options.data_dir / "reef.sqlite").c_str(), &results_db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                             nullptr);
    if (rc != SQLITE_OK) return Status::Unavailable("cannot open reef.sqlite for command results");
    sqlite3_busy_timeout(results_db, 5'000);
    return ExecSql(results_db,
                   "CREATE TABLE IF NOT EXISTS command_results ("
                   " command TEXT NOT NULL, idempotency_key TEXT NOT NULL,"
                   " response TEXT NOT NULL, created_at INTEGER NOT NULL,"
                   " PRIMARY KEY (command, idempotency_key))");
  }

  std::optional<json> FindResult(std::string_view command, std::string_view key) {
    std::lock_guard lock(results_mu);
    sqlite3_stmt* s = nullptr;
    sqlite3_prepare_v2(results_db,
                       "SELECT response FROM command_results WHERE command = ?1 AND "
                       "idempotency_key = ?2",
                       -1, &s, nullptr);
    sqlite3_bind_text(s, 1, command.data(), static_cast<int>(command.size()), SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, key.data(), static_cast<int>(key.size()), SQLITE_TRANSIENT);
    std::optional<json> out;
    if (sqlite3_step(s) == SQLITE_ROW) {
      out = json::parse(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)), nullptr, false);
      if (out->is_discarded()) out.reset();
    }
    sqlite3_finalize(s);
    return out;
  }

  void SaveResult(std::string_view command, std::string_view key, const json& response) {
    std::lock_guard lock(results_mu);
    sqlite3_stmt* s = nullptr;
    sqlite3_prepare_v2(results_db,
                       "INSERT OR IGNORE INTO command_results (command, idempotency_key, "
                       "response, created_at) VALUES (?1, ?2, ?3, ?4)",
                       -1, &s, nullptr);
    std::string text = response.dump();
    sqlite3_bind_text(s, 1, command.data(), static_cast<int>(command.size()), SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, key.data(), static_cast<int>(key.size()), SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 3, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 4, NowMs());
    if (sqlite3_step(s) != SQLITE_DONE) {
      spdlog::warn("command {}: could not store the idempotency record: {}", command,
                   sqlite3_errmsg(results_db));
    }
    sqlite3_finalize(s);
  }

  void Count(std::string_view command, const CommandCounters& delta) {
    std::lock_guard lock(mu);
    auto& c = command_counters[std::string(command)];
    c.appended += delta.appended;
    c.rejected += delta.rejected;
    c.conflicts += delta.conflicts;
    c.failed += delta.failed;
    if (!delta.last_error.empty()) c.last_error = delta.last_error;
  }

  // The outcome of an earlier execution from its idempotency record: the events are read back
  // from the store, so shredded data reads as null like everywhere else.
  Result<CommandOutcome> ReplayOutcome(const json& record) {
    CommandOutcome out;
    out.kind = record.value("kind", "") == "rejected" ? CommandOutcome::Kind::kRejected
                                                      : CommandOutcome::Kind::kAppended;
    out.message = record.value("message", "");
    out.position = record.value("position", uint64_t{0});
    out.execution_id = record.value("execution_id", "");
    out.attempts = record.value("attempts", 1u);
    out.replayed = true;
    for (const json& p : record.value("positions", json::array())) {
      if (!p.is_number_unsigned()) continue;
      auto read = events.Read({}, {.from = p.get<uint64_t>(), .limit = 1});
      if (!read.ok()) return read.status();
      if (read->events.empty() || read->events[0].position != p.get<uint64_t>()) {
        return Status::DataLoss(
            fmt::format("the idempotency record names position {}, which the "
                        "event store does not hold",
                        p.get<uint64_t>()));
      }
      REEF_ASSIGN_OR_RETURN(Value v, EventToValue(ViewOf(read->events[0]), keys.get()));
      out.event_data.push_back(v.as_record().at("data"));
      out.events.push_back(std::move(read->events[0]));
    }
    return out;
  }

  // The outcome of an execution with `key` whose events are in the store but whose record is
  // not (the process stopped between the append and the record, or another node ran it):
  // found by the events' ids. nullopt when the store holds none of them.
  Result<std::optional<CommandOutcome>> RecoverOutcome(std::string_view command,
                                                       std::string_view key) {
    CommandOutcome out;
    out.execution_id = KeyedExecutionId(command, key);
    out.kind = CommandOutcome::Kind::kAppended;
    out.replayed = true;
    for (size_t i = 0;; ++i) {
      REEF_ASSIGN_OR_RETURN(auto found, events.ReadById(CommandEventId(out.execution_id, i)));
      if (!found) break;
      REEF_ASSIGN_OR_RETURN(Value v, EventToValue(ViewOf(*found), keys.get()));
      out.event_data.push_back(v.as_record().at("data"));
      out.position = found->position;
      out.events.push_back(std::move(*found));
    }
    if (out.events.empty()) return std::optional<CommandOutcome>();
    return std::optional<CommandOutcome>(std::move(out));
  }

  Result<CommandOutcome> ExecuteOnce(const std::string& name, const Value& input,
                                     const ExecuteOptions& options_in);
};

namespace {

// The idempotency record of an outcome: what happened and where, never event data (data
// may be encrypted, and a record must not keep a copy that crypto-shredding cannot reach).
json OutcomeJson(const CommandOutcome& outcome) {
  json j;
  j["kind"] = outcome.kind == CommandOutcome::Kind::kRejected ? "rejected" : "appended";
  j["message"] = outcome.message;
  j["position"] = outcome.position;
  j["execution_id"] = outcome.execution_id;
  j["attempts"] = outcome.attempts;
  json positions = json::array();
  for (const auto& event : outcome.events) positions.push_back(event.position);
  j["positions"] = std::move(positions);
  return j;
}

}  // namespace

Result<CommandOutcome> ModuleRuntime::Impl::ExecuteOnce(const std::string& name, const Value& input,
                                                        const ExecuteOptions& opts) {
  REEF_ASSIGN_OR_RETURN(auto active, ActiveCommand(name));
  if (!active) {
    return Status::NotFound(fmt::format("no active command named '{}'", name));
  }
  REEF_ASSIGN_OR_RETURN(auto module,
                        LoadModule(ModuleKind::kCommand, name, active->version, active->sha256));
  REEF_ASSIGN_OR_RETURN(auto env, CommandEnv(name));

  // One instance per module per thread, reset before every attempt: no execution sees
  // another's memory.
  thread_local std::map<std::string, std::unique_ptr<ModuleInstance>> instances;
  auto& slot = instances[active->sha256];
  if (!slot) {
    REEF_ASSIGN_OR_RETURN(
        slot, ModuleInstance::Create(ModuleKind::kCommand, module,
                                     fmt::format("commands/{}@{}", name, active->version)));
  }
  ModuleInstance& instance = *slot;

  CommandOutcome outcome;
  if (!opts.idempotency_key.empty()) {
    outcome.execution_id = KeyedExecutionId(name, opts.idempotency_key);
  } else {
    REEF_ASSIGN_OR_RETURN(auto id, events::NewEventId());
    outcome.execution_id = events::FormatEventId(id);
  }
  const int64_t now = NowMs();
  std::mt19937_64 jitter(std::random_device{}());

  for (uint32_t attempt = 0;; ++attempt) {
    outcome.attempts = attempt + 1;
    REEF_RETURN_IF_ERROR(instance.Reset());
    ModuleCallContext& ctx = instance.context();
    ctx.env = env;
    ctx.fixed_now_ms = now;
    ctx.random_seed = Sha256(outcome.execution_id);
    ctx.random_counter = 0;

    REEF_ASSIGN_OR_RETURN(Value init, instance.CallForValue("reef_command_init", {&input}));
    if (!init.is_record() || !init.as_record().count("state") || !init.as_record().count("query")) {
      return Status::InvalidArgument(fmt::format(
          "commands/{}: reef_command_init must return {{\"query\": ..., \"state\": ...}}", name));
    }
    Value state = init.as_record().at("state");
    const Value& query_value = init.as_record().at("query");
    std::optional<events::AppendCondition> condition;
    // Executions with the same query take turns from read to append, so within this process
    // they never conflict with each other (no retries, no 409 on a hot key); executions with
    // other queries run in parallel, and conflicts with them are retried.
    std::unique_lock<std::mutex> turn;
    if (!query_value.is_null()) {
      REEF_ASSIGN_OR_RETURN(events::Query query, QueryFromValue(query_value));
      REEF_ASSIGN_OR_RETURN(auto query_bytes, EncodeCbor(query_value, ModuleValueLimits()));
      size_t stripe = std::hash<std::string_view>{}(std::string_view(
                          reinterpret_cast<const char*>(query_bytes.data()), query_bytes.size())) %
                      query_turns.size();
      turn = std::unique_lock(query_turns[stripe]);
      events::Position from = 1;
      events::Position head = 0;
      while (true) {
        REEF_ASSIGN_OR_RETURN(auto page,
                              events.Read(query, {.from = from, .limit = kFoldBatchEvents}));
        head = page.head;
        if (!page.events.empty()) {
          List batch;
          batch.reserve(page.events.size());
          for (const auto& event : page.events) {
            REEF_ASSIGN_OR_RETURN(Value v, EventToValue(ViewOf(event), keys.get()));
            batch.push_back(std::move(v));
          }
          Value batch_value = Value::ListOf(std::move(batch));
          REEF_ASSIGN_OR_RETURN(
              state, instance.CallForValue("reef_command_fold", {&state, &input, &batch_value}));
          from = page.events.back().position + 1;
        }
        if (page.events.size() < kFoldBatchEvents) break;
      }
      condition = events::AppendCondition{std::move(query), head};
    }

    REEF_ASSIGN_OR_RETURN(Value decision,
                          instance.CallForValue("reef_command_decide", {&state, &input}));
    if (!decision.is_record()) {
      return Status::InvalidArgument(
          fmt::format("commands/{}: reef_command_decide must return {{\"events\": [...]}} or "
                      "{{\"error\": \"...\"}}",
                      name));
    }
    const Record& fields = decision.as_record();
    if (auto it = fields.find("error"); it != fields.end()) {
      if (!it->second.is_string()) {
        return Status::InvalidArgument(
            fmt::format("commands/{}: the decision's error must be a string", name));
      }
      outcome.kind = CommandOutcome::Kind::kRejected;
      outcome.message = it->second.as_string();
      return outcome;
    }
    auto events_it = fields.find("events");
    if (events_it == fields.end()) {
      return Status::InvalidArgument(
          fmt::format("commands/{}: the decision has neither \"events\" nor \"error\"", name));
    }
    events::EventMetadata metadata;
    metadata.timestamp_ms = now;
    metadata.causation_id = outcome.execution_id;
    metadata.correlation_id =
        opts.correlation_id.empty() ? outcome.execution_id : opts.correlation_id;
    metadata.idempotency_key = opts.idempotency_key;
    auto new_events = NewEventsFromValue(events_it->second, keys.get(), metadata);
    if (!new_events.ok()) {
      return new_events.status().WithContext(fmt::format("commands/{}: the decision", name));
    }
    for (size_t i = 0; i < new_events->size(); ++i) {
      (*new_events)[i].id = CommandEventId(outcome.execution_id, i);
    }
    outcome.event_data.clear();
    for (const Value& e : events_it->second.as_list()) {
      auto d = e.as_record().find("data");
      outcome.event_data.push_back(d == e.as_record().end() ? Value::Null() : d->second);
    }
    if (new_events->empty()) {
      outcome.position = events.Head();
      outcome.events.clear();
      return outcome;
    }
    std::vector<events::Event> to_append = *new_events;
    auto appended = events.Append(std::move(to_append), condition);
    if (appended.ok()) {
      outcome.position = *appended;
      outcome.events.clear();
      events::Position first = *appended - new_events->size() + 1;
      for (size_t i = 0; i < new_events->size(); ++i) {
        outcome.events.push_back({first + i, std::move((*new_events)[i])});
      }
      return outcome;
    }
    if (appended.status().code() != Code::kConflict || attempt >= options.command_max_retries) {
      if (appended.status().code() == Code::kConflict) {
        return Status::Conflict(fmt::format(
            "command {}: events matching its query kept being appended concurrently; gave up "
            "after {} attempts ({})",
            name, attempt + 1, appended.status().message()));
      }
      return appended.status();
    }
    Count(name, {.conflicts = 1});
    if (turn.owns_lock()) turn.unlock();  // others may go while this one backs off
    uint64_t cap_ms = static_cast<uint64_t>(options.command_retry_base.count())
                      << std::min(attempt, 10u);
    std::uniform_int_distribution<uint64_t> pick(0, std::max<uint64_t>(cap_ms * 1000, 1));
    std::this_thread::sleep_for(std::chrono::microseconds(pick(jitter)));
  }
}

ModuleRuntime::ModuleRuntime(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ModuleRuntime::~ModuleRuntime() {
  Stop();
  if (impl_->results_db != nullptr) sqlite3_close_v2(impl_->results_db);
}

Result<std::unique_ptr<ModuleRuntime>> ModuleRuntime::Open(events::EventStore& events,
                                                           RuntimeOptions options) {
  auto impl = std::make_unique<Impl>(events, std::move(options));
  REEF_ASSIGN_OR_RETURN(impl->store,
                        store::ModuleStore::Open(impl->options.data_dir, impl->options.store));
  impl->keys = std::make_unique<KeyRing>(*impl->store);
  REEF_RETURN_IF_ERROR(impl->OpenResults());
  std::unique_ptr<ModuleRuntime> runtime(new ModuleRuntime(std::move(impl)));
  Impl& r = *runtime->impl_;
  REEF_ASSIGN_OR_RETURN(auto active, r.store->ListActive());
  std::lock_guard lock(r.lifecycle_mu);
  for (const store::ActiveModule& m : active) {
    if (m.kind == ModuleKind::kCommand) continue;
    Status started = r.StartRunner(m.kind, m.name);
    if (!started.ok()) {
      spdlog::error("{} could not start: {}", Key(m.kind, m.name), started.message());
    }
  }
  return runtime;
}

void ModuleRuntime::Stop() {
  std::lock_guard lock(impl_->lifecycle_mu);
  std::vector<ModuleKey> keys;
  {
    std::lock_guard inner(impl_->mu);
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
  std::lock_guard lock(impl_->lifecycle_mu);
  REEF_ASSIGN_OR_RETURN(auto info, impl_->store->Get(kind, name));
  const store::ModuleVersion* found = nullptr;
  for (const auto& v : info.versions) {
    if (v.version == version) found = &v;
  }
  if (found == nullptr) {
    return Status::NotFound(fmt::format("{} has no version {}", Key(kind, name), version));
  }
  if (info.active_version == version) {
    std::lock_guard inner(impl_->mu);
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
  std::lock_guard lock(impl_->lifecycle_mu);
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
  std::lock_guard lock(impl_->lifecycle_mu);
  REEF_ASSIGN_OR_RETURN(auto active, impl_->store->Active(kind, name));
  if (!active) {
    return Status::FailedPrecondition(
        fmt::format("{} is not active; activate a version before replaying", Key(kind, name)));
  }
  impl_->StopRunner({kind, std::string(name)});
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
  std::lock_guard lock(impl_->lifecycle_mu);
  REEF_RETURN_IF_ERROR(impl_->store->SetEnv(kind, name, key, value));
  return impl_->EnvChanged(kind, std::string(name));
}

Status ModuleRuntime::DeleteEnv(ModuleKind kind, std::string_view name, std::string_view key) {
  std::lock_guard lock(impl_->lifecycle_mu);
  REEF_RETURN_IF_ERROR(impl_->store->DeleteEnv(kind, name, key));
  return impl_->EnvChanged(kind, std::string(name));
}

Status ModuleRuntime::DeleteVersion(ModuleKind kind, std::string_view name,
                                    std::string_view version) {
  std::lock_guard lock(impl_->lifecycle_mu);
  return impl_->store->DeleteVersion(kind, name, version);
}

Status ModuleRuntime::DeleteModule(ModuleKind kind, std::string_view name) {
  std::lock_guard lock(impl_->lifecycle_mu);
  REEF_RETURN_IF_ERROR(impl_->store->DeleteModule(kind, name));
  impl_->Forget(kind, name);
  return Status::Ok();
}

Result<CommandOutcome> ModuleRuntime::Execute(std::string_view name, const Value& input,
                                              const ExecuteOptions& options) {
  std::string command(name);
  const std::string& key = options.idempotency_key;
  // One execution per key: a concurrent duplicate waits for the first and replays its record;
  // events stored without a record (a crash in between) are found by their derived ids.
  std::unique_ptr<detail::KeyedTurns::Turn> turn;
  if (!key.empty()) {
    if (key.size() > 256) {
      return Status::InvalidArgument("the idempotency key is longer than 256 bytes");
    }
    turn = impl_->key_turns.Take(command + '\n' + key);
    if (auto stored = impl_->FindResult(command, key)) return impl_->ReplayOutcome(*stored);
    REEF_ASSIGN_OR_RETURN(auto recovered, impl_->RecoverOutcome(command, key));
    if (recovered) {
      impl_->SaveResult(command, key, OutcomeJson(*recovered));
      return std::move(*recovered);
    }
  }
  auto outcome = impl_->ExecuteOnce(command, input, options);
  if (!outcome.ok() && outcome.status().code() == Code::kDuplicateEventId && !key.empty()) {
    // Another process appended this key's events meanwhile (a shared store): its outcome.
    REEF_ASSIGN_OR_RETURN(auto recovered, impl_->RecoverOutcome(command, key));
    if (recovered) outcome = std::move(*recovered);
  }
  if (!outcome.ok()) {
    if (outcome.status().code() != Code::kNotFound) {
      impl_->Count(command, {.failed = 1, .last_error = outcome.status().message()});
    }
    return outcome.status();
  }
  if (!outcome->replayed) {
    bool rejected = outcome->kind == CommandOutcome::Kind::kRejected;
    impl_->Count(command, {.appended = rejected ? 0u : 1u, .rejected = rejected ? 1u : 0u});
  }
  if (!key.empty()) impl_->SaveResult(command, key, OutcomeJson(*outcome));
  return outcome;
}

Result<json> ModuleRuntime::QueryProjector(std::string_view name, std::string_view sql,
                                           const json& params) {
  REEF_RETURN_IF_ERROR(store::ValidateModuleName(name));
  auto path = impl_->DatabasePath(ModuleKind::kProjector, name);
  if (!std::filesystem::exists(path)) {
    return Status::NotFound(fmt::format("projector '{}' has no database yet", name));
  }
  return QueryReadModel(path, sql, params);
}

Status ModuleRuntime::ShredScope(std::string_view scope) {
  return impl_->keys->Shred(scope);
}

std::vector<ModuleStatus> ModuleRuntime::Statuses(std::optional<ModuleKind> kind) {
  std::vector<ModuleStatus> out;
  std::map<ModuleKey, ModuleStatus> by_key;
  {
    std::lock_guard lock(impl_->mu);
    for (const auto& [key, runner] : impl_->runners) {
      if (kind && key.first != *kind) continue;
      ModuleStatus s = runner->Snapshot();
      s.failures += impl_->carried_failures[key];
      by_key[key] = std::move(s);
    }
    for (const auto& [key, s] : impl_->switching) {
      if (kind && key.first != *kind) continue;
      by_key.try_emplace(key, s);
    }
  }
  auto active = impl_->store->ListActive();
  if (active.ok()) {
    for (const auto& m : *active) {
      if (kind && m.kind != *kind) continue;
      ModuleKey key{m.kind, m.name};
      if (by_key.count(key)) continue;
      ModuleStatus s;
      s.kind = m.kind;
      s.name = m.name;
      s.version = m.version;
      if (m.kind == ModuleKind::kCommand) {
        s.state = "active";
        s.up = true;
        std::lock_guard lock(impl_->mu);
        if (auto it = impl_->command_counters.find(m.name); it != impl_->command_counters.end()) {
          s.failures = it->second.failed;
          s.error = it->second.last_error;
        }
      } else {
        // Not running (it could not start, or was stopped): its counters still never go back.
        s.state = "stopped";
        std::lock_guard lock(impl_->mu);
        if (auto it = impl_->carried_failures.find(key); it != impl_->carried_failures.end()) {
          s.failures = it->second;
        }
        if (auto it = impl_->restarts.find(key); it != impl_->restarts.end()) {
          s.restarts = it->second;
        }
      }
      by_key[key] = std::move(s);
    }
  }
  for (auto& [key, s] : by_key) out.push_back(std::move(s));
  return out;
}

std::optional<ModuleStatus> ModuleRuntime::StatusOf(ModuleKind kind, std::string_view name) {
  for (ModuleStatus& s : Statuses(kind)) {
    if (s.name == name) return std::move(s);
  }
  return std::nullopt;
}

std::string ModuleRuntime::Metrics() {
  std::vector<ModuleStatus> statuses = Statuses();
  std::string out;
  auto family = [&out](std::string_view name, std::string_view type, std::string_view help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  };
  auto labels = [](const ModuleStatus& s) {
    return fmt::format("kind=\"{}\",name=\"{}\",version=\"{}\"", store::ModuleKindName(s.kind),
                       EscapeLabel(s.name), EscapeLabel(s.version));
  };
  // Lag against the module's own query: the last position matching its query, minus the
  // module's position (0 when caught up).
  std::map<std::string, uint64_t> query_heads;
  for (const ModuleStatus& s : statuses) {
    if (!s.query) continue;
    uint64_t head = 0;
    auto last = impl_->events.Read(*s.query, {.backwards = true, .limit = 1});
    if (last.ok() && !last->events.empty()) head = last->events.front().position;
    query_heads[labels(s)] = head;
  }
  family("reef_module_up", "gauge",
         "1 when the module is active and its runner is alive (an effect retrying a failed event "
         "is up: see reef_module_backoff_seconds), 0 when it failed or stopped.");
  for (const ModuleStatus& s : statuses) {
    out += fmt::format("reef_module_up{{{}}} {}\n", labels(s), s.up ? 1 : 0);
  }
  family("reef_module_position", "gauge",
         "Last event position the module has fully handled (projectors: committed; effects: "
         "the watermark).");
  for (const ModuleStatus& s : statuses) {
    if (s.kind == ModuleKind::kCommand) continue;
    out += fmt::format("reef_module_position{{{}}} {}\n", labels(s), s.position);
  }
  family("reef_module_query_head", "gauge",
         "Position of the last stored event matching the module's query.");
  for (const auto& [l, head] : query_heads) {
    out += fmt::format("reef_module_query_head{{{}}} {}\n", l, head);
  }
  family("reef_module_lag_positions", "gauge",
         "Positions between the module's position and the last event matching its query.");
  for (const ModuleStatus& s : statuses) {
    if (!s.query) continue;
    uint64_t head = query_heads[labels(s)];
    out += fmt::format("reef_module_lag_positions{{{}}} {}\n", labels(s),
                       head > s.position ? head - s.position : 0);
  }
  family("reef_module_failures_total", "counter",
         "Handler failures (projector stops, effect attempts that failed, command executions "
         "that failed) since the process started.");
  for (const ModuleStatus& s : statuses) {
    out += fmt::format("reef_module_failures_total{{{}}} {}\n", labels(s), s.failures);
  }
  family("reef_module_restarts_total", "counter",
         "Module starts after the first (activations, replays, env changes) since the process "
         "started.");
  for (const ModuleStatus& s : statuses) {
    out += fmt::format("reef_module_restarts_total{{{}}} {}\n", labels(s), s.restarts);
  }
  family("reef_module_backoff_seconds", "gauge",
         "Current retry delay of a failing effect event, 0 when none is failing.");
  for (const ModuleStatus& s : statuses) {
    if (s.kind != ModuleKind::kEffect) continue;
    out += fmt::format("reef_module_backoff_seconds{{{}}} {}\n", labels(s), s.backoff_seconds);
  }
  family("reef_command_executions_total", "counter",
         "Command executions by outcome since the process started.");
  {
    std::lock_guard lock(impl_->mu);
    for (const auto& [name, c] : impl_->command_counters) {
      for (auto [outcome, n] : {std::pair<const char*, uint64_t>{"appended", c.appended},
                                {"rejected", c.rejected},
                                {"failed", c.failed}}) {
        out += fmt::format("reef_command_executions_total{{name=\"{}\",outcome=\"{}\"}} {}\n",
                           EscapeLabel(name), outcome, n);
      }
    }
  }
  family("reef_command_conflicts_total", "counter",
         "Command attempts retried because the append condition failed.");
  {
    std::lock_guard lock(impl_->mu);
    for (const auto& [name, c] : impl_->command_counters) {
      out += fmt::format("reef_command_conflicts_total{{name=\"{}\"}} {}\n", EscapeLabel(name),
                         c.conflicts);
    }
  }
  family("reef_event_store_head", "gauge", "Position of the last event in the event store.");
  out += fmt::format("reef_event_store_head {}\n", impl_->events.Head());
  return out;
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
