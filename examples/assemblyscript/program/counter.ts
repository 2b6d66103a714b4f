// A program's counter unit in AssemblyScript: the same behaviour as examples/program/counter.c.
// The module has no default reef_handle; its handler is exported as "counter_handle", the name
// the unit's "handler" field gives in program.json.
//
// State: an integer (the manifest's initial_state is 0).
// Messages (records):
//   {"op": "add"}  -> state + 1, replies {"count": <new state>}
//   {"op": "get"}  -> state unchanged, replies {"count": <state>}
//   {"op": "fail"} -> fails the invocation (nothing commits; the instance is poisoned)
// Anything else (not a record, no text "op", an unknown op, a count that would overflow) is the
// caller's mistake: it replies {"error": "<why>"} and keeps its state. Replies go to the sender
// (the host's reply address when a client invokes the unit and waits: `reef invoke counter
// ...`); a message without a sender gets no reply.
//
// Build and deploy (from the repository root):
//   node sdk/assemblyscript/build.mjs examples/assemblyscript/program/counter.ts \
//     examples/assemblyscript/program/counter.wasm
//   build/reef deploy examples/assemblyscript/program
import { Value, ActorRef, runHandler, reply } from "../../../sdk/assemblyscript/assembly";
export * from "../../../sdk/assemblyscript/assembly/exports/unit";

/** Replies {"error": reason} and keeps the count. */
function refuse(sender: ActorRef | null, count: i64, reason: string): Value {
  reply(sender, Value.record().setString("error", reason));
  return Value.int(count);
}

function handle(state: Value, sender: ActorRef | null, message: Value): Value {
  // The state is the host's (initial_state in program.json): a wrong one is a deploy error.
  if (!state.isInt()) throw new Error(`counter: state must be an integer, got ${state.kindName()}`);
  const count = state.asInt();
  if (!message.isRecord()) {
    return refuse(sender, count,
      `counter: the message must be an object with a text field "op" (add, get or fail), not ${message.kindName()}`);
  }
  const op = message.field("op");
  if (op == null || !op.isString()) {
    return refuse(sender, count, "counter: the message needs a text field \"op\" (add, get or fail)");
  }
  const name = op.asString();
  if (name == "add") {
    if (count == i64.MAX_VALUE) return refuse(sender, count, `counter: ${count} + 1 would overflow`);
    reply(sender, Value.record().setInt("count", count + 1));
    return Value.int(count + 1);
  }
  if (name == "get") {
    reply(sender, Value.record().setInt("count", count));
    return Value.int(count);
  }
  if (name == "fail") throw new Error("counter: failed on request (op 'fail')");
  return refuse(sender, count, `counter: unknown op "${name}"; expected add, get or fail`);
}

/** The unit's handler (program.json: "handler": "counter_handle"). */
export function counter_handle(sp: i32, sl: i32, fp: i32, fl: i32, mp: i32, ml: i32): i64 {
  return runHandler(handle, sp, sl, fp, fl, mp, ml);
}
