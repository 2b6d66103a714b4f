#include "apps/event_values.h"

#include <fmt/format.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "apps/module_abi.h"

namespace reef::apps {

namespace {

using json = nlohmann::json;

constexpr std::string_view kMagic = KeyRing::kMarker;
constexpr size_t kKeyIdBytes = 32;
constexpr size_t kNonceBytes = 12;
constexpr size_t kTagBytes = 16;
constexpr size_t kHeaderBytes = kMagic.size() + kKeyIdBytes + kNonceBytes;

struct CipherCtx {
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  ~CipherCtx() { EVP_CIPHER_CTX_free(ctx); }
};

// Plain JSON -> value (no markers: event data is the application's JSON as it is).
// Integers beyond int64 become floats.
Result<Value> PlainValue(const json& j, size_t depth) {
  if (depth > 66) return Status::LimitExceeded("the JSON value nests deeper than 64 levels");
  switch (j.type()) {
    case json::value_t::null:
      return Value::Null();
    case json::value_t::boolean:
      return Value::Bool(j.get<bool>());
    case json::value_t::number_integer:
      return Value::Int(j.get<int64_t>());
    case json::value_t::number_unsigned: {
      auto u = j.get<uint64_t>();
      if (u <= static_cast<uint64_t>(INT64_MAX)) return Value::Int(static_cast<int64_t>(u));
      return Value::Float(static_cast<double>(u));
    }
    case json::value_t::number_float:
      return Value::Float(j.get<double>());
    case json::value_t::string:
      return Value::String(j.get<std::string>());
    case json::value_t::array: {
      List items;
      items.reserve(j.size());
      for (const json& item : j) {
        REEF_ASSIGN_OR_RETURN(Value v, PlainValue(item, depth + 1));
        items.push_back(std::move(v));
      }
      return Value::ListOf(std::move(items));
    }
    case json::value_t::object: {
      Record fields;
      for (const auto& [key, item] : j.items()) {
        REEF_ASSIGN_OR_RETURN(Value v, PlainValue(item, depth + 1));
        fields[key] = std::move(v);
      }
      return Value::RecordOf(std::move(fields));
    }
    default:
      return Value::Null();
  }
}

// Value -> plain JSON. Errors: InvalidArgument for an actor ref (module data has none).
Result<json> PlainJson(const Value& v, std::string_view path) {
  switch (v.kind()) {
    case Kind::kNull:
      return json(nullptr);
    case Kind::kBool:
      return json(v.as_bool());
    case Kind::kInt:
      return json(v.as_int());
    case Kind::kFloat:
      return json(v.as_float());
    case Kind::kString:
      return json(v.as_string());
    case Kind::kList: {
      json out = json::array();
      for (size_t i = 0; i < v.as_list().size(); ++i) {
        REEF_ASSIGN_OR_RETURN(json item, PlainJson(v.as_list()[i], path));
        out.push_back(std::move(item));
      }
      return out;
    }
    case Kind::kRecord: {
      json out = json::object();
      for (const auto& [key, item] : v.as_record()) {
        REEF_ASSIGN_OR_RETURN(json j, PlainJson(item, path));
        out[key] = std::move(j);
      }
      return out;
    }
    case Kind::kActorRef:
      break;
  }
  return Status::InvalidArgument(fmt::format("{} holds an actor ref; event data cannot", path));
}

Value DataValue(std::string_view text) {
  if (text.empty()) return Value::Null();
  json parsed = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return Value::Null();
  auto value = PlainValue(parsed, 0);
  return value.ok() ? std::move(*value) : Value::Null();
}

std::string HexKeyId(std::string_view id) {
  return std::string(id);
}

Result<std::vector<std::string>> StringList(const Value& v, const std::string& path) {
  if (!v.is_list()) return Status::InvalidArgument(path + " must be a list of strings");
  std::vector<std::string> out;
  for (const Value& item : v.as_list()) {
    if (!item.is_string()) return Status::InvalidArgument(path + " must be a list of strings");
    out.push_back(item.as_string());
  }
  return out;
}

}  // namespace

Result<Value> ValueFromJsonPlain(const nlohmann::json& j) {
  return PlainValue(j, 2);
}

Result<nlohmann::json> JsonFromValuePlain(const Value& value) {
  return PlainJson(value, "value");
}

bool KeyRing::IsEncrypted(std::string_view data) {
  return data.starts_with(kMagic);
}

Result<std::string> KeyRing::Encrypt(std::string_view scope, std::string_view plaintext) {
  store::CryptoKey key;
  // A store other processes share keeps no copy here: another node may shred a scope at any
  // moment, and a cached key would go on encrypting (or decrypting) with it.
  const bool cache = !store_.shared();
  if (cache) {
    MutexLock lock(mu_);
    auto it = live_by_scope_.find(scope);
    if (it != live_by_scope_.end()) key = it->second;
  }
  if (key.id.empty()) {
    REEF_ASSIGN_OR_RETURN(key, store_.GetOrCreateKey(scope));
    if (cache) {
      MutexLock lock(mu_);
      live_by_scope_[std::string(scope)] = key;
      by_id_[key.id] = key.key;
    }
  }
  if (key.id.size() != kKeyIdBytes) return Status::Internal("crypto key id is not 32 characters");
  std::string out(kMagic);
  out += HexKeyId(key.id);
  uint8_t nonce[kNonceBytes];
  if (RAND_bytes(nonce, sizeof nonce) != 1) return Status::Internal("RAND_bytes failed");
  out.append(reinterpret_cast<const char*>(nonce), sizeof nonce);
  CipherCtx c;
  int len = 0;
  std::string cipher(plaintext.size() + kTagBytes, '\0');
  auto* cipher_bytes = reinterpret_cast<unsigned char*>(cipher.data());
  if (c.ctx == nullptr ||
      EVP_EncryptInit_ex(c.ctx, EVP_aes_256_gcm(), nullptr, key.key.data(), nonce) != 1 ||
      EVP_EncryptUpdate(c.ctx, nullptr, &len, reinterpret_cast<const unsigned char*>(key.id.data()),
                        static_cast<int>(key.id.size())) != 1 ||
      EVP_EncryptUpdate(c.ctx, cipher_bytes, &len,
                        reinterpret_cast<const unsigned char*>(plaintext.data()),
                        static_cast<int>(plaintext.size())) != 1 ||
      EVP_EncryptFinal_ex(c.ctx, cipher_bytes + len, &len) != 1 ||
      EVP_CIPHER_CTX_ctrl(c.ctx, EVP_CTRL_GCM_GET_TAG, kTagBytes,
                          cipher_bytes + plaintext.size()) != 1) {
    return Status::Internal("AES-256-GCM encryption failed");
  }
  out += cipher;
  return out;
}

Result<std::optional<std::string>> KeyRing::Open(std::string_view stored) {
  if (!IsEncrypted(stored)) return std::optional<std::string>(std::string(stored));
  if (stored.size() < kHeaderBytes + kTagBytes) {
    return Status::DataLoss("encrypted event data is shorter than its header");
  }
  std::string id(stored.substr(kMagic.size(), kKeyIdBytes));
  std::optional<std::array<uint8_t, 32>> key;
  bool cached = false;
  const bool cache = !store_.shared();  // (as in Encrypt)
  if (cache) {
    MutexLock lock(mu_);
    if (auto it = by_id_.find(id); it != by_id_.end()) {
      key = it->second;
      cached = true;
    }
  }
  if (!cached) {
    REEF_ASSIGN_OR_RETURN(auto found, store_.FindKey(id));
    if (found) key = found->key;
    if (cache) {
      MutexLock lock(mu_);
      by_id_[id] = key;
    }
  }
  if (!key) return std::optional<std::string>();  // shredded
  auto nonce = reinterpret_cast<const unsigned char*>(stored.data() + kMagic.size() + kKeyIdBytes);
  std::string_view body = stored.substr(kHeaderBytes, stored.size() - kHeaderBytes - kTagBytes);
  std::string tag(stored.substr(stored.size() - kTagBytes));
  std::string plain(body.size(), '\0');
  CipherCtx c;
  int len = 0;
  if (c.ctx == nullptr ||
      EVP_DecryptInit_ex(c.ctx, EVP_aes_256_gcm(), nullptr, key->data(), nonce) != 1 ||
      EVP_DecryptUpdate(c.ctx, nullptr, &len, reinterpret_cast<const unsigned char*>(id.data()),
                        static_cast<int>(id.size())) != 1 ||
      EVP_DecryptUpdate(c.ctx, reinterpret_cast<unsigned char*>(plain.data()), &len,
                        reinterpret_cast<const unsigned char*>(body.data()),
                        static_cast<int>(body.size())) != 1 ||
      EVP_CIPHER_CTX_ctrl(c.ctx, EVP_CTRL_GCM_SET_TAG, kTagBytes, tag.data()) != 1 ||
      EVP_DecryptFinal_ex(c.ctx, reinterpret_cast<unsigned char*>(plain.data()) + len, &len) != 1) {
    return Status::DataLoss(fmt::format("encrypted event data fails authentication (key {})", id));
  }
  return std::optional<std::string>(std::move(plain));
}

Status KeyRing::Shred(std::string_view scope) {
  REEF_RETURN_IF_ERROR(store_.ShredScope(scope));
  Forget(scope);
  return Status::Ok();
}

void KeyRing::Forget(std::string_view scope) {
  MutexLock lock(mu_);
  if (auto it = live_by_scope_.find(scope); it != live_by_scope_.end()) {
    live_by_scope_.erase(it);
  }
  // Keys of the scope created by other paths are found by id on the next Open: drop them all
  // so the store's shredded state is read again.
  by_id_.clear();
}

Result<events::Query> QueryFromValue(const Value& query) {
  if (!query.is_list()) return Status::InvalidArgument("query must be a list of items");
  events::Query out;
  const List& items = query.as_list();
  for (size_t i = 0; i < items.size(); ++i) {
    std::string path = fmt::format("query[{}]", i);
    if (!items[i].is_record()) return Status::InvalidArgument(path + " must be a record");
    events::QueryItem item;
    for (const auto& [key, value] : items[i].as_record()) {
      if (key == "types") {
        REEF_ASSIGN_OR_RETURN(item.types, StringList(value, path + ".types"));
      } else if (key == "tags") {
        REEF_ASSIGN_OR_RETURN(item.tags, StringList(value, path + ".tags"));
      } else {
        return Status::InvalidArgument(
            fmt::format("{}.{} is not a known field (known: types, tags)", path, key));
      }
    }
    if (item.types.empty() && item.tags.empty()) {
      return Status::InvalidArgument(path + " needs at least one type or tag");
    }
    out.items.push_back(std::move(item));
  }
  return out;
}

Result<Value> EventToValue(const events::EventView& event, KeyRing* keys) {
  Record r;
  r["position"] = Value::Int(static_cast<int64_t>(event.position));
  r["id"] = Value::String(events::FormatEventId(event.id));
  r["type"] = Value::String(std::string(event.type));
  List tags;
  for (std::string_view tag : event.tags) tags.push_back(Value::String(std::string(tag)));
  r["tags"] = Value::ListOf(std::move(tags));
  if (KeyRing::IsEncrypted(event.data)) {
    std::optional<std::string> plain;
    if (keys != nullptr) {
      auto opened = keys->Open(event.data);
      if (opened.ok()) {
        plain = std::move(*opened);
      } else {
        spdlog::warn("event at position {}: its encrypted data reads as null: {}", event.position,
                     opened.status().message());
      }
    }
    r["data"] = plain ? DataValue(*plain) : Value::Null();
  } else {
    r["data"] = DataValue(event.data);
  }
  r["timestamp_ms"] = Value::Int(event.timestamp_ms);
  if (!event.correlation_id.empty()) {
    r["correlation_id"] = Value::String(std::string(event.correlation_id));
  }
  if (!event.causation_id.empty()) {
    r["causation_id"] = Value::String(std::string(event.causation_id));
  }
  if (!event.user_metadata.empty()) r["metadata"] = DataValue(event.user_metadata);
  return Value::RecordOf(std::move(r));
}

Result<std::vector<events::Event>> NewEventsFromValue(const Value& list, KeyRing* keys,
                                                      const events::EventMetadata& metadata) {
  if (!list.is_list()) return Status::InvalidArgument("events must be a list of new events");
  std::vector<events::Event> out;
  for (size_t i = 0; i < list.as_list().size(); ++i) {
    const Value& item = list.as_list()[i];
    std::string path = fmt::format("events[{}]", i);
    if (!item.is_record()) return Status::InvalidArgument(path + " must be a record");
    events::Event event;
    event.metadata = metadata;
    std::optional<std::string> scope;
    bool has_type = false;
    for (const auto& [key, value] : item.as_record()) {
      if (key == "type") {
        if (!value.is_string()) return Status::InvalidArgument(path + ".type must be a string");
        event.type = value.as_string();
        has_type = true;
      } else if (key == "tags") {
        REEF_ASSIGN_OR_RETURN(event.tags, StringList(value, path + ".tags"));
      } else if (key == "data") {
        if (!value.is_null()) {
          REEF_ASSIGN_OR_RETURN(json j, PlainJson(value, path + ".data"));
          event.data = j.dump();
        }
      } else if (key == "metadata") {
        if (!value.is_record()) return Status::InvalidArgument(path + ".metadata must be a record");
        REEF_ASSIGN_OR_RETURN(json j, PlainJson(value, path + ".metadata"));
        if (!j.empty()) event.metadata.user = j.dump();
      } else if (key == "encryption_scope") {
        if (!value.is_string() || value.as_string().empty()) {
          return Status::InvalidArgument(path + ".encryption_scope must be a non-empty string");
        }
        scope = value.as_string();
      } else {
        return Status::InvalidArgument(fmt::format(
            "{}.{} is not a known field (known: type, tags, data, metadata, encryption_scope)",
            path, key));
      }
    }
    if (!has_type) return Status::InvalidArgument(path + ".type is missing");
    if (scope) {
      if (keys == nullptr) return Status::FailedPrecondition("encryption is not available here");
      REEF_ASSIGN_OR_RETURN(event.data, keys->Encrypt(*scope, event.data));
    }
    out.push_back(std::move(event));
  }
  return out;
}

nlohmann::json AppendedEventJson(const events::SequencedEvent& event, const Value& data) {
  auto data_json = PlainJson(data, "data");
  return {{"position", event.position},
          {"id", events::FormatEventId(event.event.id)},
          {"type", event.event.type},
          {"tags", event.event.tags},
          {"data", data_json.ok() ? *data_json : json(nullptr)}};
}

}  // namespace reef::apps
