#include "server/protocol.h"

#include <fmt/format.h>

#include <atomic>
#include <cmath>
#include <exception>
#include <utility>

#include "core/json.h"

namespace reef::server {
namespace {

using json = nlohmann::json;

}  // namespace

int JsonNestingDepth(std::string_view text, int limit) {
  int depth = 0;
  int deepest = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest) deepest = depth;
      if (deepest > limit) return deepest;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

namespace {

// Builds the request tree like json::parse, but refuses numbers that would change on the way
// in (core/json.h's one number rule: exact int64 or finite float64): nlohmann would
// turn 12345678901234567890's neighbours and -9223372036854775809 into doubles and 1e-400
// into 0. Every other event goes to nlohmann's own DOM builder.
class RequestSax {
 public:
  RequestSax(json& doc, uint64_t max_values) : dom_(doc, false), values_left_(max_values) {}

  bool null() { return Count() && dom_.null(); }
  bool boolean(bool b) { return Count() && dom_.boolean(b); }
  bool number_integer(json::number_integer_t i) { return Count() && dom_.number_integer(i); }
  bool number_unsigned(json::number_unsigned_t u) {
    if (Status s = CheckJsonInteger(u); !s.ok()) return Refuse(s.message());
    return Count() && dom_.number_unsigned(u);
  }
  bool number_float(json::number_float_t d, const json::string_t& literal) {
    if (Status s = CheckJsonFloat(d, literal); !s.ok()) return Refuse(s.message());
    return Count() && dom_.number_float(d, literal);
  }
  bool string(json::string_t& text) { return Count() && dom_.string(text); }
  bool binary(json::binary_t& bytes) { return Count() && dom_.binary(bytes); }
  bool start_object(std::size_t n) { return Count() && dom_.start_object(n); }
  bool key(json::string_t& text) { return dom_.key(text); }
  bool end_object() { return dom_.end_object(); }
  bool start_array(std::size_t n) { return Count() && dom_.start_array(n); }
  bool end_array() { return dom_.end_array(); }
  bool parse_error(std::size_t position, const std::string& token,
                   const nlohmann::detail::exception& error) {
    if (error.id == kJsonNumberOverflow) {  // a float literal past float64: name the rule
      return Refuse(fmt::format("malformed JSON at byte {}: {}", position,
                                CheckJsonFloat(HUGE_VAL, token).message()));
    }
    // e.what() reads "[json.exception.parse_error.101] parse error at line 1, ...".
    std::string what = error.what();
    if (std::size_t bracket = what.find("] "); bracket != std::string::npos) {
      what = what.substr(bracket + 2);
    }
    return Refuse(fmt::format("malformed JSON at byte {}: {}", position, what));
  }

  // Why parsing stopped, when it did.
  const std::string& error() const { return error_; }
  bool too_many_values() const { return too_many_; }

 private:
  // Counts one value against the budget (each value costs the tree about 16-100 bytes).
  bool Count() {
    if (values_left_ > 0) {
      --values_left_;
      return true;
    }
    too_many_ = true;
    return Refuse("the document holds more JSON values than allowed");
  }

  bool Refuse(std::string message) {
    if (error_.empty()) error_ = std::move(message);
    return false;
  }

