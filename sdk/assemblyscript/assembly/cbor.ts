// Reef AssemblyScript SDK: decoding CBOR (RFC 8949) of the ABI v1 subset (docs/abi.md
// "Values"); writer.ts encodes.
//
// Decoder checks exactly what the host's decoder checks
// (src/core/cbor.cc), with the same messages: definite lengths only, no byte strings, no tag
// but the actor ref's (1380271430, around 21 NanoID characters), no simple value but false /
// true / null, ints within i64, finite floats of any width, valid UTF-8, text record keys
// without duplicates, exactly one item, and the limits (depth, nodes, string bytes, size).
// Decoding never traps and never throws: errors come back as text.
import { Value, Kind, Limits, DecodeResult, isNanoIdChar, ACTOR_REF_LENGTH } from "./value";
import { ACTOR_TAG } from "./writer";
import { findInvalidUtf8, decodeText } from "./utf8";

/** RFC 8949 appendix D. */
function halfToFloat(h: u32): f64 {
  const exp = (h >> 10) & 0x1f;
  const mant = h & 0x3ff;
  let v: f64;
  if (exp == 0) v = <f64>mant * 5.960464477539063e-8; // 2^-24
  else if (exp != 31) v = <f64>(mant + 1024) * reinterpret<f64>(<u64>(exp + 1023 - 25) << 52); // * 2^(exp-25)
  else v = mant == 0 ? Infinity : NaN;
  return h & 0x8000 ? -v : v;
}

/** Decodes exactly one value from `bytes`; never throws. */
export function decodeBytes(bytes: Uint8Array, limits: Limits): DecodeResult {
  return decodeAt(bytes.dataStart, bytes.length, limits);
}

/** Decodes exactly one value from the `len` bytes at `ptr`; never throws. The result holds no
 * pointer into the bytes. */
export function decodeAt(ptr: usize, len: usize, limits: Limits): DecodeResult {
  const d = new Decoder(ptr, len, limits);
  const v = d.top();
  return new DecodeResult(v, d.err);
}

/** What the host passes in was checked by the host, against limits it may have been configured
 * with; only the depth is bounded (the decoder recurses, the engine allows 1,024 frames). */
const HOST_DEPTH = 200;

/** A checking CBOR reader over memory. Readers return null (or false) after setting `err`;
 * the first error wins. */
export class Decoder {
  p: usize;
  start: usize;
  end: usize;
  nodes: i64 = 0;
  textBytes: i64 = 0;
  err: string | null = null;
  // The last head read:
  at: usize = 0;
  major: u32 = 0;
  info: u32 = 0;
  arg: u64 = 0;
  // The last text span (textSpan, key):
  spanPtr: usize = 0;
  spanLen: usize = 0;

  // The limits:
  maxDepth: i32;
  maxNodes: i64;
  maxTextBytes: i64;
  maxSize: i64;

  /** A decoder of the `len` bytes at `ptr` within `limits`; null: what the host passes in,
   * within HOST_LIMITS. */
  constructor(ptr: usize, len: usize, limits: Limits | null) {
    this.p = ptr;
    this.start = ptr;
    this.end = ptr + len;
    if (limits != null) {
      this.maxDepth = limits.depth;
      this.maxNodes = limits.nodes;
      this.maxTextBytes = limits.stringBytes;
      this.maxSize = limits.encodedBytes;
    } else {
      this.maxDepth = HOST_DEPTH;
      this.maxNodes = i64.MAX_VALUE;
      this.maxTextBytes = i64.MAX_VALUE;
      this.maxSize = i64.MAX_VALUE;
    }
  }

  /** Starts over on the `len` bytes at `ptr`, with the same limits. */
  restart(ptr: usize, len: usize): void {
    this.p = ptr;
    this.start = ptr;
    this.end = ptr + len;
    this.nodes = 0;
    this.textBytes = 0;
    this.err = null;
  }

  /** Exactly one value (the whole input), or null with `err` set. */
  top(): Value | null {
    const len = this.end - this.start;
    if (<i64>len > this.maxSize) {
      this.err = "CBOR of " + len.toString() + " bytes exceeds limit max_cbor_bytes=" + this.maxSize.toString();
      return null;
    }
    const v = this.item(0);
    if (v != null && this.p != this.end) {
      this.error(this.p, (this.end - this.p).toString() + " trailing bytes after the data item (exactly one is allowed)");
      return null;
    }
    return v;
  }

