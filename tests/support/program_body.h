// ProgramBody: the JSON body of POST /programs (docs/http-api.md "Programs") built from a
// program directory as `reef deploy DIR` reads it (program.json + the module files), for
// integration tests and benchmarks that deploy without the CLI.
//
// Thread ownership: none (pure functions).
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

namespace reef::testing {

// RFC 4648 base64 of `bytes`, standard alphabet, padded.
inline std::string Base64(const std::string& bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t n = static_cast<uint32_t>(static_cast<uint8_t>(bytes[i])) << 16;
    if (i + 1 < bytes.size()) n |= static_cast<uint32_t>(static_cast<uint8_t>(bytes[i + 1])) << 8;
    if (i + 2 < bytes.size()) n |= static_cast<uint8_t>(bytes[i + 2]);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[n & 63] : '=';
  }
  return out;
}

// {"manifest": DIR/program.json with each unit's fields merged with unit_overrides[unit],
//  "modules": {name: base64 of the module's file}}. `unit_overrides`: an object of objects, or
// null for none. Returns null and sets `error` when the directory cannot be read.
inline nlohmann::json ProgramBody(const std::filesystem::path& dir,
                                  const nlohmann::json& unit_overrides, std::string& error) {
  using nlohmann::json;
  std::ifstream manifest_file(dir / "program.json");
  json manifest = json::parse(manifest_file, nullptr, false);
  if (!manifest.is_object() || !manifest["modules"].is_object() || !manifest["units"].is_object()) {
    error = "cannot read " + (dir / "program.json").string() + " (build the example program)";
    return nullptr;
  }
  json modules = json::object();
  for (const auto& [name, file] : manifest["modules"].items()) {
    if (!file.is_string()) {
      error = "program.json: modules." + name + " is not a file name";
      return nullptr;
    }
    std::ifstream in(dir / file.get<std::string>(), std::ios::binary);
    if (!in) {
      error = "missing module file " + (dir / file.get<std::string>()).string();
      return nullptr;
    }
    modules[name] = Base64(std::string(std::istreambuf_iterator<char>(in), {}));
  }
  if (unit_overrides.is_object()) {
    for (const auto& [unit, fields] : unit_overrides.items())
      manifest["units"][unit].update(fields);
  }
  return {{"manifest", manifest}, {"modules", modules}};
}

}  // namespace reef::testing