  nlohmann::detail::json_sax_dom_parser<json> dom_;
  uint64_t values_left_ = UINT64_MAX;
  bool too_many_ = false;
  std::string error_;
};

// The top-level fields a request may carry.
constexpr std::string_view kRequestFields[] = {"v", "id", "op", "args"};

bool IsRequestField(std::string_view key) {
  for (std::string_view field : kRequestFields) {
    if (key == field) return true;
  }
  return false;
}

}  // namespace

Result<json> ParseJsonDocument(std::string_view text, const JsonDocumentLimits& limits) {
  if (JsonNestingDepth(text, limits.max_depth) > limits.max_depth) {
    return Status::InvalidArgument(
        fmt::format("the JSON nests arrays/objects deeper than {} levels", limits.max_depth));
  }
  json doc;
  RequestSax sax(doc, limits.max_values);
  bool parsed = false;
  try {
    parsed = json::sax_parse(text.begin(), text.end(), &sax, json::input_format_t::json,
                             /*strict=*/true, /*ignore_comments=*/false);
  } catch (const json::exception& e) {  // defence: the SAX path reports errors, not throws
    return Status::InvalidArgument(fmt::format("malformed JSON: {}", e.what()));
  }
  if (sax.too_many_values()) {
    return Status::LimitExceeded(
        fmt::format("the JSON holds more than {} values", limits.max_values));
  }
  if (!parsed) {
    return Status::InvalidArgument(sax.error().empty() ? std::string("malformed JSON")
                                                       : sax.error());
  }
  return doc;
}

Result<Request> ParseRequest(std::string_view frame, json* id) {
  *id = nullptr;
  REEF_ASSIGN_OR_RETURN(json doc, ParseJsonDocument(frame, {.max_depth = kMaxRequestDepth}));
  if (!doc.is_object()) {
    return Status::InvalidArgument(
        fmt::format("a request must be a JSON object, got {}", doc.type_name()));
  }
  // The id first, so every later error can be correlated.
  auto id_it = doc.find("id");
  if (id_it == doc.end()) {
    return Status::InvalidArgument("request has no \"id\" (a string or number)");
  }
  if (!id_it->is_string() && !id_it->is_number()) {
    return Status::InvalidArgument(
        fmt::format("request \"id\" must be a string or number, got {}", id_it->type_name()));
  }
  *id = *id_it;
  for (const auto& [key, value] : doc.items()) {
    if (!IsRequestField(key)) {
      return Status::InvalidArgument(
          fmt::format("unknown request field \"{}\" (allowed: v, id, op, args)", key));
    }
  }
  auto v_it = doc.find("v");
  if (v_it == doc.end()) {
    return Status::InvalidArgument(fmt::format(
        "request has no \"v\" (protocol version; this server speaks {})", kProtocolVersion));
  }
  if (!v_it->is_number_integer() || v_it->get<int64_t>() != kProtocolVersion) {
    return Status::InvalidArgument(
        fmt::format("unsupported protocol version {}; this server speaks \"v\":{}", ToText(*v_it),
                    kProtocolVersion));
  }
  auto op_it = doc.find("op");
  if (op_it == doc.end() || !op_it->is_string() || op_it->get_ref<const std::string&>().empty()) {
    return Status::InvalidArgument("request \"op\" must be a non-empty string");
  }
  Request request;
  request.id = *id;
  request.op = op_it->get<std::string>();
  auto args_it = doc.find("args");
  if (args_it == doc.end() || args_it->is_null()) {
    request.args = json::object();
  } else if (args_it->is_object()) {
    request.args = std::move(*args_it);
  } else {
    return Status::InvalidArgument(
        fmt::format("request \"args\" must be an object, got {}", args_it->type_name()));
  }
  return request;
}

json OkResponse(const json& id, json result) {
  return json{{"v", kProtocolVersion}, {"id", id}, {"ok", true}, {"result", std::move(result)}};
}

json ErrorResponse(const json& id, const Status& status) {
  return json{{"v", kProtocolVersion},
              {"id", id},
              {"ok", false},
              {"error", {{"code", CodeName(status.code())}, {"message", status.message()}}}};
}

json Event(std::string_view kind, json data) {
  return json{{"v", kProtocolVersion}, {"event", kind}, {"data", std::move(data)}};
}

std::string ToText(const json& message) {
  return message.dump(-1, ' ', false, json::error_handler_t::replace);
}

namespace {

// The one answer of an asynchronous op, shared by the copies of its OpDone: the first Answer
// responds; the last copy, gone unanswered, answers `internal`.
class OpAnswer {
 public:
  OpAnswer(json id, std::string op, std::function<void(std::string)> respond)
      : id_(std::move(id)), op_(std::move(op)), respond_(std::move(respond)) {}
  ~OpAnswer() { Answer(Status::Internal(fmt::format("op \"{}\" ended without answering", op_))); }
  OpAnswer(const OpAnswer&) = delete;
  OpAnswer& operator=(const OpAnswer&) = delete;

