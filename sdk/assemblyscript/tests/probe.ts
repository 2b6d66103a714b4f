// Test actor for the SDK's unit tests (tests/sdk.test.mjs): every actor function behind an op
// of its message, a shutdown hook, a further handler for a program's unit, and raw exports
// that decode and encode values.
import {
  Value, ActorRef, Limits, actor, onShutdown, runHandler, send, sendFrom, reply, call, self, log,
  fail, Level,
} from "../assembly";
export * from "../assembly/exports/actor";
export * from "../assembly/exports/shutdown";

function handle(state: Value, sender: ActorRef | null, message: Value): Value {
  const op = message.getString("op");
  if (op == "echo") return message.get("value");
  if (op == "state") return state;
  if (op == "sender") return sender == null ? Value.null() : Value.actor(sender);
  if (op == "send") {
    send(message.getActor("target"), message.get("value"));
    return state;
  }
  if (op == "send_from") {
    const from = message.get("sender");
    sendFrom(from.isNull() ? null : from.asActor(), message.getActor("target"), message.get("value"));
    return state;
  }
  if (op == "reply") return Value.bool(reply(sender, message.get("value")));
  if (op == "call") {
    const r = call(message.getActor("target"), message.get("value"), <i32>message.getInt("timeout"));
    const out = Value.record().setBool("ok", r.ok).setString("error", r.errorText()).setInt("code", r.error);
    const replied = r.reply;
    return out.set("reply", replied != null ? replied : Value.null());
  }
  if (op == "call_value") {
    return call(message.getActor("target"), message.get("value"), 1000).value();
  }
  if (op == "self") return Value.actor(self());
  if (op == "log") return Value.bool(log.at(<Level>message.getInt("level"), message.getString("text")));
  if (op == "levels") {
    log.trace("t"); log.debug("d"); log.info("i"); log.warn("w"); log.error("e"); log.fatal("f");
    return state;
  }
  if (op == "throw") throw new Error(message.getString("text"));
  if (op == "fail") {
    fail(message.getString("text"));
    return state;
  }
  if (op == "get") return message.get("record").get(message.getString("key"));
  if (op == "get_int") return Value.int(message.get("record").getInt(message.getString("key")));
  if (op == "as_int") return Value.int(message.get("value").asInt());
  if (op == "at") return message.get("value").at(<i32>message.getInt("index"));
  if (op == "nan") return Value.float(NaN);
  if (op == "bad_ref") return Value.actor(new ActorRef("not a ref"));
  if (op == "surrogate") return Value.str(String.fromCharCode(0xd800));
  if (op == "cycle") {
    const list = Value.list();
    list.push(list);
    return list;
  }
  if (op == "to_string") return Value.str(message.get("value").toString());
  if (op == "equals") return Value.bool(message.get("a").equals(message.get("b")));
  if (op == "build") {
    const r = Value.record()
      .setInt("a", 1)
      .setString("b", "two")
      .setInt("a", 3) // replaces, keeps its place
      .setFloat("f", 1.5)
      .setBool("t", true)
      .set("n", Value.null())
      .set("l", Value.list([Value.int(-1), Value.strings(["x", "é"])]).push(Value.float(0.1)))
      .set("r", Value.actor(new ActorRef("V1StGXR8_Z5jdHi6B-myT")));
    return Value.list([r, Value.int(r.length), Value.strings(r.keys()), Value.bool(r.has("b")), Value.bool(r.has("z"))]);
  }
  if (op == "keys") {
    const rec = message.get("value");
    const out = Value.list();
    for (let i = 0; i < rec.length; i++) out.push(Value.str(rec.keyAt(i))).push(rec.at(i));
    return out;
  }
  if (op == "kinds") {
    const items = message.getList("value");
    const out = Value.list();
    for (let i = 0; i < items.length; i++) out.push(Value.str(items[i].kindName()));
    return out;
  }
  throw new Error("probe: unknown op " + op);
}

actor(handle);
onShutdown((state: Value): Value => Value.record().set("stopped", state));

/** A further handler, as a program's unit names it: replies {"unit": message}. */
export function probe_unit(sp: i32, sl: i32, fp: i32, fl: i32, mp: i32, ml: i32): i64 {
  return runHandler((state: Value, sender: ActorRef | null, message: Value): Value => {
    reply(sender, Value.record().set("unit", message));
    return Value.int(state.asInt() + 1);
  }, sp, sl, fp, fl, mp, ml);
}

// ---- Raw exports: decode and encode -----------------------------------------------------

let result: Uint8Array = new Uint8Array(0);

/** Decodes the bytes the host placed (reef_alloc) with the actor (0) or module (1) limits:
 * 0 and the value re-encoded in probe_result, or 1 and the error text in probe_result. */
export function probe_decode(ptr: i32, len: i32, kind: i32): i32 {
  const bytes = new Uint8Array(len);
  memory.copy(bytes.dataStart, <usize>ptr, <usize>len);
  const r = Value.tryDecode(bytes, kind == 0 ? Limits.ACTOR : Limits.MODULE);
  const v = r.value;
  if (v != null) {
    result = v.encode();
    return 0;
  }
  result = Uint8Array.wrap(String.UTF8.encode(r.error!));
  return 1;
}

/** The buffer of the last probe_* call, packed. */
export function probe_result(): i64 {
  return <i64>(<u64>result.dataStart | (<u64>result.length << 32));
}

/** Encodes a float: the shortest exact width. */
export function probe_float(f: f64): i64 {
  result = Value.float(f).encode();
  return probe_result();
}

/** Encodes an int: the shortest head. */
export function probe_int(i: i64): i64 {
  result = Value.int(i).encode();
  return probe_result();
}
