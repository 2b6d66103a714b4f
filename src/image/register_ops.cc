// Registering the image's ops on a dispatcher: each row of detail::OpTable() becomes a
// synchronous op, an asynchronous one (tick), or one run on a pool (the compile pool for
// spawn, reload and become; the control pool for the ops that wait for an actor's reactor),
// with the same checks of its arguments and the same "changed" notification.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <exception>
#include <memory>
#include <utility>

#include "image/detail/op_table.h"

namespace reef::image {
namespace {

using json = nlohmann::json;
using detail::Args;
using detail::Ctx;
using detail::OpPool;
using detail::OpSpec;
using detail::OpTable;

// The end of every op: a debug line, and the "changed" notification of a mutation.
void Finished(Image::State& s, const OpSpec& spec, uint64_t connection_id,
              const Result<json>& result, const Change& change) {
  spdlog::debug("connection {}: {} -> {}", connection_id, spec.name,
                result.ok() ? "ok" : result.status().ToString());
  if (result.ok() && spec.changes != detail::Changes::kNothing) s.NotifyChanged(spec.name, change);
}

// Whether `spec` changes the image's actors, so its answer waits for the output gate.
bool ChangesActors(const OpSpec& spec) {
  return spec.changes == detail::Changes::kActors;
}

// Answers an op: a mutation of actors that succeeded only once its changes are durable (the output
// gate, Image::State::AfterDurable), so neither its answer nor its "changed" notification claims a
// change a crash could take back.
void Answer(Image::State& s, const OpSpec& spec, uint64_t connection_id, Result<json> result,
            std::shared_ptr<const Change> change, server::OpDone done) {
  if (!result.ok() || !ChangesActors(spec)) {
    Finished(s, spec, connection_id, result, *change);
    return done(std::move(result));
  }
  auto answer = std::make_shared<Result<json>>(std::move(result));
  s.AfterDurable([&s, &spec, connection_id, answer, change, done = std::move(done)](Status status) {
    if (!status.ok()) {
      *answer = Status::Unavailable(fmt::format(
          "{}: done in memory, but it could not be made durable: {}", spec.name, status.message()));
    }
    Finished(s, spec, connection_id, *answer, *change);
    done(std::move(*answer));
  });
}

// An op handed to a pool. Destroyed unrun (the image closing), it answers `unavailable`.
struct PoolJob {
  Image::State* state = nullptr;
  const OpSpec* spec = nullptr;
  json raw;
  uint64_t connection_id = 0;
  server::OpDone done;

  PoolJob() = default;
  PoolJob(const PoolJob&) = delete;
  PoolJob& operator=(const PoolJob&) = delete;
  ~PoolJob() {
    if (done) done(Status::Unavailable("the image is closing; the request was not run"));
  }
  void Run() {
    Args args(spec->name, raw);
    auto change = std::make_shared<Change>();
    Ctx ctx{*state, args, nullptr, *change};
    // Off the dispatcher, so its guard too: an exception is the op's `internal` answer, never
    // the end of the process.
    Result<json> result = Status::Internal("not run");
    try {
      result = spec->handler(ctx);
    } catch (const std::exception& e) {
      result = Status::Internal(fmt::format("op \"{}\" failed: {}", spec->name, e.what()));
    }
    Answer(*state, *spec, connection_id, std::move(result), change, std::exchange(done, nullptr));
  }
};

}  // namespace

Status Image::RegisterOps(server::ProtocolDispatcher& dispatcher) {
  State* state = state_.get();
  for (const OpSpec& spec : OpTable()) {
    if (spec.pool != OpPool::kNone) {
      IoPool* pool =
          spec.pool == OpPool::kCompile ? state->compile_pool.get() : state->control_pool.get();
      const char* waiting = spec.pool == OpPool::kCompile ? "compiles" : "actor operations";
      auto handler = [state, &spec, pool, waiting](const json& raw, server::Connection& connection,
                                                   server::OpDone done) {
        Args args(spec.name, raw);
        if (Status known = args.OnlyKnown(spec.args); !known.ok()) return done(known);
        auto job = std::make_shared<PoolJob>();
        job->state = state;
        job->spec = &spec;
        job->raw = raw;
        job->connection_id = connection.id();
        job->done = std::move(done);
        if (!pool->TrySubmit([job] { job->Run(); })) {
          std::exchange(job->done, nullptr)(
              Status::Unavailable(fmt::format("{}: {} {} are waiting already; try again shortly",
                                              spec.name, pool->max_waiting(), waiting)));
        }
      };
      REEF_RETURN_IF_ERROR(
          dispatcher.RegisterAsync(std::string(spec.name), std::string(spec.summary), handler));
      continue;
    }
    // An asynchronous op, and with a durable image a synchronous one that changes actors
    // (answered after the output gate), answer through `done`.
    if (spec.async_handler || (ChangesActors(spec) && state->durable)) {
      auto handler = [state, &spec](const json& raw, server::Connection& connection,
                                    server::OpDone done) {
        Args args(spec.name, raw);
        if (Status known = args.OnlyKnown(spec.args); !known.ok()) return done(known);
        auto change = std::make_shared<Change>();
        Ctx ctx{*state, args, &connection, *change};
        auto answer = [state, &spec, change, id = connection.id(),
                       done = std::move(done)](Result<json> result) mutable {
          Answer(*state, spec, id, std::move(result), change, std::move(done));
        };
        if (spec.async_handler) return spec.async_handler(ctx, std::move(answer));
        answer(spec.handler(ctx));
      };
      REEF_RETURN_IF_ERROR(
          dispatcher.RegisterAsync(std::string(spec.name), std::string(spec.summary), handler));
      continue;
    }
    auto handler = [state, &spec](const json& raw, server::Connection& connection) -> Result<json> {
      Args args(spec.name, raw);
      REEF_RETURN_IF_ERROR(args.OnlyKnown(spec.args));
      Change change;
      Ctx ctx{*state, args, &connection, change};
      Result<json> result = spec.handler(ctx);
      Finished(*state, spec, connection.id(), result, change);
      return result;
    };
    REEF_RETURN_IF_ERROR(
        dispatcher.Register(std::string(spec.name), std::string(spec.summary), handler));
  }
  return Status::Ok();
}

}  // namespace reef::image
