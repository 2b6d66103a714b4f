// Test command for the SDK's unit tests: queries of every shape, a fold that records every
// event field, and decisions that use the host services.
import {
  Value, Event, Query, NewEvent, Decision, Init, command, nowMs, random, randomU64, env,
} from "../assembly";
export * from "../assembly/exports/command";

function init(input: Value): Init {
  const op = input.getString("op");
  const state = Value.record().setInt("n", 0);
  if (op == "none") return new Init(null, state);
  if (op == "all") return new Init(Query.all(), state);
  if (op == "empty_item") return new Init(new Query().or([], []), state);
  return new Init(Query.of(["A", "B"], ["t1", "t2"]).or(["C"], []).or([], ["x"]), state);
}

function fold(state: Value, input: Value, event: Event): Value {
  const last = Value.record()
    .setInt("position", event.position)
    .setString("id", event.id)
    .setString("type", event.type)
    .set("tags", Value.strings(event.tags))
    .set("data", event.data)
    .setInt("timestamp_ms", event.timestampMs)
    .setString("correlation_id", event.correlationId)
    .setString("causation_id", event.causationId)
    .set("metadata", event.metadata)
    .setBool("has_t1", event.hasTag("t1"));
  return Value.record().setInt("n", state.getInt("n") + 1).set("last", last);
}

function decide(state: Value, input: Value): Decision {
  const op = input.getString("op");
  if (op == "reject") return Decision.reject(input.getString("message"));
  if (op == "nothing") return Decision.accept([]);
  if (op == "services") {
    const bytes = random(70000); // more than one import call's 65,536
    const k = env("K"), long = env("LONG");
    const data = Value.record()
      .setInt("now", nowMs())
      .setInt("first", bytes[0])
      .setInt("last", bytes[69999])
      .setInt("len", bytes.length)
      .setBool("u64", randomU64() != 0)
      .set("k", k != null ? Value.str(k) : Value.null())
      .setInt("long", long != null ? long.length : -1)
      .set("missing", env("MISSING") == null ? Value.null() : Value.str("?"));
    return Decision.accept([new NewEvent("Services", [], data)]);
  }
  return Decision.accept([
    new NewEvent("Plain", ["t1"], Value.record().set("state", state)),
    new NewEvent("Rich", ["t1", "t2"])
      .withMetadata(Value.record().setInt("minutesAgo", 5))
      .withEncryptionScope("scope:1"),
  ]);
}

command(init, fold, decide);