  error(at: usize, what: string): void {
    if (this.err == null) this.err = "invalid CBOR at byte offset " + (at - this.start).toString() + ": " + what;
  }

  limitError(what: string, limit: i64): void {
    if (this.err == null) this.err = what + limit.toString();
  }

  /** Reads one head into at/major/info/arg. */
  head(): bool {
    const p = this.p;
    if (p >= this.end) {
      this.error(p, "unexpected end of input, expected a data item");
      return false;
    }
    const ib = <u32>load<u8>(p);
    this.at = p;
    this.major = ib >> 5;
    const info = ib & 31;
    this.info = info;
    if (info < 24) {
      this.arg = info;
      this.p = p + 1;
      return true;
    }
    if (info == 31) {
      this.error(p, this.major == 7
        ? "unexpected break stop code (indefinite lengths are not supported)"
        : "indefinite lengths are not supported");
      return false;
    }
    if (info > 27) {
      this.error(p, "reserved additional information value");
      return false;
    }
    const size = <usize>1 << (info - 24);
    if (this.end - (p + 1) < size) {
      this.error(p, "unexpected end of input inside a head");
      return false;
    }
    let arg: u64;
    if (size == 1) arg = load<u8>(p, 1);
    else if (size == 2) arg = bswap<u16>(load<u16>(p, 1));
    else if (size == 4) arg = bswap<u32>(load<u32>(p, 1));
    else arg = bswap<u64>(load<u64>(p, 1));
    this.arg = arg;
    this.p = p + 1 + size;
    return true;
  }

  /** After a text head: checks its length (and the string-bytes limit when `counts`) and
   * steps over the payload, leaving it in spanPtr / spanLen. Does not check its UTF-8. */
  textSpan(counts: bool): bool {
    const remaining = <u64>(this.end - this.p);
    if (this.arg > remaining) {
      this.error(this.at, "text string length " + this.arg.toString() + " exceeds the remaining " + remaining.toString() + " bytes of input");
      return false;
    }
    const len = <usize>this.arg;
    if (counts) {
      if (<i64>len > this.maxTextBytes - this.textBytes) {
        this.limitError("value string and key bytes exceed limit max_string_bytes=", this.maxTextBytes);
        return false;
      }
      this.textBytes += <i64>len;
    }
    this.spanPtr = this.p;
    this.spanLen = len;
    this.p += len;
    return true;
  }

  /** After a text head: its payload as a string, checked (see textSpan; and UTF-8). */
  textPayload(counts: bool): string | null {
    if (!this.textSpan(counts)) return null;
    const s = decodeText(this.spanPtr, this.spanLen);
    if (s == null) this.utf8Error();
    return s;
  }

  private utf8Error(): void {
    this.error(this.spanPtr + <usize>findInvalidUtf8(this.spanPtr, this.spanLen), "text string is not valid UTF-8");
  }

  /** Reads a record key into spanPtr / spanLen (checked) without making a string. */
  key(): bool {
    if (!this.head()) return false;
    if (this.major != 3) {
      this.error(this.at, "record key is not a text string");
      return false;
    }
    if (!this.textSpan(true)) return false;
    if (findInvalidUtf8(this.spanPtr, this.spanLen) < 0) return true;
    this.utf8Error();
    return false;
  }

  /** True when the last span holds exactly the characters of the ASCII string `s`. */
  spanIs(s: string): bool {
    const n = this.spanLen;
    if (<usize>s.length != n) return false;
    const p = this.spanPtr;
    for (let i: usize = 0; i < n; i++) {
      if (<u32>load<u8>(p + i) != <u32>s.charCodeAt(<i32>i)) return false;
    }
    return true;
  }

  private countNodes(n: u64): bool {
    if (n > <u64>(this.maxNodes - this.nodes)) {
      this.limitError("value node count exceeds limit max_nodes=", this.maxNodes);
      return false;
    }
    this.nodes += <i64>n;
    return true;
  }

