// Protocol: the versioned JSON envelope spoken over WebSocket (subprotocol "reef.v1"), and
// the table-driven dispatcher that maps an operation name to its handler (STYLE.md habit 6;
// docs/protocol.md describes the wire format for clients).
//
//   request   {"v":1,"id":<string or number>,"op":"<name>","args":{...}}
//   response  {"v":1,"id":<same id>,"ok":true,"result":<any JSON>}
//             {"v":1,"id":<same id or
//             null>,"ok":false,"error":{"code":"<CodeName>","message":"..."}}
//   event     {"v":1,"event":"<kind>","data":<any JSON>}   (pushed by the server, no id)
//
// Every malformed, unknown or oversized request gets an error response; nothing a client
// sends makes the dispatcher fail or closes the connection.
//
// Thread ownership: ProtocolDispatcher is built by one thread (Register), then read-only:
// HandleFrame may run on any number of threads at once. Connection is implemented by the
// server; its methods may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace reef::server {

// The envelope version this server speaks ("v" in every message).
inline constexpr int kProtocolVersion = 1;
// The WebSocket subprotocol a client must offer (Sec-WebSocket-Protocol, RFC 6455 4.1).
inline constexpr std::string_view kSubprotocol = "reef.v1";
// Deepest nesting of arrays and objects accepted in a request frame.
inline constexpr int kMaxRequestDepth = 128;

// One client connection as seen by operation handlers.
class Connection {
 public:
  virtual ~Connection() = default;

  // Server-assigned id, unique for the server's lifetime (starts at 1).
  virtual uint64_t id() const = 0;

  // Queues the event {"v":1,"event":kind,"data":data} for this client. Any thread.
  // The outgoing queue is bounded in bytes (ServerLimits::max_outgoing_bytes, responses
  // included): a client that does not read is closed with a close reason naming the limit
  // instead of being buffered without bound.
  // Errors: Unavailable when the connection is closed or closing (also while the server shuts
  // down); LimitExceeded when the queue is full (the connection is then being closed).
  virtual Status Push(std::string_view kind, nlohmann::json data) = 0;

  // A handle that outlives the op call, for pushing events later (log follow, change
  // notifications): lock() it before each Push; it expires when the server releases the
  // connection. Empty when the implementation has no shared ownership (test fakes).
  virtual std::weak_ptr<Connection> Handle() { return {}; }

  // Bytes Push may still queue before the outgoing queue is full (max_outgoing_bytes minus
  // what is queued; each message counts its text plus
  // ServerLimits::kOutgoingMessageOverhead). Producers of event streams wait while it is low
  // instead of overflowing the queue, which closes the connection. Any thread; a snapshot.
  virtual uint64_t OutgoingRoomBytes() const { return UINT64_MAX; }

  // True once the client closed or the connection broke (or the server is closing it). Long
  // ops poll it to stop work nobody will read. Any thread; a snapshot.
  virtual bool closed() const { return false; }
};

// Handles one operation. `args` is the request's "args" object ({} when absent); it is only
// valid during the call. Returns the "result" of the response, or the error to answer with.
// Runs on a server handler thread, never on a network I/O thread.
using OpHandler = std::function<Result<nlohmann::json>(const nlohmann::json& args, Connection&)>;

// Answers an asynchronous op: the "result" of the response or the error to answer with. The
// first call wins, later ones are ignored; when the last copy goes without a call, the op
// is answered `internal` ("ended without answering"), so no request is left unanswered. Any
// thread; never blocks (the answer is queued for the connection).
using OpDone = std::function<void(Result<nlohmann::json>)>;
// Starts an operation that waits (for a guest, a reactor, a deadline) and returns at once;
// `done` answers it later, so the wait holds no handler thread. `args` and the Connection
// reference are valid only during the call (keep Connection::Handle() for later). Requests
// of one connection still run in arrival order: the next starts once `done` has answered.
using AsyncOpHandler = std::function<void(const nlohmann::json& args, Connection&, OpDone done)>;

