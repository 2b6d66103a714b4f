#include "cli/output.h"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <vector>

#include "client/json_fields.h"

namespace reef::cli {

using json = nlohmann::json;

namespace {

// Longest cell text in a table before it is cut with "…".
constexpr size_t kMaxCell = 48;
// Queued messages `inspect` lists one per line; the rest are counted ("... N more").
constexpr size_t kMaxQueuedShown = 10;

using client::BoolField;

std::string Compact(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// A field as text: strings plain, everything else as compact JSON, missing as "?".
std::string Field(const json& object, std::string_view key) {
  if (!object.is_object() || !object.contains(key)) return "?";
  const json& value = object[std::string(key)];
  if (value.is_string()) return value.get<std::string>();
  return Compact(value);
}

std::string Cut(std::string text) {
  if (text.size() > kMaxCell) {
    text.resize(kMaxCell - 1);
    // Do not cut a UTF-8 sequence in half.
    while (!text.empty() && (static_cast<unsigned char>(text.back()) & 0xC0) == 0x80) {
      text.pop_back();
    }
    if (!text.empty() && static_cast<unsigned char>(text.back()) >= 0xC0) text.pop_back();
    text += "…";
  }
  return text;
}

std::string Ref(const json& object, std::string_view key = "actor") {
  std::string id = Field(object, key);
  return id.starts_with('@') || id == "?" ? id : "@" + id;
}

// "actors/counter (1a2b3c4d5e6f)" for {"id","label"}.
std::string Implementation(const json& implementation) {
  if (!implementation.is_object()) return Compact(implementation);
  return fmt::format("{} ({})", Field(implementation, "label"),
                     ShortId(Field(implementation, "id")));
}

// Columns padded to their widest cell; the last column is not padded.
std::string Table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  auto width = [](const std::string& text) {
    // Count code points, not bytes, so "…" is one column.
    return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) {
      return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    }));
  };
  for (const auto& row : rows) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], width(row[i]));
  }
  std::string out;
  for (const auto& row : rows) {
    if (!out.empty()) out += '\n';
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - width(row[i]) + 2, ' ');
    }
    out += line;
  }
  return out;
}

std::string UtcTime(const json& unix_ms, bool with_date) {
  if (!unix_ms.is_number_integer()) return "?";
  int64_t ms = unix_ms.get<int64_t>();
  std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, with_date ? "%Y-%m-%d %H:%M:%S" : "%H:%M:%S", &tm);
  return with_date ? std::string(buffer) + "Z"
                   : fmt::format("{}.{:03}", buffer, static_cast<int>(ms % 1000));
}

}  // namespace

std::string EscapeControl(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (byte < 0x20 || byte == 0x7F) {
      out += fmt::format("\\x{:02x}", byte);
    } else {
      out += c;
    }
  }
  return out;
}

std::string ShortId(std::string_view id) {
  return std::string(id.substr(0, 12));
}

std::string FormatPs(const json& result) {
  const json actors = result.is_object() ? result.value("actors", json::array()) : json::array();
  if (!actors.is_array() || actors.empty()) return "no actors";
  std::vector<std::vector<std::string>> rows = {
      {"ACTOR", "STATUS", "INC", "QUEUED", "IMPLEMENTATION", "STATE"}};
  for (const json& actor : actors) {
    rows.push_back(
        {Ref(actor), Field(actor, "status"), Field(actor, "incarnation"), Field(actor, "queued"),
         actor.is_object() && actor.contains("implementation")
             ? Implementation(actor["implementation"])
             : "?",
         Cut(actor.is_object() && actor.contains("state") ? Compact(actor["state"]) : "?")});
  }
  return Table(rows);
}

std::string FormatTick(const json& result) {
  return fmt::format("{} slices, {} instructions, {} commits, {} failures", Field(result, "slices"),
                     Field(result, "instructions"), Field(result, "commits"),
                     Field(result, "failures"));
}

