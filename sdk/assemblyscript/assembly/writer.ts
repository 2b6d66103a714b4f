// Reef AssemblyScript SDK: encoding values as CBOR (RFC 8949) of the ABI v1 subset
// (docs/abi.md "Values"); cbor.ts decodes.
//
// Writer encodes deterministically, as the host does: shortest heads, the shortest float
// width that keeps the value exactly. Record keys go in the order they were set (the host
// sorts them; it accepts any order).
import { Value, Kind } from "./value";

/** The CBOR tag of an actor ref, "REEF". */
export const ACTOR_TAG: u64 = 1380271430;

/** Deepest value the Writer encodes; deeper means a list or record that contains itself. */
const MAX_ENCODE_DEPTH = 500;

/** A growable byte buffer that values are encoded into. */
export class Writer {
  buf: ArrayBuffer;
  len: i32 = 0;

  constructor(capacity: i32 = 64) {
    this.buf = new ArrayBuffer(capacity);
  }

  /** Address of the first byte (valid until the buffer grows or the call ends). */
  get ptr(): usize { return changetype<usize>(this.buf); }

  /** Makes room for `n` more bytes. */
  reserve(n: i32): void {
    const need = this.len + n;
    const cap = this.buf.byteLength;
    if (need <= cap) return;
    let grown = cap << 1;
    if (grown < need) grown = need;
    this.buf = changetype<ArrayBuffer>(__renew(changetype<usize>(this.buf), <usize>grown));
  }

  byte(b: u32): void {
    this.reserve(1);
    store<u8>(this.ptr + this.len, <u8>b);
    this.len++;
  }

  /** A head: major type and argument, in the shortest form. */
  head(major: u32, arg: u64): void {
    this.reserve(9);
    const p = this.ptr + this.len;
    const m = major << 5;
    if (arg < 24) {
      store<u8>(p, <u8>(m | <u32>arg));
      this.len += 1;
    } else if (arg <= 0xff) {
      store<u8>(p, <u8>(m | 24));
      store<u8>(p, <u8>arg, 1);
      this.len += 2;
    } else if (arg <= 0xffff) {
      store<u8>(p, <u8>(m | 25));
      store<u16>(p, bswap<u16>(<u16>arg), 1);
      this.len += 3;
    } else if (arg <= 0xffffffff) {
      store<u8>(p, <u8>(m | 26));
      store<u32>(p, bswap<u32>(<u32>arg), 1);
      this.len += 5;
    } else {
      store<u8>(p, <u8>(m | 27));
      store<u64>(p, bswap<u64>(arg), 1);
      this.len += 9;
    }
  }

  int(i: i64): void {
    if (i >= 0) this.head(0, <u64>i);
    else this.head(1, <u64>(-1 - i));
  }

  /** A text string. Throws for a string with a lone surrogate (not valid UTF-8). */
  text(s: string): void {
    const units = <usize>s.length;
    const src = changetype<usize>(s);
    let i: usize = 0; // ASCII (the usual case) in one pass, 4 characters at a time
    for (; i + 4 <= units; i += 4) if (load<u64>(src + (i << 1)) & 0xff80ff80ff80ff80) break;
    for (; i < units; i++) if (load<u16>(src + (i << 1)) >= 0x80) break;
    if (i == units) {
      this.head(3, <u64>units);
      this.reserve(<i32>units);
      const dst = this.ptr + <usize>this.len;
      for (i = 0; i + 4 <= units; i += 4) {
        const w = load<u64>(src + (i << 1));
        store<u32>(dst + i, <u32>(w & 0xff) | <u32>((w >> 8) & 0xff00) | <u32>((w >> 16) & 0xff0000) | <u32>((w >> 24) & 0xff000000));
      }
      for (; i < units; i++) store<u8>(dst + i, <u8>load<u16>(src + (i << 1)));
      this.len += <i32>units;
      return;
    }
    const n = String.UTF8.byteLength(s);
    this.head(3, <u64>n);
    this.reserve(n);
    String.UTF8.encodeUnsafe(changetype<usize>(s), s.length, this.ptr + this.len, false, String.UTF8.ErrorMode.ERROR);
    this.len += n;
  }

