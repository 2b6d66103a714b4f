// Events as module values (docs/abi.md, "Event-sourced modules"), and crypto-shredding.
//
//   event (host -> guest)   {"position": int, "id": str, "type": str, "tags": [str],
//                            "data": value | null, "timestamp_ms": int,
//                            "correlation_id": str, "causation_id": str}   (ids omitted when empty)
//   new event (guest -> host) {"type": str, "tags": [str], "data": value,
//                              "encryption_scope": str (optional)}
//   query                   [{"types": [str], "tags": [str]}, ...]     ([] = every event)
//
// Event data is stored as compact JSON text (what POST /events/append stores for "data"), so a
// module reads it as the value of that JSON; data that is not JSON reads as null.
//
// Encrypted data (spec 000 "crypto_keys"): stored as the bytes
//   "\0RC1" | key id (32 hex chars) | nonce (12 bytes) | AES-256-GCM ciphertext | tag (16 bytes)
// with the key id as associated data. The leading NUL never starts JSON text. Once the scope's
// key is shredded the data reads as null.
//
// Thread ownership: the functions are pure (any thread); KeyRing is thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/mutex.h"
#include "core/status.h"
#include "core/value.h"
#include "events/event.h"
#include "events/event_store.h"
#include "store/module_store.h"

namespace reef::apps {

// Per-scope AES-256-GCM keys from the module store, cached in memory (not when other processes
// share the store: each use asks it, so a shred on another node holds at once).
class KeyRing {
 public:
  // REQUIRES: `store` outlives the ring.
  explicit KeyRing(store::ModuleStore& store) : store_(store) {}

  // Encrypts `plaintext` with the live key of `scope` (created when the scope has none).
  // Errors: those of ModuleStore::GetOrCreateKey; Internal when OpenSSL fails.
  Result<std::string> Encrypt(std::string_view scope, std::string_view plaintext);
  // The plaintext of stored data: plain data unchanged; encrypted data decrypted, or nullopt
  // when its key was shredded. Errors: DataLoss when the data is malformed or fails
  // authentication; NotFound when its key id was never issued.
  Result<std::optional<std::string>> Open(std::string_view stored);
  // Shreds every live key of `scope` (ModuleStore::ShredScope) and forgets cached copies.
  Status Shred(std::string_view scope);
  // Forgets cached copies of `scope`'s keys after another process shredded it.
  void Forget(std::string_view scope);

  static bool IsEncrypted(std::string_view data);
  // The first bytes of every encrypted data ("\0RC1"); clients may not store plain data
  // starting with them (events::http::EventRouteOptions::reserved_data_prefix).
  static constexpr std::string_view kMarker{"\0RC1", 4};

 private:
  store::ModuleStore& store_;
  Mutex mu_;
  // key id -> key, or nullopt once shredded (a shredded key never comes back).
  std::map<std::string, std::optional<std::array<uint8_t, 32>>, std::less<>> by_id_ GUARDED_BY(mu_);
  std::map<std::string, store::CryptoKey, std::less<>> live_by_scope_ GUARDED_BY(mu_);
};

// A module's query value as a store query. Errors: InvalidArgument naming the item and field
// ("query[1].tags must be a list of strings").
Result<events::Query> QueryFromValue(const Value& query);

// The module value of a stored event; data is decrypted through `keys` (may be null: then
// encrypted data reads as null). Encrypted data that cannot be opened (malformed, unknown key,
// failed authentication) also reads as null, with a warning in the log: one damaged event
// must not stop every module that reads its stream. Errors: none today (Result for callers).
Result<Value> EventToValue(const events::EventView& event, KeyRing* keys);

// The events a module asked to append: data serialized as compact JSON text (encrypted when
// an encryption scope is given; `keys` must then be set), `metadata` copied to each.
// Errors: InvalidArgument naming the event and field ("events[0].type must be a string").
Result<std::vector<events::Event>> NewEventsFromValue(const Value& list, KeyRing* keys,
                                                      const events::EventMetadata& metadata);

// Event data as JSON <-> values, without the network edge's markers ({"$actor"}, {"$record"}):
// data is the application's JSON as it is. Integers beyond int64 become floats; an actor ref
// has no JSON form here (InvalidArgument). Depth limit 64 (LimitExceeded).
Result<Value> ValueFromJsonPlain(const nlohmann::json& json);
Result<nlohmann::json> JsonFromValuePlain(const Value& value);

// A stored event as the HTTP API shows a command's appended events:
// {"position", "id", "type", "tags", "data"} with data as JSON (null when not JSON or shredded).
nlohmann::json AppendedEventJson(const events::SequencedEvent& event, const Value& data);

}  // namespace reef::apps