std::string FormatSnapshot(const json& snapshot) {
  if (!snapshot.is_object()) return Compact(snapshot);
  // Known fields first, in a reading order; fields a newer server adds follow.
  static constexpr std::string_view kOrder[] = {
      "actor",           "status",   "paused_from", "awaiting",  "incarnation",
      "implementation",  "state",    "reserved",    "queued",    "mailbox_capacity",
      "pending_install", "stopping", "failure",     "telemetry", "log_level",
      "reactor",         "tier"};
  std::vector<std::pair<std::string, std::string>> lines;
  auto add = [&](const std::string& key, const json& value) {
    if (value.is_null() && key != "state") return;  // absent fields are null
    std::string text;
    if (key == "actor") {
      text = Ref(snapshot);
    } else if (key == "implementation" || key == "pending_install") {
      text = Implementation(value);
    } else if (key == "queued" && value.is_array()) {
      // One message per line, at most kMaxQueuedShown of them (--json has them all).
      text = fmt::format("{} message{}", value.size(), value.size() == 1 ? "" : "s");
      for (size_t i = 0; i < value.size() && i < kMaxQueuedShown; ++i) {
        text += "\n  " + Compact(value[i]);
      }
      if (value.size() > kMaxQueuedShown) {
        text += fmt::format("\n  ... {} more", value.size() - kMaxQueuedShown);
      }
    } else if (key == "awaiting" && value.is_object()) {
      // What an awaiting actor waits for, as people read it: "call @ref (120 of 5000 ms)".
      text = fmt::format("call @{} ({} of {} ms)", EscapeControl(Field(value, "call")),
                         Field(value, "waited_ms"), Field(value, "timeout_ms"));
    } else if (value.is_string()) {
      text = EscapeControl(value.get<std::string>());
    } else {
      text = Compact(value);
    }
    lines.emplace_back(key, std::move(text));
  };
  for (std::string_view key : kOrder) {
    if (snapshot.contains(key)) add(std::string(key), snapshot[std::string(key)]);
  }
  for (const auto& [key, value] : snapshot.items()) {
    if (std::find(std::begin(kOrder), std::end(kOrder), key) == std::end(kOrder)) {
      add(key, value);
    }
  }
  size_t width = 0;
  for (const auto& line : lines) width = std::max(width, line.first.size());
  std::string out;
  for (const auto& [key, text] : lines) {
    if (!out.empty()) out += '\n';
    out += fmt::format("{}:{}{}", key, std::string(width - key.size() + 1, ' '), text);
  }
  return out;
}

std::string FormatEvents(const json& result, bool repl) {
  const json events = client::ArrayField(result, "events");
  std::string out;
  if (BoolField(result, "missed")) {
    out = "(some earlier events were evicted before they could be read)";
  }
  for (const json& event : events) {
    if (!out.empty()) out += '\n';
    out += fmt::format("#{} {} {} (incarnation {})", Field(event, "seq"), Field(event, "kind"),
                       Ref(event), Field(event, "incarnation"));
    if (event.is_object() && event.contains("detail") && !event["detail"].is_null() &&
        event["detail"] != "") {
      out += " " + EscapeControl(Field(event, "detail"));
    }
  }
  if (BoolField(result, "more")) {
    // The REPL's connection keeps the cursor; a one-shot command starts a new one at 0.
    std::string hint =
        repl ? "(more events: run events again)"
             : fmt::format("(more events: run events --after {})", Field(result, "next_after"));
    out += (out.empty() ? "" : "\n") + hint;
  }
  return out.empty() ? "no new events" : out;
}

std::string FormatLifecycle(const json& result) {
  return fmt::format("{}: {} (incarnation {})", Ref(result), Field(result, "status"),
                     Field(result, "incarnation"));
}

std::string FormatRemoved(const json& result) {
  return fmt::format("removed {} ({} message(s) dropped)", Ref(result),
                     Field(result, "dropped_messages"));
}

std::string FormatPendingInstall(const json& result) {
  std::string implementation = result.is_object() && result.contains("pending_install")
                                   ? Implementation(result["pending_install"])
                                   : "?";
  if (BoolField(result, "installed")) {
    return fmt::format("{}: now runs {}", Ref(result), implementation);
  }
  return fmt::format("{}: switches to {} at its next handler boundary", Ref(result),
                     implementation);
}

std::string FormatSources(const json& result) {
  const json sources = result.is_object() ? result.value("sources", json::array()) : json::array();
  if (!sources.is_array() || sources.empty()) return "no sources";
  std::vector<std::vector<std::string>> rows = {{"PATH", "KIND", "SOURCE"}};
  for (const json& source : sources) {
    rows.push_back(
        {Field(source, "path"), Field(source, "kind"), ShortId(Field(source, "source_id"))});
  }
  return Table(rows);
}

