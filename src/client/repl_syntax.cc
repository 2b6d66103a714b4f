#include "client/repl_syntax.h"

#include <fmt/format.h>

#include <vector>

#include "core/ids.h"
#include "core/json.h"
#include "core/limits.h"

namespace reef::client {

using json = nlohmann::json;

namespace {

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

Status ResolveAt(json* value, const Bindings& bindings, const std::string& pointer,
                 bool literal_object) {
  if (value->is_array()) {
    for (size_t i = 0; i < value->size(); ++i) {
      REEF_RETURN_IF_ERROR(
          ResolveAt(&(*value)[i], bindings, pointer + "/" + std::to_string(i), false));
    }
    return Status::Ok();
  }
  if (!value->is_object()) return Status::Ok();
  if (!literal_object && value->size() == 1) {
    auto it = value->begin();
    if (it.key() == "$actor" && it.value().is_string()) {
      const std::string& name = it.value().get_ref<const std::string&>();
      if (auto bound = bindings.find(name); bound != bindings.end()) {
        it.value() = bound->second;
        return Status::Ok();
      }
      Result<std::string> ref = ParseActorRef(name);
      if (!ref.ok()) {
        return Status::InvalidArgument(fmt::format(
            "{{\"$actor\": \"{}\"}} at {}: \"{}\" is neither a bound name nor an actor ref", name,
            pointer.empty() ? "/" : pointer, name));
      }
      it.value() = *ref;
      return Status::Ok();
    }
    if (it.key() == "$record" && it.value().is_object()) {
      return ResolveAt(&it.value(), bindings, pointer + "/$record", true);
    }
  }
  for (auto& [key, item] : value->items()) {
    REEF_RETURN_IF_ERROR(ResolveAt(&item, bindings, pointer + "/" + key, false));
  }
  return Status::Ok();
}

}  // namespace

std::string_view Trim(std::string_view text) {
  while (!text.empty() && IsSpace(text.front())) text.remove_prefix(1);
  while (!text.empty() && IsSpace(text.back())) text.remove_suffix(1);
  return text;
}

Result<std::optional<std::string>> NextWord(std::string_view* rest) {
  std::string_view& in = *rest;
  while (!in.empty() && IsSpace(in.front())) in.remove_prefix(1);
  if (in.empty()) return std::optional<std::string>();
  std::string word;
  size_t i = 0;
  while (i < in.size() && !IsSpace(in[i])) {
    char c = in[i];
    if (c == '"' || c == '\'') {
      size_t start = i;
      ++i;
      bool closed = false;
      while (i < in.size()) {
        if (in[i] == c) {
          closed = true;
          ++i;
          break;
        }
        if (c == '"' && in[i] == '\\' && i + 1 < in.size() &&
            (in[i + 1] == '"' || in[i + 1] == '\\')) {
          ++i;
        }
        word.push_back(in[i]);
        ++i;
      }
      if (!closed) {
        return Status::InvalidArgument(fmt::format("unterminated {} quote starting at column {}",
                                                   c == '"' ? "double" : "single",
                                                   start + 1 + (rest->data() - in.data())));
      }
      continue;
    }
    word.push_back(c);
    ++i;
  }
  in.remove_prefix(i);
  return std::optional<std::string>(std::move(word));
}

Result<std::string> ParseActorRef(std::string_view text) {
  std::string_view id = text;
  if (!id.empty() && id.front() == '@') id.remove_prefix(1);
  Status valid = ValidateNanoId(id);
  if (!valid.ok()) {
    return Status::InvalidArgument(
        fmt::format("'{}' is not an actor ref (@ and a 21-character NanoID of A-Za-z0-9_-): {}",
                    text, valid.message()));
  }
  return std::string(id);
}

Result<std::string> ResolveRef(std::string_view text, const Bindings& bindings) {
  if (auto it = bindings.find(text); it != bindings.end()) return it->second;
  if (IsValidNanoId(text) || (text.starts_with('@') && IsValidNanoId(text.substr(1)))) {
    return ParseActorRef(text);
  }
  return Status::InvalidArgument(fmt::format(
      "'{}' is neither a bound name nor an actor ref (@ and a 21-character NanoID); names "
      "bound with `let` exist only inside `reef repl`",
      text));
}

bool IsBindableName(std::string_view name) {
  if (name.empty() || name.size() > 64 || IsValidNanoId(name)) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(name.front())) return false;
  for (char c : name) {
    if (!alpha(c) && !(c >= '0' && c <= '9') && c != '-') return false;
  }
  return true;
}

Status ResolveActorMarkers(json* value, const Bindings& bindings) {
  return ResolveAt(value, bindings, "", false);
}

