// Command executions (docs/abi.md "One command execution"): read, fold, decide, append under
// the DCB condition, with one execution per idempotency key and the records that answer
// repeats. Part of ModuleRuntime (apps/detail/module_runtime_impl.h).
#include <fmt/format.h>
#include <openssl/sha.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>

#include <random>
#include <thread>

#include "apps/detail/module_runtime_impl.h"
#include "core/cbor.h"
#include "core/clock.h"
#include "core/utf8.h"

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

// The fold cache's key for one execution: SHA-256 over the command's name (commands with the
// same bytes have their own env), the module's SHA-256, the command's lifecycle generation
// (an env change or a new version makes new keys), the query, the initial state and the input
// (null when the module's fold ignores it), each length-prefixed.
Result<detail::FoldCache::Key> FoldKey(std::string_view command, std::string_view module_sha256,
                                       uint64_t generation, const std::vector<uint8_t>& query_bytes,
                                       const Value& initial_state, const Value* input) {
  std::string material;
  auto add = [&material](std::string_view part) {
    material += fmt::format("{}:", part.size());
    material += part;
  };
  add(command);
  add(module_sha256);
  add(fmt::format("{}", generation));
  add(std::string_view(reinterpret_cast<const char*>(query_bytes.data()), query_bytes.size()));
  REEF_ASSIGN_OR_RETURN(auto state_bytes, EncodeCbor(initial_state, ModuleValueLimits()));
  add(std::string_view(reinterpret_cast<const char*>(state_bytes.data()), state_bytes.size()));
  if (input != nullptr) {
    REEF_ASSIGN_OR_RETURN(auto input_bytes, EncodeCbor(*input, ModuleValueLimits()));
    add(std::string_view(reinterpret_cast<const char*>(input_bytes.data()), input_bytes.size()));
  } else {
    add("");
  }
  return Sha256(material);
}

}  // namespace

// ---- Idempotency records ------------------------------------------------------------------