  void Answer(Result<json> result) {
    if (answered_.exchange(true)) return;
    respond_(result.ok() ? ToText(OkResponse(id_, std::move(result).value()))
                         : ToText(ErrorResponse(id_, result.status())));
  }

 private:
  const json id_;
  const std::string op_;
  std::function<void(std::string)> respond_;
  std::atomic<bool> answered_{false};
};

}  // namespace

Status ProtocolDispatcher::Register(std::string name, std::string summary, OpHandler handler) {
  if (!handler) return Status::InvalidArgument(fmt::format("op \"{}\" has no handler", name));
  return AddRow(OpRow{std::move(name), std::move(summary), std::move(handler), nullptr});
}

Status ProtocolDispatcher::RegisterAsync(std::string name, std::string summary,
                                         AsyncOpHandler handler) {
  if (!handler) return Status::InvalidArgument(fmt::format("op \"{}\" has no handler", name));
  return AddRow(OpRow{std::move(name), std::move(summary), nullptr, std::move(handler)});
}

Status ProtocolDispatcher::AddRow(OpRow row) {
  if (row.name.empty()) return Status::InvalidArgument("an op needs a name");
  if (rows_.contains(row.name)) {
    return Status::AlreadyExists(fmt::format("op \"{}\" is registered already", row.name));
  }
  std::string name = row.name;
  rows_.emplace(std::move(name), std::move(row));
  return Status::Ok();
}

void ProtocolDispatcher::HandleFrame(std::string_view frame, Connection& connection,
                                     std::function<void(std::string)> respond) const {
  json id;
  Result<Request> request = ParseRequest(frame, &id);
  if (!request.ok()) return respond(ToText(ErrorResponse(id, request.status())));
  auto row = rows_.find(request->op);
  if (row == rows_.end()) {
    std::string known;
    for (const auto& [name, unused] : rows_) {
      known += known.empty() ? name : ", " + name;
    }
    return respond(ToText(ErrorResponse(
        id,
        Status::NotFound(fmt::format("unknown op \"{}\"; known ops: {}", request->op, known)))));
  }
  auto failed = [&](const std::exception& e) {
    return Status::Internal(fmt::format("op \"{}\" failed: {}", request->op, e.what()));
  };
  if (row->second.async_handler) {
    auto answer = std::make_shared<OpAnswer>(id, request->op, std::move(respond));
    try {
      row->second.async_handler(request->args, connection, [answer](Result<json> result) {
        answer->Answer(std::move(result));
      });
    } catch (const std::exception& e) {
      answer->Answer(failed(e));
    }
    return;
  }
  std::string text;
  try {
    Result<json> result = row->second.handler(request->args, connection);
    text = result.ok() ? ToText(OkResponse(id, std::move(result).value()))
                       : ToText(ErrorResponse(id, result.status()));
  } catch (const std::exception& e) {
    text = ToText(ErrorResponse(id, failed(e)));
  }
  respond(std::move(text));
}

std::vector<const OpRow*> ProtocolDispatcher::ops() const {
  std::vector<const OpRow*> out;
  out.reserve(rows_.size());
  for (const auto& [name, row] : rows_) out.push_back(&row);
  return out;
}

bool ProtocolDispatcher::Has(std::string_view name) const {
  return rows_.contains(name);
}

Status RegisterBuiltinOps(ProtocolDispatcher& dispatcher) {
  REEF_RETURN_IF_ERROR(
      dispatcher.Register("ping", "Answers {\"pong\":true}; checks the connection and the envelope",
                          [](const json&, Connection&) -> Result<json> {
                            return json{{"pong", true}};
                          }));
  return dispatcher.Register("ops", "Lists every operation with its summary",
                             [&dispatcher](const json&, Connection&) -> Result<json> {
                               json list = json::array();
                               for (const OpRow* row : dispatcher.ops()) {
                                 list.push_back({{"name", row->name}, {"summary", row->summary}});
                               }
                               return json{{"ops", std::move(list)}};
                             });
}

}  // namespace reef::server
