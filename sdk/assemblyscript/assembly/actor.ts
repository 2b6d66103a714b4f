// Reef AssemblyScript SDK: actors (docs/abi.md "Exports the guest provides (actor)") and the
// imports every guest may use: send, send_from, call / call_reply, self, log, fail.
//
// An actor is a handler (state, sender, message) -> new state:
//
//   import { Value, ActorRef, actor } from "reef-sdk";
//   export * from "reef-sdk/assembly/exports/actor";  // reef_abi_version, reef_alloc, reef_handle
//
//   function handle(state: Value, sender: ActorRef | null, message: Value): Value {
//     return Value.int(state.asInt() + 1);
//   }
//   actor(handle);
//
// A throw (or fail(reason)) ends the invocation as a failure: nothing commits, no send is
// delivered. Sends are queued and delivered only when the invocation commits; a call is sent
// at once and waits for the reply. Everything a handler sees or builds lives until the
// invocation ends (runtime.ts); committed state lives in the host, never in a global.
import { reef_send, reef_send_from, reef_call, reef_call_reply, reef_log, reef_self } from "./host";
import { Value, ActorRef, Kind } from "./value";
import { Writer } from "./writer";
import { fail, input, packValue } from "./runtime";

/** An actor's handler: the committed state, the sender (null for a message from the host: the
 * REPL, a client, the runtime) and the message; returns the new state. */
export type Handler = (state: Value, sender: ActorRef | null, message: Value) => Value;
/** A shutdown hook: the committed state -> the final state. */
export type ShutdownHook = (state: Value) => Value;

let defaultHandler: Handler | null = null;
let shutdownHook: ShutdownHook | null = null;

/** Makes `handler` the module's reef_handle. Call it once, at the top level of the entry file
 * (which also has `export * from "reef-sdk/assembly/exports/actor"`). */
export function actor(handler: Handler): void {
  defaultHandler = handler;
}

/** Makes `hook` the module's reef_on_shutdown, run once on a graceful stop (the entry file
 * also has `export * from "reef-sdk/assembly/exports/shutdown"`). */
export function onShutdown(hook: ShutdownHook): void {
  shutdownHook = hook;
}

/** Runs `handler` on the inputs of an export with reef_handle's signature and returns its
 * packed result. This is how a module exports further handlers for a program's units (the
 * export name is what the unit's "handler" field says):
 *
 *   export function counter_handle(sp: i32, sl: i32, fp: i32, fl: i32, mp: i32, ml: i32): i64 {
 *     return runHandler(handle, sp, sl, fp, fl, mp, ml);
 *   }
 */
export function runHandler(handler: Handler, sp: i32, sl: i32, fp: i32, fl: i32, mp: i32, ml: i32): i64 {
  const state = input(<usize>sp, <usize><u32>sl, "state");
  const from = input(<usize>fp, <usize><u32>fl, "sender");
  let sender: ActorRef | null = null;
  if (from.kind == Kind.Actor) sender = from.asActor();
  else if (from.kind != Kind.Null) fail("reef: the sender from the host is neither an actor ref nor null");
  const message = input(<usize>mp, <usize><u32>ml, "message");
  return packValue(handler(state, sender, message));
}

/** reef_handle (exports/actor.ts). */
export function handleDefault(sp: i32, sl: i32, fp: i32, fl: i32, mp: i32, ml: i32): i64 {
  const handler = defaultHandler;
  if (handler == null) {
    fail("reef: no handler: call actor(handle) at the top level of the module's entry file");
    return 0;
  }
  return runHandler(handler, sp, sl, fp, fl, mp, ml);
}

/** reef_on_shutdown (exports/shutdown.ts). */
export function shutdownDefault(sp: i32, sl: i32): i64 {
  const hook = shutdownHook;
  if (hook == null) {
    fail("reef: no shutdown hook: call onShutdown(hook) at the top level of the module's entry file");
    return 0;
  }
  return packValue(hook(input(<usize>sp, <usize><u32>sl, "state")));
}

