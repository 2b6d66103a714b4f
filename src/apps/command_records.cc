// Idempotency records of command executions (docs/abi.md "One command execution"): one
// execution per key, its outcome recorded in reef.sqlite and answered to repeats, or found by
// its events' derived ids when the record was lost. Part of ModuleRuntime
// (apps/detail/module_runtime_impl.h), and the functions of apps/detail/command_ids.h.
#include <fmt/format.h>
#include <openssl/sha.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>

#include "apps/detail/command_ids.h"
#include "apps/detail/module_runtime_impl.h"
#include "core/cbor.h"
#include "core/clock.h"

namespace reef::apps {

using json = nlohmann::json;

namespace detail {

namespace {

// A UUID (version 8, RFC 9562 section 5.8) made of the first 16 bytes of SHA-256(text).
events::EventId DerivedId(std::string_view text) {
  auto digest = Sha256(text);
  events::EventId id;
  std::copy_n(digest.begin(), id.size(), id.begin());
  id[6] = static_cast<uint8_t>((id[6] & 0x0f) | 0x80);
  id[8] = static_cast<uint8_t>((id[8] & 0x3f) | 0x80);
  return id;
}

}  // namespace

std::array<uint8_t, 32> Sha256(std::string_view text) {
  std::array<uint8_t, 32> out;
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), out.data());
  return out;
}

std::string KeyedExecutionId(std::string_view command, std::string_view key) {
  return events::FormatEventId(
      DerivedId(fmt::format("command {}\nidempotency key {}", command, key)));
}

events::EventId CommandEventId(std::string_view execution_id, size_t index) {
  return DerivedId(fmt::format("{}#{}", execution_id, index));
}

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

Result<FoldCache::Key> FoldKey(std::string_view command, std::string_view module_sha256,
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

}  // namespace detail

namespace {

// A statement of `sql` on `db` with ?1 = the command and ?2 = the idempotency key bound.
sqlite3_stmt* PrepareForKey(sqlite3* db, const char* sql, std::string_view command,
                            std::string_view key) {
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(db, sql, -1, &s, nullptr);
  sqlite3_bind_text(s, 1, command.data(), static_cast<int>(command.size()), SQLITE_TRANSIENT);
  sqlite3_bind_text(s, 2, key.data(), static_cast<int>(key.size()), SQLITE_TRANSIENT);
  return s;
}

}  // namespace

using detail::CommandEventId;
using detail::KeyedExecutionId;

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
  sqlite3_stmt* s = PrepareForKey(results_db,
                                  "SELECT response FROM command_results WHERE command = ?1 AND "
                                  "idempotency_key = ?2",
                                  command, key);
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
  sqlite3_stmt* s = PrepareForKey(results_db,
                                  "INSERT OR IGNORE INTO command_results (command, "
                                  "idempotency_key, response, created_at) VALUES (?1, ?2, ?3, ?4)",
                                  command, key);
  std::string text = response.dump();
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

}  // namespace reef::apps
