// The counter actor of spec 001 in AssemblyScript: the same behaviour as
// examples/counter/counter.c.
//
// State: an integer.
// Messages (records):
//   {"op": "add",  "value": N}               -> state + N
//   {"op": "send", "value": N, "target": @A} -> sends {"op": "add", "value": N} to actor A;
//                                               state + 1
//   {"op": "get"}                            -> replies with the state to the sender (an actor,
//                                               or a caller); state unchanged
// Anything else fails the invocation with a reason (a thrown Error), so nothing commits.
//
// Build: node sdk/assemblyscript/build.mjs examples/assemblyscript/counter.ts counter.wasm
import { Value, ActorRef, actor, send, reply } from "../../sdk/assemblyscript/assembly";
export * from "../../sdk/assemblyscript/assembly/exports/actor";

function handle(state: Value, sender: ActorRef | null, message: Value): Value {
  if (!state.isInt()) throw new Error(`counter: state must be an integer, got ${state.kindName()}`);
  const count = state.asInt();
  const op = message.field("op");
  if (op == null || !op.isString()) {
    throw new Error("counter: message must be a record with a text field 'op' (add, send or get)");
  }
  const name = op.asString();
  if (name == "add") return Value.int(add(count, valueOf(message, name)));
  if (name == "send") {
    const value = valueOf(message, name);
    const target = message.field("target");
    if (target == null || !target.isActor()) {
      throw new Error("counter: op 'send' needs an actor ref field 'target'");
    }
    send(target.asActor(), Value.record().setString("op", "add").setInt("value", value));
    return Value.int(add(count, 1));
  }
  if (name == "get") {
    reply(sender, Value.int(count)); // a message from the host (sender null) gets no reply
    return Value.int(count);
  }
  throw new Error(`counter: unknown op '${name}'; expected add, send or get`);
}

/** The integer field "value", or a failure naming the op that needed it. */
function valueOf(message: Value, op: string): i64 {
  const value = message.field("value");
  if (value == null) throw new Error(`counter: op '${op}' needs an integer field 'value' (field not found)`);
  if (!value.isInt()) throw new Error(`counter: op '${op}' needs an integer field 'value' (wrong kind of value)`);
  return value.asInt();
}

/** count + value, failing on i64 overflow. */
function add(count: i64, value: i64): i64 {
  const sum = count + value;
  if ((sum ^ count) & (sum ^ value) & i64.MIN_VALUE) {
    throw new Error(`counter: ${count} + ${value} overflows int64`);
  }
  return sum;
}

actor(handle);