// ---- Sends -------------------------------------------------------------------------------

/** An encoded actor ref: the 5-byte tag head, the 1-byte text head, 21 characters. */
const REF_CBOR_LENGTH: usize = 27;
/** Static buffers for the encoded target and sender refs of an import call, and CBOR null. */
const TARGET: usize = memory.data(32);
const SENDER: usize = memory.data(32);
const NULL_CBOR: usize = memory.data<u8>([0xf6]);

/** Encodes `ref` into the 27 bytes at `buf`; returns buf. */
function refCbor(ref: ActorRef, buf: usize): usize {
  store<u32>(buf, 0x4545_52da); // da 52 45 45: tag head, 4-byte argument ...
  store<u8>(buf, 0x46, 4);      // ... 46: "REEF" = 1380271430
  store<u8>(buf, 0x75, 5);      // text of 21 bytes
  const id = changetype<usize>(ref.id);
  for (let i: usize = 0; i < 21; i++) store<u8>(buf + 6 + i, <u8>load<u16>(id + (i << 1)));
  return buf;
}

/** The text of an import's error code. */
function codeText(rc: i32): string {
  if (rc == -1) return "invalid argument";
  if (rc == -2) return "limit exceeded (a value limit, or more than 4,096 sends in one transition)";
  return "error " + rc.toString();
}

/** Sends `message` to `target`, with this actor as the sender; delivered only if the
 * invocation commits (a target that is unknown, stopped, failed or full then fails the whole
 * transition). Throws when the host refuses it (a value limit, more than 4,096 sends). */
export function send(target: ActorRef, message: Value): void {
  const m = new Writer(64);
  m.value(message);
  const rc = reef_send(refCbor(target, TARGET), REF_CBOR_LENGTH, m.ptr, m.len);
  if (rc < 0) throw new Error("reef: send to " + target.id + " failed: " + codeText(rc));
}

/** Sends `message` to `target` with an explicit sender: an actor ref, or null to send it as
 * the host (forwarding a request, e.g. a caller's reply address). Throws as send does. */
export function sendFrom(sender: ActorRef | null, target: ActorRef, message: Value): void {
  const m = new Writer(64);
  m.value(message);
  let s = NULL_CBOR, sl: usize = 1;
  if (sender != null) {
    s = refCbor(sender, SENDER);
    sl = REF_CBOR_LENGTH;
  }
  const rc = reef_send_from(s, sl, refCbor(target, TARGET), REF_CBOR_LENGTH, m.ptr, m.len);
  if (rc < 0) throw new Error("reef: send to " + target.id + " failed: " + codeText(rc));
}

/** Replies `message` to the sender of the message being handled (a handler's `sender`).
 * Returns false, sending nothing, when the sender is null: a message from the host expects
 * no reply. Throws as send does. */
export function reply(sender: ActorRef | null, message: Value): bool {
  if (sender == null) return false;
  send(sender, message);
  return true;
}

// ---- Calls -------------------------------------------------------------------------------

/** Why a call gave no reply (the import's codes). */
export enum CallError {
  None = 0,
  /** The host refused the message or target, or the timeout is outside 1..600,000 ms. */
  Invalid = -1,
  /** A value limit. */
  Limit = -2,
  /** The target is unknown, stopped or failed, or its mailbox stayed full: not delivered. */
  Unavailable = -3,
  /** No reply within the timeout. */
  Timeout = -4,
  /** The callee failed, was killed or removed, or committed without replying. */
  NoReply = -5,
  /** The target waits, directly or through other calls, for this actor. */
  Cycle = -6,
}

/** The outcome of call(): the reply, or why there is none. */
export class CallResult {
  constructor(public error: CallError, public reply: Value | null) {}

  get ok(): bool { return this.error == CallError.None; }

