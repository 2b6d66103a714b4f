#include "code/guest_sandbox.h"

#include <fmt/format.h>

#include <array>
#include <cctype>

namespace reef::code {
namespace {

namespace fs = std::filesystem;

constexpr std::array<std::string_view, 10> kFreestandingHeaders = {
    "float.h",   "iso646.h", "limits.h", "stdalign.h",    "stdarg.h",
    "stdbool.h", "stddef.h", "stdint.h", "stdnoreturn.h", "__stddef_max_align_t.h"};

// Directives whose operand is a header name.
constexpr std::array<std::string_view, 4> kIncludeDirectives = {"include", "include_next", "import",
                                                                "embed"};

// Translation phase 1 and 2 as far as directives need them: the trigraphs ??= (#) and ??/ (\)
// replaced, then lines ending in a backslash joined. Returns the logical lines with the
// physical line number each starts on.
std::vector<std::pair<int, std::string>> LogicalLines(std::string_view source) {
  std::string text;
  text.reserve(source.size());
  for (std::size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '?' && i + 2 < source.size() && source[i + 1] == '?' &&
        (source[i + 2] == '=' || source[i + 2] == '/')) {
      text += source[i + 2] == '=' ? '#' : '\\';
      i += 2;
    } else {
      text += source[i];
    }
  }
  std::vector<std::pair<int, std::string>> lines;
  int line = 1;
  std::size_t pos = 0;
  while (pos < text.size()) {
    int start = line;
    std::string logical;
    while (pos < text.size()) {
      char c = text[pos];
      if (c == '\\') {
        std::size_t next = pos + 1;
        if (next < text.size() && text[next] == '\r') ++next;
        if (next < text.size() && text[next] == '\n') {
          pos = next + 1;
          ++line;
          continue;
        }
      }
      ++pos;
      if (c == '\n') {
        ++line;
        break;
      }
      logical += c;
    }
    lines.emplace_back(start, std::move(logical));
  }
  return lines;
}

// Skips blanks and /* */ comments from `pos`; returns the new position.
std::size_t SkipBlanks(std::string_view line, std::size_t pos) {
  while (pos < line.size()) {
    if (line[pos] == ' ' || line[pos] == '\t' || line[pos] == '\v' || line[pos] == '\f' ||
        line[pos] == '\r') {
      ++pos;
    } else if (line.substr(pos, 2) == "/*") {
      std::size_t end = line.find("*/", pos + 2);
      pos = end == std::string_view::npos ? line.size() : end + 2;
    } else {
      break;
    }
  }
  return pos;
}

// Why the header name `name` is refused, or "" when it is allowed.
std::string_view RefusalOf(std::string_view name) {
  if (name.starts_with('/')) return "an absolute path is not allowed";
  std::size_t start = 0;
  while (start <= name.size()) {
    std::size_t end = name.find('/', start);
    if (end == std::string_view::npos) end = name.size();
    if (name.substr(start, end - start) == "..") return "a '..' component is not allowed";
    start = end + 1;
  }
  return "";
}

// JSON string literal of `text` (the overlay is YAML written as JSON).
std::string Quoted(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (byte < 0x20) {
      out += fmt::format("\\u{:04x}", byte);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// The file a diagnostic line is located in, or "" when the line is no location: clang's
// "FILE:LINE:COL: error: ..." (also warning, note, fatal error, remark) and the include
// stack's "In file included from FILE:LINE:" / "                 from FILE:LINE:".
std::string_view LocationFile(std::string_view line) {
  // Cuts one ":<digits>" from the end of `location`; false when it does not end so.
  auto cut_number = [](std::string_view& location) {
    std::size_t colon = location.rfind(':');
    if (colon == std::string_view::npos || colon + 1 == location.size()) return false;
    for (char c : location.substr(colon + 1)) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    }
    location = location.substr(0, colon);
    return true;
  };
  for (std::string_view prefix : {"In file included from ", "                 from "}) {
    if (!line.starts_with(prefix)) continue;
    std::string_view location = line.substr(prefix.size());
    if (location.ends_with(':') || location.ends_with(',')) location.remove_suffix(1);
    return cut_number(location) ? location : "";
  }
  for (std::string_view severity :
       {": error: ", ": warning: ", ": note: ", ": fatal error: ", ": remark: "}) {
    std::size_t at = line.find(severity);
    if (at == std::string_view::npos) continue;
    std::string_view location = line.substr(0, at);  // FILE:LINE:COL or FILE:LINE
    if (!cut_number(location)) return "";
    cut_number(location);
    return location;
  }
  return "";
}

bool IsSummary(std::string_view line) {
  return line.ends_with(" generated.") || line.starts_with("clang: ") ||
         line.starts_with("clang-16: ") || line.find("wasm-ld") != std::string_view::npos;
}

}  // namespace

std::string_view SandboxPrelude() {
  return "/* Reef guest sandbox: inline assembly can read files (.incbin, .include). */\n"
         "#pragma GCC poison __asm__ __asm\n";
}

std::span<const std::string_view> FreestandingHeaders() {
  return kFreestandingHeaders;
}

Status CheckIncludes(std::string_view source, std::string_view file_name) {
  for (const auto& [line_number, line] : LogicalLines(source)) {
    std::size_t pos = SkipBlanks(line, 0);
    if (line.substr(pos, 1) == "#") {
      pos += 1;
    } else if (line.substr(pos, 2) == "%:") {
      pos += 2;
    } else {
      continue;
    }
    pos = SkipBlanks(line, pos);
    std::size_t word_end = pos;
    while (word_end < line.size() &&
           (std::isalnum(static_cast<unsigned char>(line[word_end])) || line[word_end] == '_')) {
      ++word_end;
    }
    std::string_view directive = std::string_view(line).substr(pos, word_end - pos);
    bool include = false;
    for (std::string_view d : kIncludeDirectives) include = include || d == directive;
    if (!include) continue;
    pos = SkipBlanks(line, word_end);
    if (pos >= line.size() || (line[pos] != '"' && line[pos] != '<')) continue;  // a macro
    char close = line[pos] == '"' ? '"' : '>';
    std::size_t end = line.find(close, pos + 1);
    if (end == std::string::npos) continue;  // clang reports the malformed name
    std::string_view name = std::string_view(line).substr(pos + 1, end - pos - 1);
    std::string_view refusal = RefusalOf(name);
    if (refusal.empty()) continue;
    return Status::InvalidArgument(fmt::format(
        "compile error:\n{}:{}: #{} {}{}{} refused: {}; a guest source may include only the C "
        "SDK headers (reef.h, reef_*.h) and the C freestanding headers (stdint.h, stddef.h, "
        "stdbool.h, stdarg.h, limits.h, float.h, ...) by name\n",
        file_name, line_number, directive, line[pos], name, close, refusal));
  }
  return Status::Ok();
}

std::string SandboxOverlay(const fs::path& sandbox_dir, std::span<const SandboxFile> files) {
  std::string contents;
  for (const SandboxFile& file : files) {
    contents +=
        fmt::format("{}\n    {{\"type\": \"file\", \"name\": {}, \"external-contents\": {}}}",
                    contents.empty() ? "" : ",", Quoted(file.name), Quoted(file.file.string()));
  }
  return fmt::format(
      "{{\"version\": 0, \"case-sensitive\": true, \"fallthrough\": false,\n"
      " \"use-external-names\": false,\n"
      " \"roots\": [{{\"type\": \"directory\", \"name\": {}, \"contents\": [{}\n  ]}}]}}\n",
      Quoted(sandbox_dir.string()), contents);
}

std::string FilterDiagnostics(std::string_view output, const fs::path& sandbox_dir,
                              std::span<const std::string> visible) {
  std::string text(output);
  std::string prefix = sandbox_dir.string() + "/";
  for (std::size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at)) {
    text.erase(at, prefix.size());
  }
  auto is_visible = [&visible](std::string_view file) {
    if (file.starts_with('<')) return true;  // <built-in>, <command line>, <scratch space>
    for (const std::string& name : visible) {
      if (file == name) return true;
    }
    return false;
  };

  std::string out;
  bool hidden = false;  // the current diagnostic is located outside the sandbox
  bool poisoned = false;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view line = std::string_view(text).substr(pos, end - pos);
    pos = end + 1;
    if (line.starts_with("PLEASE submit a bug report") || line.starts_with("Stack dump:")) {
      out += "clang crashed (its stack dump, which names files of the server, is not shown)\n";
      break;
    }
    std::string_view file = LocationFile(line);
    if (!file.empty()) {
      bool was_hidden = hidden;
      hidden = !is_visible(file);
      if (hidden) {
        if (!was_hidden) out += "[a diagnostic located outside the guest sandbox was removed]\n";
        continue;
      }
    } else if (IsSummary(line)) {
      hidden = false;
    } else if (hidden) {
      continue;
    }
    poisoned = poisoned || line.find("attempt to use a poisoned identifier") != std::string::npos;
    out += line;
    out += '\n';
  }
  if (poisoned) {
    out += "note: inline assembly (__asm__, __asm) is not allowed in guest sources\n";
  }
  return out;
}

}  // namespace reef::code
