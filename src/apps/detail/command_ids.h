// Identities, records and fold-cache keys of command executions, shared by the executions
// (command_execution.cc) and their idempotency records (command_records.cc). Internal to
// src/apps.
//
// Thread ownership: pure functions (any thread).
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "apps/detail/fold_cache.h"
#include "apps/module_runtime.h"
#include "events/event_store.h"

namespace reef::apps::detail {

// SHA-256 of `text`.
std::array<uint8_t, 32> Sha256(std::string_view text);

// The execution id of a command run with an idempotency key: the same for every run of that
// key, so its events get the same ids (execution id + "#" + index) and the event store, where
// ids are unique, stores them once whatever happens between append and record.
std::string KeyedExecutionId(std::string_view command, std::string_view key);

// The id of the `index`-th event an execution appends: a version-8 UUID (RFC 9562 section
// 5.8) of SHA-256("<execution id>#<index>").
events::EventId CommandEventId(std::string_view execution_id, size_t index);

// The idempotency record of an outcome: what happened and where, never event data (data
// may be encrypted, and a record must not keep a copy that crypto-shredding cannot reach).
nlohmann::json OutcomeJson(const CommandOutcome& outcome);

// The fold cache's key for one execution: SHA-256 over the command's name (commands with the
// same bytes have their own env), the module's SHA-256, the command's lifecycle generation
// (an env change or a new version makes new keys), the query, the initial state and the input
// (`input` null when the module's fold ignores it), each length-prefixed.
// Errors: those of encoding the state or input as CBOR.
Result<FoldCache::Key> FoldKey(std::string_view command, std::string_view module_sha256,
                               uint64_t generation, const std::vector<uint8_t>& query_bytes,
                               const Value& initial_state, const Value* input);

}  // namespace reef::apps::detail