Result<json> ParseJsonArgument(std::string_view text, std::string_view what,
                               const Bindings& bindings) {
  std::string_view trimmed = Trim(text);
  if (trimmed.empty()) {
    return Status::InvalidArgument(fmt::format("{} is missing: give a JSON value", what));
  }
  json value;
  try {
    value = json::parse(trimmed);
  } catch (const json::parse_error& e) {
    // e.what() reads "[json.exception.parse_error.101] parse error at line 1, column 9: ...".
    std::string detail = e.what();
    if (size_t colon = detail.find(": "); colon != std::string::npos) {
      detail = detail.substr(colon + 2);
    }
    return Status::InvalidArgument(
        fmt::format("{} is not valid JSON (at byte {}): {}", what, e.byte, detail));
  } catch (const json::out_of_range&) {
    // nlohmann reports a number literal beyond a double's range (1e400) as out_of_range 406.
    return Status::InvalidArgument(fmt::format(
        "{}: number out of range (it does not fit a 64-bit floating-point number)", what));
  } catch (const json::exception& e) {
    return Status::InvalidArgument(fmt::format("{} is not valid JSON: {}", what, e.what()));
  }
  REEF_RETURN_IF_ERROR(ResolveActorMarkers(&value, bindings).WithContext(what));
  Result<Value> checked = ValueFromJson(value, ValueLimits{});
  if (!checked.ok()) return checked.status().WithContext(what);
  return value;
}

Result<std::optional<LetLine>> ParseLet(std::string_view line) {
  std::string_view rest = line;
  REEF_ASSIGN_OR_RETURN(std::optional<std::string> first, NextWord(&rest));
  if (!first || *first != "let") return std::optional<LetLine>();
  REEF_ASSIGN_OR_RETURN(std::optional<std::string> name, NextWord(&rest));
  if (!name) return Status::InvalidArgument("usage: let NAME = spawn PATH JSON");
  LetLine let;
  // Accept `let x=spawn ...` and `let x =spawn ...` as well.
  if (size_t eq = name->find('='); eq != std::string::npos) {
    std::string after = name->substr(eq + 1);
    name->resize(eq);
    if (!after.empty()) {
      // The word after '=' was glued on; give it back to the rest of the line.
      size_t consumed = line.size() - rest.size();
      rest = line.substr(consumed - after.size());
    }
  } else {
    while (!rest.empty() && IsSpace(rest.front())) rest.remove_prefix(1);
    if (rest.empty() || rest.front() != '=') {
      return Status::InvalidArgument(
          fmt::format("expected '=' after `let {}`; usage: let NAME = spawn PATH JSON", *name));
    }
    rest.remove_prefix(1);
  }
  if (!IsBindableName(*name)) {
    return Status::InvalidArgument(fmt::format(
        "'{}' cannot be bound: a name starts with a letter or '_' and has letters, digits, '_' "
        "or '-' (at most 64, and not a 21-character actor ref)",
        *name));
  }
  let.name = std::move(*name);
  let.rest = rest;
  return std::optional<LetLine>(std::move(let));
}

CompletionContext ClassifyCompletion(std::string_view before) {
  CompletionContext context;
  // Inside {"$actor": "...: the text before the word ends with "$actor" : " (spaces allowed).
  std::string_view tail = before;
  while (!tail.empty() && IsSpace(tail.back())) tail.remove_suffix(1);
  if (!tail.empty() && tail.back() == '"') {
    tail.remove_suffix(1);
    while (!tail.empty() && IsSpace(tail.back())) tail.remove_suffix(1);
    if (!tail.empty() && tail.back() == ':') {
      tail.remove_suffix(1);
      while (!tail.empty() && IsSpace(tail.back())) tail.remove_suffix(1);
      if (tail.ends_with("\"$actor\"")) {
        context.kind = CompletionContext::Kind::kActorString;
        return context;
      }
    }
  }
  std::string_view line = before;
  Result<std::optional<LetLine>> let = ParseLet(line);
  if (let.ok() && let->has_value()) {
    line = (*let)->rest;
  } else {
    std::string_view probe = line;
    Result<std::optional<std::string>> first = NextWord(&probe);
    if (first.ok() && *first == std::optional<std::string>("let")) {
      // `let NAME` or `let NAME =` not finished: nothing sensible but the command after '='.
      context.kind = CompletionContext::Kind::kArgument;
      context.command = "let";
      return context;
    }
  }
  std::string_view rest = line;
  std::vector<std::string> words;
  while (true) {
    Result<std::optional<std::string>> word = NextWord(&rest);
    if (!word.ok() || !word->has_value()) break;
    words.push_back(std::move(**word));
  }
  if (words.empty()) return context;  // kCommand
  context.kind = CompletionContext::Kind::kArgument;
  context.command = words.front();
  size_t index = 0;
  for (size_t i = 1; i < words.size(); ++i) {
    if (!words[i].starts_with('-')) ++index;
  }
  context.index = index;
  return context;
}

}  // namespace reef::client
