// The image's op table (ops.cc), shared with its registration (register_ops.cc). Internal to
// src/image.
//
// Thread ownership: the table is built once and read-only; a handler runs on a server handler
// thread, on the compile pool (the ops that compile) or on the control pool (the ops that wait
// for an actor's reactor), as its OpSpec::pool says.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "image/detail/args.h"
#include "image/detail/image_state.h"
#include "server/protocol.h"

namespace reef::image::detail {

// What a handler gets: the image, its args, the calling connection (null for an op that runs
// on a pool, whose handler must not need it), and the change record it fills in when it
// mutates the image.
struct Ctx {
  Image::State& s;
  const Args& args;
  server::Connection* connection;
  Change& change;
};

using Handler = std::function<Result<nlohmann::json>(Ctx&)>;
// An op that answers later through `done` (tick: it runs on a reactor of the fleet). It fills
// in the change record before it returns.
using AsyncHandler = std::function<void(Ctx&, server::OpDone done)>;

// Where a synchronous handler runs. A pool answers when the handler returns, so no server
// thread waits for the compiler or for a busy reactor.
enum class OpPool : uint8_t {
  kNone,     // on the server thread that received the op (quick, no waiting)
  kCompile,  // the compile pool: the op compiles (spawn, reload, become)
  kControl,  // the control pool: the op waits for an actor's reactor (inspect, ps, kill, ...)
};

// What an op changes. A change sends a "changed" notification on success; a change of actors
// also waits for the output gate first (Image::State::AfterDurable). The source ops need no
// gate: each of their SQLite writes is durable by itself.
enum class Changes : uint8_t { kNothing, kActors, kSources };

struct OpSpec {
  std::string_view name;
  std::vector<std::string_view> args;  // accepted argument names; anything else is an error
  Changes changes;
  Handler handler;  // null for an asynchronous op
  std::string_view summary;
  AsyncHandler async_handler = nullptr;
  OpPool pool = OpPool::kNone;
};

// The source store's handlers (source_ops.cc), rows of the table.
Result<nlohmann::json> SourcesOp(Ctx& c);
Result<nlohmann::json> ReadOp(Ctx& c);
Result<nlohmann::json> WriteOp(Ctx& c);
Result<nlohmann::json> CommitOp(Ctx& c);
Result<nlohmann::json> HistoryOp(Ctx& c);
Result<nlohmann::json> RollbackOp(Ctx& c);

// Every op of the image, in the order of docs/protocol.md. Static storage.
const std::vector<OpSpec>& OpTable();

}  // namespace reef::image::detail