  /** A float in the shortest width that keeps it exactly. REQUIRES: finite. */
  float(f: f64): void {
    this.reserve(9);
    const p = this.ptr + this.len;
    const single = <f32>f;
    if (<f64>single == f) {
      const half = exactHalf(reinterpret<u32>(single));
      if (half >= 0) {
        store<u8>(p, 0xf9);
        store<u16>(p, bswap<u16>(<u16>half), 1);
        this.len += 3;
      } else {
        store<u8>(p, 0xfa);
        store<u32>(p, bswap<u32>(reinterpret<u32>(single)), 1);
        this.len += 5;
      }
    } else {
      store<u8>(p, 0xfb);
      store<u64>(p, bswap<u64>(reinterpret<u64>(f)), 1);
      this.len += 9;
    }
  }

  /** Any value. Throws for a string with a lone surrogate and for nesting deeper than 500. */
  value(v: Value, depth: i32 = 0): void {
    switch (v.kind) {
      case Kind.Null: this.byte(0xf6); break;
      case Kind.Bool: this.byte(v._num != 0 ? 0xf5 : 0xf4); break;
      case Kind.Int: this.int(v._num); break;
      case Kind.Float: this.float(reinterpret<f64>(v._num)); break;
      case Kind.Str: this.text(v._text); break;
      case Kind.Actor: {
        this.head(6, ACTOR_TAG);
        this.text(v._text);
        break;
      }
      default: {
        if (depth >= MAX_ENCODE_DEPTH) {
          throw new Error("value nested deeper than 500 levels (a list or record that contains itself?)");
        }
        const items = v._items!;
        const n = items.length;
        if (v.kind == Kind.List) {
          this.head(4, <u64>n);
          for (let i = 0; i < n; i++) this.value(unchecked(items[i]), depth + 1);
        } else {
          const keys = v._keys!;
          this.head(5, <u64>n);
          for (let i = 0; i < n; i++) {
            this.text(unchecked(keys[i]));
            this.value(unchecked(items[i]), depth + 1);
          }
        }
      }
    }
  }

  /** A list of strings. */
  strings(items: Array<string>): void {
    this.head(4, <u64>items.length);
    for (let i = 0; i < items.length; i++) this.text(unchecked(items[i]));
  }

  /** A copy of the bytes written. */
  toBytes(): Uint8Array {
    const out = new Uint8Array(this.len);
    memory.copy(out.dataStart, this.ptr, <usize>this.len);
    return out;
  }
}

/** The half-precision bits of the single-precision value `bits` when half keeps it exactly,
 * else -1 (RFC 8949 §4.2.1 preferred serialization). REQUIRES: finite. */
function exactHalf(bits: u32): i32 {
  const sign = <i32>((bits >> 16) & 0x8000);
  const exp = <i32>((bits >> 23) & 0xff);
  const mant = bits & 0x7fffff;
  if (exp == 0) return mant == 0 ? sign : -1; // zero; single subnormals are below half's range
  const e = exp - 127;
  if (e > 15 || e < -24) return -1;
  if (e >= -14) { // normal half: 10 mantissa bits
    if (mant & 0x1fff) return -1;
    return sign | ((e + 15) << 10) | <i32>(mant >> 13);
  }
  const full = mant | 0x800000; // subnormal half: (1.m * 2^e) / 2^-24 steps
  const shift = <u32>(-1 - e);   // 14 .. 23
  if (full & ((<u32>1 << shift) - 1)) return -1;
  return sign | <i32>(full >> shift);
}

/** Encodes `v` (see Writer.value). */
export function encodeValue(v: Value): Uint8Array {
  const w = new Writer();
  w.value(v);
  return w.toBytes();
}