std::string FormatHistory(const json& result) {
  const json revisions =
      result.is_object() ? result.value("revisions", json::array()) : json::array();
  if (!revisions.is_array() || revisions.empty()) return "no revisions";
  std::vector<std::vector<std::string>> rows = {{"REVISION", "WHEN", "KIND", "SOURCE", "MESSAGE"}};
  for (const json& revision : revisions) {
    std::string message =
        revision.is_object() && revision.contains("message") && revision["message"].is_string()
            ? revision["message"].get<std::string>()
            : "";
    rows.push_back(
        {Field(revision, "revision"),
         UtcTime(revision.is_object() ? revision.value("unix_ms", json()) : json(), true),
         Field(revision, "kind"), ShortId(Field(revision, "source_id")), Cut(message)});
  }
  return Table(rows);
}

std::string FormatLogEntry(const json& entry) {
  return fmt::format("#{} {} {:<5} {} {}", Field(entry, "seq"),
                     UtcTime(entry.is_object() ? entry.value("unix_ms", json()) : json(), false),
                     Field(entry, "level"), Ref(entry), EscapeControl(Field(entry, "message")));
}

std::string FormatDeploy(const json& body) {
  std::string out = fmt::format("deployed {} as generation {}", Field(body, "program"),
                                Field(body, "generation"));
  const json* units = client::FindField(body, "units");
  for (std::string_view list : {"added", "changed", "unchanged", "removed"}) {
    std::string names;
    for (const json& name : client::ArrayField(units != nullptr ? *units : json(), list)) {
      if (!names.empty()) names += ", ";
      names += name.is_string() ? name.get<std::string>() : Compact(name);
    }
    out += fmt::format("\n  {:<10} {}", fmt::format("{}:", list), names.empty() ? "-" : names);
  }
  return out;
}

std::string FormatUnits(const json& body) {
  const json units = client::ArrayField(body, "units");
  if (units.empty()) return "no units";
  std::vector<std::vector<std::string>> rows = {{"UNIT", "MODULE", "HANDLER", "PLACEMENT",
                                                 "INSTANCES", "INBOX", "INVOCATIONS", "REJECTED",
                                                 "POISONED", "EVICTED"}};
  for (const json& unit : units) {
    rows.push_back({Field(unit, "unit"), Field(unit, "module"), Field(unit, "handler"),
                    Field(unit, "placement"),
                    fmt::format("{}/{}", Field(unit, "instances"), Field(unit, "instance_limit")),
                    Field(unit, "inbox_capacity"), Field(unit, "invocations"),
                    Field(unit, "rejected"), Field(unit, "poisoned"), Field(unit, "evicted")});
  }
  return Table(rows);
}

std::string FormatInstances(const json& body) {
  const json instances = client::ArrayField(body, "instances");
  if (instances.empty()) return fmt::format("no instances of {}", Field(body, "unit"));
  std::vector<std::vector<std::string>> rows = {{"INSTANCE", "ACTOR", "REACTOR", "STATUS", "INC",
                                                 "TIER", "QUEUED", "INVOCATIONS", "IDLE",
                                                 "FAILURE"}};
  for (const json& instance : instances) {
    bool failed = instance.is_object() && instance.contains("failure");
    // An instance of the unit's old code, finishing what it holds (docs/programs.md).
    bool retired = instance.is_object() && instance.contains("retired") &&
                   instance["retired"].is_boolean() && instance["retired"].get<bool>();
    rows.push_back(
        {Field(instance, "instance") + (retired ? " (retired)" : ""), Ref(instance),
         Field(instance, "reactor"), Field(instance, "status"), Field(instance, "incarnation"),
         Field(instance, "tier"),
         fmt::format("{}/{}", Field(instance, "queued"), Field(instance, "inbox_capacity")),
         Field(instance, "invocations"), fmt::format("{} ms", Field(instance, "idle_ms")),
         failed ? Cut(EscapeControl(Field(instance, "failure"))) : "-"});
  }
  return Table(rows);
}

}  // namespace reef::cli
