// Reef AssemblyScript SDK: memory across calls, the inputs and results of an export call,
// failing, and the abort handler that turns every thrown Error into the `fail` import.
//
// Memory and the AssemblyScript runtime (asc --runtime). The host calls the export
// `reef_alloc(len)` exactly once before every export call, and from then on the guest may
// reuse all memory of the previous call (docs/abi.md). Actor and command instances may be
// reset to their initial memory between calls, but projector and effect instances are not:
// one instance handles thousands of events, so memory must not grow per call. The SDK's
// reef_alloc therefore frees everything the previous call allocated:
//
//   - stub (the default of sdk/assemblyscript/build.mjs, and the recommended one): a bump
//     allocator, the cheapest per allocation (no free lists, no collector, no shadow stack).
//     The first reef_alloc notes where the heap ends after the module's start function (so
//     globals initialised at the top level, like `const TYPES = ["A", "B"]`, are kept), and
//     every later reef_alloc moves the bump pointer back there: a call's memory costs
//     nothing to free, exactly like the C SDK's arena. The rule of the ABI becomes a hard
//     one: objects created during a call are gone when the next call starts, so never keep
//     one in a global (top-level globals keep their start-time values; do not grow them).
//   - minimal: TLSF with a mark-and-sweep collector that never runs by itself; reef_alloc runs
//     it (__collect) when no call is on the stack, so objects kept in globals survive. Each
//     allocation and the collection cost more instructions, and the collection counts
//     against reef_alloc's own budget (1,000,000 instructions for modules).
//   - incremental: as minimal, plus a shadow stack on every call; the slowest. Works too.
//
// tests/sdk.test.mjs runs 5,000 events through a projector under stub and minimal and checks that
// memory stays bounded.
//
// No objects at start: the SDK makes no object in a global initialiser. asc may compile such
// an initialiser (when a function uses the global) into the start function before the stub
// runtime's own setup, and the object then lands at address 0. Limits.ACTOR is a getter, the
// decoder of host inputs is made by each reef_alloc, and a test checks the start functions.
import { reef_fail } from "./host";
import { Value } from "./value";
import { Decoder } from "./cbor";
import { Writer } from "./writer";

/** Size of the stub runtime's block header (~lib/rt/common BLOCK_OVERHEAD). */
const BLOCK_OVERHEAD: usize = 4;
/** Payload the stub runtime gives a 0-byte block: blocks come in 16-byte granules. */
const EMPTY_BLOCK: usize = 12;
/** Largest input buffer reef_alloc hands out; larger requests get 0 (out of memory). */
const MAX_INPUT: u32 = (1 << 30) - 64;

/** stub: a 0-byte block allocated right after the start function's objects; 0 before the
 * first call. */
let callMark: usize = 0;
/** minimal / incremental: the current call's input buffer, kept alive until the next call. */
let inputBuffer: ArrayBuffer | null = null;

/** The decoder of what the host passes in during this call (made by beginCall: objects made
 * at start or in an earlier call cannot be used, see above). */
let hostDecoder: Decoder | null = null;

/** What the export reef_alloc does: frees the previous call's memory, then returns `len`
 * writable bytes for the host's inputs, or 0 when they cannot be had. */
export function beginCall(len: i32): usize {
  const buf = newCall(len);
  hostDecoder = new Decoder(0, 0, null);
  return buf;
}

function newCall(len: i32): usize {
  failing = false;
  if (ASC_RUNTIME == 0) { // stub
    if (callMark == 0) {
      callMark = __alloc(0);
    } else {
      // Make the mark block reach the end of the heap, then free it: the stub frees the last
      // block by moving its bump pointer to the block's start. Then take the mark again.
      const top = __alloc(0);
      store<u32>(callMark - BLOCK_OVERHEAD, <u32>(top + EMPTY_BLOCK - callMark));
      __free(callMark);
      callMark = __alloc(0);
    }
    if (<u32>len > MAX_INPUT) return 0;
    // The stub allocator traps when memory cannot grow; reef_alloc answers 0 instead (docs/abi.md
    // "One invocation"), so grow it here first (the mark is the top of the heap; 64 bytes cover
    // the block's header and alignment).
    const need = callMark + <usize><u32>len + 64;
    const have = (<usize>memory.size()) << 16;
    if (need > have && memory.grow(<i32>((need - have + 0xffff) >> 16)) < 0) return 0;
    return __alloc(<usize><u32>len);
  }
  inputBuffer = null;
  __collect();
  if (<u32>len > MAX_INPUT) return 0;
  const buf = new ArrayBuffer(len);
  inputBuffer = buf;
  return changetype<usize>(buf);
}

/** A buffer as the i64 result of an export: ptr | len << 32. */
// @ts-ignore: decorator
@inline
export function pack(ptr: usize, len: i32): i64 {
  return <i64>(<u64>ptr | (<u64><u32>len << 32));
}

/** Encodes `v` and packs its buffer as an export's result. Throws when `v` cannot be encoded
 * (a string with a lone surrogate, a list that contains itself). */
export function packValue(v: Value): i64 {
  const w = new Writer(64);
  w.value(v);
  return pack(w.ptr, w.len);
}

/** The call's decoder for what the host passed at (ptr, len). Use it only for reads that run
 * no user code while it is in use. */
export function hostDecoderAt(ptr: usize, len: usize): Decoder {
  const d = hostDecoder;
  if (d == null) return new Decoder(ptr, len, null);
  d.restart(ptr, len);
  return d;
}

/** Decodes what the host passed at (ptr, len): an input, a call's reply, SQL rows. Fails the
 * call, naming `what`, when it is no valid value (the host checks them: this means a bug). */
export function input(ptr: usize, len: usize, what: string): Value {
  const d = hostDecoderAt(ptr, len);
  const v = d.top();
  if (v == null) {
    fail("reef: the " + what + " from the host is no valid value: " + d.err!);
    return Value.null();
  }
  return v;
}

/** Ends the call as a failure with `reason` (whole, as UTF-8): nothing commits, no send is
 * delivered. Never returns. */
export function fail(reason: string): void {
  failing = true;
  const b = String.UTF8.encode(reason, false, String.UTF8.ErrorMode.REPLACE);
  reef_fail(changetype<usize>(b), <usize>b.byteLength);
  unreachable();
}

let failing = false;

/** Where `throw`, failed assertions and runtime errors (an index out of range, ...) go: asc
 * --use abort=reef_abort (build.mjs passes it). Fails the call with the message and where it
 * was raised: "message (file.ts:12:5)". */
// @ts-ignore: decorator
@global
export function reef_abort(message: string | null = null, fileName: string | null = null, line: u32 = 0, column: u32 = 0): void {
  if (failing) failAscii("reef: error while failing (out of memory?)");
  failing = true;
  let reason = message != null ? message : "abort";
  if (fileName != null) reason += " (" + fileName + ":" + line.toString() + ":" + column.toString() + ")";
  fail(reason);
}

/** Scratch for failAscii: no allocation, for when allocating failed. */
const SCRATCH: usize = memory.data(128);

/** fail() for an ASCII literal of at most 128 characters, without allocating. */
function failAscii(reason: string): void {
  const n = min(reason.length, 128);
  for (let i = 0; i < n; i++) store<u8>(SCRATCH + i, <u8>reason.charCodeAt(i));
  reef_fail(SCRATCH, n);
  unreachable();
}