Status ModuleRuntime::Impl::OpenResults() {
  MutexLock lock(results_mu);  // never waited for: Open runs before the runtime is shared
  int rc =
      sqlite3_open_v2((options.data_dir / "reef.sqlite").c_str(), &results_db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) return Status::Unavailable("cannot open reef.sqlite for command results");
  sqlite3_busy_timeout(results_db, 5'000);
  return ExecSql(results_db,
                 "CREATE TABLE IF NOT EXISTS command_results ("
                 " command TEXT NOT NULL, idempotency_key TEXT NOT NULL,"
                 " response TEXT NOT NULL, created_at INTEGER NOT NULL,"
                 " PRIMARY KEY (command, idempotency_key))");
}

std::optional<json> ModuleRuntime::Impl::FindResult(std::string_view command,
                                                    std::string_view key) {
  MutexLock lock(results_mu);
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

void ModuleRuntime::Impl::SaveResult(std::string_view command, std::string_view key,
                                     const json& response) {
  MutexLock lock(results_mu);
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(results_db,
                     "INSERT OR IGNORE INTO command_results (command, idempotency_key, "
                     "response, created_at) VALUES (?1, ?2, ?3, ?4)",
                     -1, &s, nullptr);
  std::string text = response.dump();
  sqlite3_bind_text(s, 1, command.data(), static_cast<int>(command.size()), SQLITE_TRANSIENT);
  sqlite3_bind_text(s, 2, key.data(), static_cast<int>(key.size()), SQLITE_TRANSIENT);
  sqlite3_bind_text(s, 3, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  sqlite3_bind_int64(s, 4, UnixNowMs());
  if (sqlite3_step(s) != SQLITE_DONE) {
    spdlog::warn("command {}: could not store the idempotency record: {}", command,
                 sqlite3_errmsg(results_db));
  }
  sqlite3_finalize(s);
}

void ModuleRuntime::Impl::Count(std::string_view command, const CommandCounters& delta) {
  MutexLock lock(mu);
  auto& c = command_counters[std::string(command)];
  c.appended += delta.appended;
  c.rejected += delta.rejected;
  c.conflicts += delta.conflicts;
  c.failed += delta.failed;
  if (!delta.last_error.empty()) c.last_error = delta.last_error;
}

Result<CommandOutcome> ModuleRuntime::Impl::ReplayOutcome(const json& record) {
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
    REEF_RETURN_IF_ERROR(AddStoredEvent(out, std::move(read->events[0])));
  }
  return out;
}

Status ModuleRuntime::Impl::AddStoredEvent(CommandOutcome& out, events::SequencedEvent event) {
  REEF_ASSIGN_OR_RETURN(Value v, EventToValue(events::EventView::Of(event), keys.get()));
  out.event_data.push_back(v.as_record().at("data"));
  out.events.push_back(std::move(event));
  return Status::Ok();
}

Result<std::optional<CommandOutcome>> ModuleRuntime::Impl::RecoverOutcome(std::string_view command,
                                                                          std::string_view key) {
  CommandOutcome out;
  out.execution_id = KeyedExecutionId(command, key);
  out.kind = CommandOutcome::Kind::kAppended;
  out.replayed = true;
  for (size_t i = 0;; ++i) {
    const events::EventId id = CommandEventId(out.execution_id, i);
    REEF_ASSIGN_OR_RETURN(auto found, events.ReadById(id));
    if (!found) break;
    // Anyone may append an event with a chosen id, so only an event this execution wrote (its
    // causation id and key) answers for it; a look-alike must not pass for a replay.
    const events::EventMetadata& metadata = found->event.metadata;
    if (metadata.causation_id != out.execution_id || metadata.idempotency_key != key) {
      return Status::DuplicateEventId(fmt::format(
          "Idempotency-Key '{}' of command '{}' gives event id {}, but position {} holds an "
          "event with that id that this command did not write; use another key",
          key, command, events::FormatEventId(id), found->position));
    }
    out.position = found->position;
    REEF_RETURN_IF_ERROR(AddStoredEvent(out, std::move(*found)));
  }
  if (out.events.empty()) return std::optional<CommandOutcome>();
  return std::optional<CommandOutcome>(std::move(out));
}

// ---- Executions ---------------------------------------------------------------------------

Result<CommandOutcome> ModuleRuntime::Impl::ExecuteOnce(const std::string& name, const Value& input,
                                                        const ExecuteOptions& opts,
                                                        bool* superseded) {
  // Read before the version is resolved: a lifecycle change after this point supersedes the
  // execution, whatever it resolved.
  const uint64_t generation = CommandGeneration(name);
  auto supersede = [&]() -> Status {
    *superseded = true;
    return Status::Unavailable(
        fmt::format("commands/{}: its active version changed during the execution", name));
  };
  REEF_ASSIGN_OR_RETURN(auto active, ActiveCommand(name));
  if (!active) {
    return Status::NotFound(fmt::format("no active command named '{}'", name));
  }
  REEF_ASSIGN_OR_RETURN(auto module,
                        LoadModule(ModuleKind::kCommand, name, active->version, active->sha256));
  REEF_ASSIGN_OR_RETURN(auto env, CommandEnv(name));
  // A module that declares its fold ignores the input shares decision states across inputs.
  const bool fold_ignores_input = module->FindExport(kFoldIgnoresInputExport) != nullptr;

  // One instance per module per thread, reset before every attempt: no execution sees
  // another's memory.
  thread_local std::map<std::string, std::unique_ptr<ModuleInstance>> instances;
  auto& slot = instances[active->sha256];
  if (!slot || slot->Outdated()) {  // outdated: its native code is ready (TierChoice::kAuto)
    REEF_ASSIGN_OR_RETURN(
        slot, ModuleInstance::Create(ModuleKind::kCommand, module,
                                     fmt::format("commands/{}@{}", name, active->version)));
  }
  {
    // Two commands with the same bytes share the instance: each records the tier it ran on.
    MutexLock lock(mu);
    command_counters[name].tier = wasm::TierName(slot->tier());
  }
  ModuleInstance& instance = *slot;

  CommandOutcome outcome;
  if (!opts.idempotency_key.empty()) {
    outcome.execution_id = KeyedExecutionId(name, opts.idempotency_key);
  } else {
    REEF_ASSIGN_OR_RETURN(auto id, events::NewEventId());
    outcome.execution_id = events::FormatEventId(id);
  }
  const int64_t now = UnixNowMs();
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
      // The fold cache: start from the state folded up to some position, when one is kept.
      const uint64_t cache_epoch = fold_cache.epoch();  // before any event is read
      REEF_ASSIGN_OR_RETURN(auto key, FoldKey(name, active->sha256, generation, query_bytes, state,
                                              fold_ignores_input ? nullptr : &input));
      if (auto kept = fold_cache.Find(key)) {
        state = std::move(kept->state);
        from = kept->folded_to + 1;
      }
      const events::Position start = from;
      ctx.read_clock_or_random = false;
      while (true) {
        REEF_ASSIGN_OR_RETURN(auto page,
                              events.Read(query, {.from = from, .limit = kFoldBatchEvents}));
        head = page.head;
        if (!page.events.empty()) {
          List batch;
          batch.reserve(page.events.size());
          for (const auto& event : page.events) {
            REEF_ASSIGN_OR_RETURN(Value v, EventToValue(events::EventView::Of(event), keys.get()));
            batch.push_back(std::move(v));
          }
          Value batch_value = Value::ListOf(std::move(batch));
          REEF_ASSIGN_OR_RETURN(
              state, instance.CallForValue("reef_command_fold", {&state, &input, &batch_value}));
          from = page.events.back().position + 1;
        }
        if (page.events.size() < kFoldBatchEvents) break;
      }
      // Kept when the fold moved on and depended only on its key: not on the clock or random
      // bytes, and no lifecycle change came in (the generation is part of the key).
      if (from != start && !ctx.read_clock_or_random && CommandGeneration(name) == generation) {
        fold_cache.Put(key, name, state, head, cache_epoch);
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
      if (CommandGeneration(name) != generation) return supersede();
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
      if (CommandGeneration(name) != generation) return supersede();
      outcome.position = events.Head();
      outcome.events.clear();
      return outcome;
    }
    std::vector<events::Event> to_append = *new_events;
    // The version that decided must still be the active one when the append commits: Forget
    // waits for this gate after bumping the generation.
    ReaderLock gate(append_gate);
    if (CommandGeneration(name) != generation) return supersede();
    auto appended = events.Append(std::move(to_append), condition);
    gate.Unlock();
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
    if (auto bad = FindInvalidUtf8(key)) {
      return Status::InvalidArgument(
          fmt::format("the idempotency key is not valid UTF-8 (byte {}); nothing was run", *bad));
    }
    turn = impl_->key_turns.Take(command + '\n' + key);
    if (auto stored = impl_->FindResult(command, key)) return impl_->ReplayOutcome(*stored);
    REEF_ASSIGN_OR_RETURN(auto recovered, impl_->RecoverOutcome(command, key));
    if (recovered) {
      impl_->SaveResult(command, key, OutcomeJson(*recovered));
      return std::move(*recovered);
    }
  }
  // An execution that a lifecycle change overtook runs again against what is active now (the
  // next version, or none: not found); each change supersedes at most the executions that
  // were in flight, so a few rounds are enough unless changes keep coming.
  constexpr int kMaxSuperseded = 8;
  Result<CommandOutcome> outcome = Status::Internal("not executed");
  for (int round = 0; round < kMaxSuperseded; ++round) {
    bool superseded = false;
    outcome = impl_->ExecuteOnce(command, input, options, &superseded);
    if (!superseded) break;
  }
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

}  // namespace reef::apps