  /** The reply; throws, naming the error, when the call failed. */
  value(): Value {
    if (this.error != CallError.None) throw new Error("reef: call failed: " + this.errorText());
    return this.reply!;
  }

  /** "ok", "unavailable", "timed out", "no reply", "call cycle", "invalid argument" or
   * "limit exceeded". */
  errorText(): string {
    switch (this.error) {
      case CallError.None: return "ok";
      case CallError.Invalid: return "invalid argument";
      case CallError.Limit: return "limit exceeded";
      case CallError.Unavailable: return "unavailable";
      case CallError.Timeout: return "timed out";
      case CallError.NoReply: return "no reply";
      default: return "call cycle";
    }
  }
}

/** Sends `message` to `target` now (not at commit: if this invocation later fails, the
 * callee has the message anyway) and waits at most `timeoutMs` (1..600,000) for the reply.
 * The callee answers with reply(sender, value). Never throws for the call's own outcomes:
 * check result.ok or use result.value(). */
export function call(target: ActorRef, message: Value, timeoutMs: i32): CallResult {
  if (timeoutMs < 1 || timeoutMs > 600000) return new CallResult(CallError.Invalid, null);
  const m = new Writer(64);
  m.value(message);
  const n = reef_call(refCbor(target, TARGET), REF_CBOR_LENGTH, m.ptr, m.len, timeoutMs);
  if (n < 0) return new CallResult(n >= -6 ? <CallError>n : CallError.Invalid, null);
  const buf = new ArrayBuffer(n);
  if (reef_call_reply(changetype<usize>(buf), <usize>n) != n) fail("reef: call_reply did not return the reply");
  return new CallResult(CallError.None, input(changetype<usize>(buf), <usize>n, "reply"));
}

/** This actor's ref. */
export function self(): ActorRef {
  const buf = new ArrayBuffer(64);
  const n = reef_self(changetype<usize>(buf), 64);
  const v = input(changetype<usize>(buf), n > 0 && n <= 64 ? <usize>n : 0, "actor ref of self");
  if (!v.isActor()) {
    fail("reef: self gave no actor ref");
    return new ActorRef("AAAAAAAAAAAAAAAAAAAAA");
  }
  return v.asActor();
}

// ---- Logs --------------------------------------------------------------------------------

/** Log levels of the log import. */
export enum Level {
  Trace = 0,
  Debug = 1,
  Info = 2,
  Warn = 3,
  Error = 4,
  Fatal = 5,
}

/** Longest log message the host takes, in UTF-8 bytes. */
export const LOG_MAX: i32 = 512;

/** Logging, e.g. log.info(`deposit of ${amount}`). Each function returns true when the message
 * was logged whole; a message over 512 bytes is logged as its first bytes (cut at a character
 * boundary) ending with " [cut: N bytes in all]", and the function returns false. */
export namespace log {
  export function at(level: Level, message: string): bool {
    const bytes = String.UTF8.encode(message, false, String.UTF8.ErrorMode.REPLACE);
    const n = bytes.byteLength;
    const p = changetype<usize>(bytes);
    if (n <= LOG_MAX) return reef_log(level, p, <usize>n) == 0;
    const marker = String.UTF8.encode(" [cut: " + n.toString() + " bytes in all]");
    let keep = LOG_MAX - marker.byteLength;
    while (keep > 0 && (load<u8>(p + <usize>keep) & 0xc0) == 0x80) keep--; // a character's start
    memory.copy(p + <usize>keep, changetype<usize>(marker), <usize>marker.byteLength);
    reef_log(level, p, <usize>(keep + marker.byteLength));
    return false;
  }
  export function trace(message: string): bool { return at(Level.Trace, message); }
  export function debug(message: string): bool { return at(Level.Debug, message); }
  export function info(message: string): bool { return at(Level.Info, message); }
  export function warn(message: string): bool { return at(Level.Warn, message); }
  export function error(message: string): bool { return at(Level.Error, message); }
  export function fatal(message: string): bool { return at(Level.Fatal, message); }
}