// One row of the operation table: exactly one of the handlers is set.
struct OpRow {
  std::string name;     // "ping"; lowercase words joined by '-'
  std::string summary;  // one line for `ops`, help output and docs
  OpHandler handler;
  AsyncOpHandler async_handler;
};

// A request whose envelope has been validated.
struct Request {
  nlohmann::json id;  // string or number
  std::string op;
  nlohmann::json args;  // always an object
};

// Parses and validates one request frame (UTF-8 JSON text).
// On failure `*id` holds the request's id when the frame got far enough to have a valid one,
// else null, so the error response can still be correlated. REQUIRES: id != nullptr.
// Errors: InvalidArgument naming what is wrong: malformed JSON (with the parser's position),
// nesting deeper than kMaxRequestDepth, not an object, a missing or ill-typed "v", "id", "op"
// or "args", a "v" other than kProtocolVersion, or an unknown top-level field.
Result<Request> ParseRequest(std::string_view frame, nlohmann::json* id);

// Bounds of ParseJsonDocument.
struct JsonDocumentLimits {
  int max_depth = kMaxRequestDepth;  // nested arrays/objects
  uint64_t max_values = UINT64_MAX;  // values in the document (each costs the tree 16-100 bytes)
};

// Parses one JSON document as the network edge must (RFC 8259, UTF-8, no comments): nesting is
// checked before parsing, so a hostile document cannot exhaust the stack; a number breaking
// core/json.h's number rule (exact int64 or finite float64) is refused, not changed.
// Errors: InvalidArgument (malformed, too deep, a number breaking the rule; naming it),
// LimitExceeded (more than max_values values). Any thread.
Result<nlohmann::json> ParseJsonDocument(std::string_view text,
                                         const JsonDocumentLimits& limits = {});

// The deepest array/object nesting in `text`, counting no further once it passes `limit`.
// Brackets inside strings do not count. Any thread.
int JsonNestingDepth(std::string_view text, int limit);

// Envelope builders (see the table at the top of this file).
nlohmann::json OkResponse(const nlohmann::json& id, nlohmann::json result);
nlohmann::json ErrorResponse(const nlohmann::json& id, const Status& status);
nlohmann::json Event(std::string_view kind, nlohmann::json data);

// Compact JSON text of `message`; ill-formed UTF-8 in strings is replaced with U+FFFD.
std::string ToText(const nlohmann::json& message);

// The operation table.
class ProtocolDispatcher {
 public:
  // Adds a row. REQUIRES: called before the dispatcher is shared with a running server.
  // Errors: InvalidArgument for an empty name or a null handler; AlreadyExists when `name`
  // is registered already.
  Status Register(std::string name, std::string summary, OpHandler handler);
  // Register for an op that answers through OpDone. Errors: those of Register.
  Status RegisterAsync(std::string name, std::string summary, AsyncOpHandler handler);

  // Answers one request frame: `respond` gets the response text exactly once (never a
  // failure: every problem becomes an error response), during the call for a synchronous op
  // and from whatever thread answers an asynchronous one. Errors reported: the ParseRequest
  // errors; NotFound for an unknown op, naming it and listing the known ops; whatever the
  // handler answers; Internal when the handler throws (the exception does not escape) or an
  // asynchronous one drops its OpDone unanswered. Any thread, concurrently.
  void HandleFrame(std::string_view frame, Connection& connection,
                   std::function<void(std::string response)> respond) const;

  // The rows, sorted by name.
  std::vector<const OpRow*> ops() const;
  // True when `name` is registered.
  bool Has(std::string_view name) const;

 private:
  Status AddRow(OpRow row);

  std::map<std::string, OpRow, std::less<>> rows_;
};

// Registers the built-in operations: "ping" -> {"pong":true}, and "ops" -> {"ops":[{"name",
// "summary"}...]} listing every row of `dispatcher` at call time.
// REQUIRES: `dispatcher` outlives every call of the registered handlers.
// Errors: AlreadyExists when either name is taken.
Status RegisterBuiltinOps(ProtocolDispatcher& dispatcher);

}  // namespace reef::server
