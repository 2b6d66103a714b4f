// JSON fields of untrusted input (a server's responses and events) read without exceptions:
// a missing field or one of the wrong type gives the fallback, never a nlohmann exception.
// nlohmann's value() and get<>() throw type_error on a type mismatch, which the CLI must
// never let escape (a malformed response is an error, not a crash).
//
// Thread ownership: pure functions; any thread.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace reef::client {

// The field `key` of `object`, or nullptr when `object` is not an object or lacks it.
// Lifetime: the pointer is valid while `object` is unchanged.
inline const nlohmann::json* FindField(const nlohmann::json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

// The string field `key`, or `fallback` when it is missing or not a string.
inline std::string StringField(const nlohmann::json& object, std::string_view key,
                               std::string_view fallback = "") {
  const nlohmann::json* field = FindField(object, key);
  if (field == nullptr || !field->is_string()) return std::string(fallback);
  return field->get_ref<const std::string&>();
}

// The boolean field `key`, or `fallback` when it is missing or not a boolean.
inline bool BoolField(const nlohmann::json& object, std::string_view key, bool fallback = false) {
  const nlohmann::json* field = FindField(object, key);
  if (field == nullptr || !field->is_boolean()) return fallback;
  return field->get<bool>();
}

// The non-negative integer field `key`, or nullopt when it is missing or not one.
inline std::optional<uint64_t> UnsignedField(const nlohmann::json& object, std::string_view key) {
  const nlohmann::json* field = FindField(object, key);
  if (field == nullptr || !field->is_number_integer()) return std::nullopt;
  if (field->is_number_unsigned()) return field->get<uint64_t>();
  int64_t value = field->get<int64_t>();
  if (value < 0) return std::nullopt;
  return static_cast<uint64_t>(value);
}

// The field `key` when it is an array, else an empty array.
inline nlohmann::json ArrayField(const nlohmann::json& object, std::string_view key) {
  const nlohmann::json* field = FindField(object, key);
  return field != nullptr && field->is_array() ? *field : nlohmann::json::array();
}

}  // namespace reef::client