  /** One item at `depth` (the root is at 0). */
  item(depth: i32): Value | null {
    if (!this.head()) return null;
    if (depth > this.maxDepth) {
      this.limitError("value depth exceeds limit max_depth=", this.maxDepth);
      return null;
    }
    if (!this.countNodes(1)) return null;
    const at = this.at;
    switch (this.major) {
      case 0:
      case 1: {
        if (this.arg > <u64>i64.MAX_VALUE) {
          this.error(at, "integer outside the int64 range");
          return null;
        }
        return Value.int(this.major == 0 ? <i64>this.arg : -1 - <i64>this.arg);
      }
      case 2:
        this.error(at, "byte strings are not supported (major type 2)");
        return null;
      case 3: {
        const s = this.textPayload(true);
        return s == null ? null : Value.str(s);
      }
      case 4: return this.list(depth);
      case 5: return this.record(depth);
      case 6: return this.actorRef();
      default: return this.simple();
    }
  }

  private list(depth: i32): Value | null {
    const n = this.arg;
    const remaining = <u64>(this.end - this.p);
    if (n > remaining) { // every item takes at least one byte
      this.error(this.at, "list length " + n.toString() + " exceeds the remaining " + remaining.toString() + " bytes of input");
      return null;
    }
    if (n > <u64>(this.maxNodes - this.nodes)) {
      this.limitError("value node count exceeds limit max_nodes=", this.maxNodes);
      return null;
    }
    const count = <i32>n;
    const items = new Array<Value>(count);
    for (let i = 0; i < count; i++) {
      const v = this.item(depth + 1);
      if (v == null) return null;
      unchecked((items[i] = v));
    }
    return Value.list(items);
  }

  private record(depth: i32): Value | null {
    const n = this.arg;
    const remaining = <u64>(this.end - this.p);
    if (n > remaining / 2) { // every key and every value take at least one byte
      this.error(this.at, "record length " + n.toString() + " exceeds what the remaining " + remaining.toString() + " bytes of input can hold");
      return null;
    }
    if (n > <u64>(this.maxNodes - this.nodes)) {
      this.limitError("value node count exceeds limit max_nodes=", this.maxNodes);
      return null;
    }
    const count = <i32>n;
    const keys = new Array<string>(count);
    const values = new Array<Value>(count);
    const seen = count > 16 ? new Set<string>() : null; // small records: a linear check
    for (let i = 0; i < count; i++) {
      if (!this.head()) return null;
      const keyAt = this.at;
      if (this.major != 3) {
        this.error(keyAt, "record key is not a text string");
        return null;
      }
      const key = this.textPayload(true);
      if (key == null) return null;
      const v = this.item(depth + 1);
      if (v == null) return null;
      let duplicate = false;
      if (seen != null) {
        duplicate = seen.has(key);
        seen.add(key);
      } else {
        for (let k = 0; k < i; k++) if (unchecked(keys[k]) == key) duplicate = true;
      }
      if (duplicate) {
        this.error(keyAt, "duplicate record key");
        return null;
      }
      unchecked((keys[i] = key));
      unchecked((values[i] = v));
    }
    const r = new Value(Kind.Record);
    r._keys = keys;
    r._items = values;
    return r;
  }

  private actorRef(): Value | null {
    if (this.arg != ACTOR_TAG) {
      this.error(this.at, "unsupported tag " + this.arg.toString() + " (only 1380271430, actor ref, is allowed)");
      return null;
    }
    if (!this.head()) return null;
    if (this.major != 3) {
      this.error(this.at, "actor ref tag must wrap a text string");
      return null;
    }
    const innerAt = this.at;
    if (!this.textSpan(false)) return null;
    const p = this.spanPtr, n = this.spanLen;
    let valid = n == <usize>ACTOR_REF_LENGTH;
    for (let i: usize = 0; valid && i < n; i++) valid = isNanoIdChar(load<u8>(p + i));
    if (!valid) {
      this.error(innerAt, "an actor ref must be 21 characters of A-Za-z0-9_-");
      return null;
    }
    const v = new Value(Kind.Actor);
    v._text = decodeText(p, n)!; // ASCII
    return v;
  }

  private simple(): Value | null {
    const info = this.info;
    if (info == 20) return Value.bool(false);
    if (info == 21) return Value.bool(true);
    if (info == 22) return Value.null();
    let f: f64;
    if (info == 25) f = halfToFloat(<u32>this.arg);
    else if (info == 26) f = <f64>reinterpret<f32>(<u32>this.arg);
    else if (info == 27) f = reinterpret<f64>(this.arg);
    else {
      this.error(this.at, "simple value " + this.arg.toString() + " is not supported (only false, true and null)");
      return null;
    }
    if (!isFinite(f)) {
      this.error(this.at, "NaN and infinities are not allowed");
      return null;
    }
    return Value.float(f);
  }
}
