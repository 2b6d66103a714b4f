// Reef AssemblyScript SDK: Reef's data model as one tagged class, Value (docs/abi.md "Values").
//
// A Value is null, a bool, an int (i64), a float (finite f64), a string, a list, a record
// (text keys, kept in insertion order; the host sorts them anyway) or an actor ref. Build one
// with the static constructors, read it with the typed accessors:
//
//   const msg = Value.record().set("op", Value.str("add")).set("value", Value.int(5));
//   const amount = input.getInt("amount");       // throws when missing or not an int
//   const owner = input.field("owner");          // Value | null, never throws
//
// Accessors that cannot answer throw an Error; AssemblyScript cannot catch it, so it ends the
// call through the `fail` import with the message (nothing commits). Check first (isInt(),
// field(), has()) where a bad value is the caller's mistake rather than the module's.
// Scalars are immutable; lists and records change in place (push, set).
import { decodeBytes } from "./cbor";
import { encodeValue } from "./writer";

/** The kind of a Value. */
export enum Kind {
  Null = 0,
  Bool = 1,
  Int = 2,
  Float = 3,
  Str = 4,
  List = 5,
  Record = 6,
  Actor = 7,
}

/** The name of a kind in messages: "null", "bool", "int", "float", "text", "list",
 * "record", "actor ref" (the C SDK's names). */
export function kindName(kind: Kind): string {
  switch (kind) {
    case Kind.Null: return "null";
    case Kind.Bool: return "bool";
    case Kind.Int: return "int";
    case Kind.Float: return "float";
    case Kind.Str: return "text";
    case Kind.List: return "list";
    case Kind.Record: return "record";
    default: return "actor ref";
  }
}

/** Length of an actor ref: 21 characters of the NanoID alphabet A-Za-z0-9_- . */
export const ACTOR_REF_LENGTH = 21;

/** An actor's address. Refs that begin with "__" are reply addresses (a caller waiting in
 * `call`, or a client invoking a unit); no actor has one. */
export class ActorRef {
  /** The 21 characters. */
  readonly id: string;

  /** Throws when `id` is not 21 characters of A-Za-z0-9_- . */
  constructor(id: string) {
    if (!trustedRef && !ActorRef.isValid(id)) {
      throw new Error("not an actor ref (21 characters of A-Za-z0-9_-): \"" + id + "\"");
    }
    this.id = id;
  }

  /** True when `id` is 21 characters of the NanoID alphabet. */
  static isValid(id: string): bool {
    if (id.length != ACTOR_REF_LENGTH) return false;
    const p = changetype<usize>(id);
    for (let i: usize = 0; i < <usize>ACTOR_REF_LENGTH; i++) {
      if (!isNanoIdChar(load<u16>(p + (i << 1)))) return false;
    }
    return true;
  }

  /** True for a reply address (a ref beginning with "__"). */
  isReplyAddress(): bool {
    return this.id.charCodeAt(0) == 0x5f && this.id.charCodeAt(1) == 0x5f;
  }

  equals(other: ActorRef): bool {
    return this.id == other.id;
  }

  toString(): string {
    return this.id;
  }
}

/** Set while refOf makes a ref of characters known to be valid. */
let trustedRef = false;

/** The ActorRef of `id`, which is known to be valid (an actor Value's). */
function refOf(id: string): ActorRef {
  trustedRef = true;
  const ref = new ActorRef(id);
  trustedRef = false;
  return ref;
}

/** True for a byte or code unit of A-Z a-z 0-9 _ - . */
// @ts-ignore: decorator
@inline
export function isNanoIdChar(c: u32): bool {
  // Bit c of the alphabet's 128-bit map: '-' and 0-9 in the low word; A-Z, _ and a-z in the high.
  const bits = c < 64 ? NANOID_LO : NANOID_HI;
  return c < 128 && <bool>((bits >> (<u64>c & 63)) & 1);
}
// @ts-ignore: decorator
@inline const NANOID_LO: u64 = (<u64>1 << 45) | (<u64>0x3ff << 48);
// @ts-ignore: decorator
@inline const NANOID_HI: u64 = (<u64>0x3ffffff << 1) | (<u64>1 << 31) | (<u64>0x3ffffff << 33);

/** Limits on one decoded value (docs/abi.md "Limits"). */
export class Limits {
  constructor(
    /** Deepest nesting; the root is at depth 0. */
    public depth: i32,
    /** Most values in one tree, the root included (record keys are not nodes). */
    public nodes: i64,
    /** Most UTF-8 bytes of all strings and record keys together (actor refs do not count). */
    public stringBytes: i64,
    /** Largest CBOR buffer, in bytes. */
    public encodedBytes: i64,
  ) {}

  /** The host's defaults for actors: 32, 4,096, 1 MiB, 4 MiB. */
  static get ACTOR(): Limits { return new Limits(32, 4096, 1 << 20, 4 << 20); }
  /** The limits of event-sourced modules (ModuleValueLimits): 72, 1,000,000, 32 MiB, 32 MiB. */
  static get MODULE(): Limits { return new Limits(72, 1000000, 32 << 20, 32 << 20); }
  // (Getters, not static objects: see "No objects at start" in runtime.ts.)
}

/** One value of Reef's data model. */
export class Value {
  /** What this value is. */
  readonly kind: Kind;
  // Internal storage, read through the accessors below (public only for the codec):
  /** bool (0 / 1), int, or the bits of a float. */
  _num: i64 = 0;
  /** string, or an actor ref's 21 characters. */
  _text: string = "";
  /** list items, or record values (parallel to _keys). */
  _items: Array<Value> | null = null;
  /** record keys. */
  _keys: Array<string> | null = null;

  /** Internal: use the static constructors. */
  constructor(kind: Kind) {
    this.kind = kind;
  }

  // ---- Constructors ------------------------------------------------------------------------

  static null(): Value { return new Value(Kind.Null); }
  static bool(b: bool): Value {
    const v = new Value(Kind.Bool);
    v._num = b ? 1 : 0;
    return v;
  }
  static int(i: i64): Value {
    const v = new Value(Kind.Int);
    v._num = i;
    return v;
  }
  /** Throws for NaN and the infinities, which Reef's data model has no place for. */
  static float(f: f64): Value {
    if (!isFinite(f)) throw new Error(isNaN(f) ? "a float must be finite, not NaN" : "a float must be finite, not an infinity");
    const v = new Value(Kind.Float);
    v._num = reinterpret<i64>(f);
    return v;
  }
  static str(s: string): Value {
    const v = new Value(Kind.Str);
    v._text = s;
    return v;
  }
  /** A list holding `items` (the array itself, not a copy). */
  static list(items: Array<Value> = []): Value {
    const v = new Value(Kind.List);
    v._items = items;
    return v;
  }
  /** An empty record; add fields with set(). */
  static record(): Value {
    const v = new Value(Kind.Record);
    v._items = [];
    v._keys = [];
    return v;
  }
  static actor(ref: ActorRef): Value {
    const v = new Value(Kind.Actor);
    v._text = ref.id;
    return v;
  }
  /** A list of strings. */
  static strings(items: Array<string>): Value {
    const out = new Array<Value>(items.length);
    for (let i = 0; i < items.length; i++) out[i] = Value.str(items[i]);
    return Value.list(out);
  }

  // ---- Kind tests --------------------------------------------------------------------------

  isNull(): bool { return this.kind == Kind.Null; }
  isBool(): bool { return this.kind == Kind.Bool; }
  isInt(): bool { return this.kind == Kind.Int; }
  isFloat(): bool { return this.kind == Kind.Float; }
  isString(): bool { return this.kind == Kind.Str; }
  isList(): bool { return this.kind == Kind.List; }
  isRecord(): bool { return this.kind == Kind.Record; }
  isActor(): bool { return this.kind == Kind.Actor; }
  /** "null", "bool", "int", "float", "text", "list", "record" or "actor ref". */
  kindName(): string { return kindName(this.kind); }

  // ---- Scalar accessors: throw "expected an int, got text" and the like ---------------------

  asBool(): bool { this.expect(Kind.Bool); return this._num != 0; }
  asInt(): i64 { this.expect(Kind.Int); return this._num; }
  asFloat(): f64 { this.expect(Kind.Float); return reinterpret<f64>(this._num); }
  /** An int or a float as f64 (an int beyond 2^53 is rounded). */
  asNumber(): f64 {
    if (this.kind == Kind.Int) return <f64>this._num;
    this.expect(Kind.Float);
    return reinterpret<f64>(this._num);
  }
  asString(): string { this.expect(Kind.Str); return this._text; }
  asActor(): ActorRef { this.expect(Kind.Actor); return refOf(this._text); }
  /** The list's own array (changes to it change the list). */
  asList(): Array<Value> { this.expect(Kind.List); return this._items!; }

  // ---- Lists and records ---------------------------------------------------------------------

  /** Items of a list, fields of a record; throws for other kinds. */
  get length(): i32 {
    if (this.kind != Kind.Record) this.expect(Kind.List);
    return this._items!.length;
  }
  /** The list item (or the record value) at `index`; throws when out of range. */
  at(index: i32): Value {
    const items = this.kind == Kind.Record ? this._items! : this.asList();
    if (<u32>index >= <u32>items.length) {
      throw new Error("index " + index.toString() + " out of range (length " + items.length.toString() + ")");
    }
    return unchecked(items[index]);
  }
  /** Appends to a list; returns the list. */
  push(item: Value): Value {
    this.asList().push(item);
    return this;
  }

  /** The record's field `key`, or null when it has none or this is no record. Never throws. */
  field(key: string): Value | null {
    if (this.kind != Kind.Record) return null;
    const keys = this._keys!;
    for (let i = 0, n = keys.length; i < n; i++) {
      if (sameString(unchecked(keys[i]), key)) return unchecked(this._items![i]);
    }
    return null;
  }
  /** True when this is a record with field `key`. */
  has(key: string): bool { return this.field(key) != null; }
  /** The record's field `key`; throws when this is no record or has no such field. */
  get(key: string): Value {
    this.expect(Kind.Record);
    const v = this.field(key);
    if (v == null) throw new Error("no field \"" + key + "\"");
    return v;
  }
  getBool(key: string): bool { return this.typedField(key, Kind.Bool)._num != 0; }
  getInt(key: string): i64 { return this.typedField(key, Kind.Int)._num; }
  getFloat(key: string): f64 { return reinterpret<f64>(this.typedField(key, Kind.Float)._num); }
  getString(key: string): string { return this.typedField(key, Kind.Str)._text; }
  getList(key: string): Array<Value> { return this.typedField(key, Kind.List)._items!; }
  getActor(key: string): ActorRef { return refOf(this.typedField(key, Kind.Actor)._text); }

  /** Sets the record's field `key` (replacing its value, keeping its place, when it exists);
   * returns the record, so calls chain. */
  set(key: string, value: Value): Value {
    this.expect(Kind.Record);
    const keys = this._keys!;
    for (let i = 0, n = keys.length; i < n; i++) {
      if (sameString(unchecked(keys[i]), key)) {
        unchecked((this._items![i] = value));
        return this;
      }
    }
    keys.push(key);
    this._items!.push(value);
    return this;
  }
  setInt(key: string, i: i64): Value { return this.set(key, Value.int(i)); }
  setFloat(key: string, f: f64): Value { return this.set(key, Value.float(f)); }
  setBool(key: string, b: bool): Value { return this.set(key, Value.bool(b)); }
  setString(key: string, s: string): Value { return this.set(key, Value.str(s)); }
  /** The record's keys, in order (a copy). */
  keys(): Array<string> { this.expect(Kind.Record); return this._keys!.slice(); }
  /** The record's key at `index` (0 .. length-1). */
  keyAt(index: i32): string {
    this.expect(Kind.Record);
    return this._keys![index];
  }

  // ---- Whole values ------------------------------------------------------------------------

  /** Deep equality; records compare as sets of fields (order does not matter), floats by value
   * (so 0.0 equals -0.0), an int never equals a float. */
  equals(other: Value): bool {
    if (this.kind != other.kind) return false;
    switch (this.kind) {
      case Kind.Null: return true;
      case Kind.Float: return reinterpret<f64>(this._num) == reinterpret<f64>(other._num);
      case Kind.Bool:
      case Kind.Int: return this._num == other._num;
      case Kind.Str:
      case Kind.Actor: return this._text == other._text;
      case Kind.List: {
        const a = this._items!, b = other._items!;
        if (a.length != b.length) return false;
        for (let i = 0; i < a.length; i++) if (!a[i].equals(b[i])) return false;
        return true;
      }
      default: {
        const keys = this._keys!;
        if (keys.length != other._keys!.length) return false;
        for (let i = 0; i < keys.length; i++) {
          const theirs = other.field(keys[i]);
          if (theirs == null || !this._items![i].equals(theirs)) return false;
        }
        return true;
      }
    }
  }

  /** The value as CBOR, in the deterministic encoding (shortest heads and floats). */
  encode(): Uint8Array { return encodeValue(this); }

  /** Decodes one CBOR value, checking it as the host does (see cbor.ts) against `limits`.
   * Throws an Error naming the problem; use tryDecode to get it instead. */
  static decode(bytes: Uint8Array, limits: Limits = Limits.ACTOR): Value {
    const r = decodeBytes(bytes, limits);
    if (r.error != null) throw new Error(r.error!);
    return r.value!;
  }
  /** Like decode, but returns the error instead of throwing. */
  static tryDecode(bytes: Uint8Array, limits: Limits = Limits.ACTOR): DecodeResult {
    return decodeBytes(bytes, limits);
  }

  /** JSON-like text for logs: {"op":"add","value":5}; actor refs as {"$actor":"..."}. */
  toString(): string {
    switch (this.kind) {
      case Kind.Null: return "null";
      case Kind.Bool: return this._num != 0 ? "true" : "false";
      case Kind.Int: return this._num.toString();
      case Kind.Float: return reinterpret<f64>(this._num).toString();
      case Kind.Str: return quote(this._text);
      case Kind.Actor: return "{\"$actor\":\"" + this._text + "\"}";
      case Kind.List: {
        const parts = new Array<string>(this._items!.length);
        for (let i = 0; i < parts.length; i++) parts[i] = this._items![i].toString();
        return "[" + parts.join(",") + "]";
      }
      default: {
        const parts = new Array<string>(this._keys!.length);
        for (let i = 0; i < parts.length; i++) {
          parts[i] = quote(this._keys![i]) + ":" + this._items![i].toString();
        }
        return "{" + parts.join(",") + "}";
      }
    }
  }

  // ---- Internals -------------------------------------------------------------------------

  private expect(kind: Kind): void {
    if (this.kind != kind) {
      throw new Error("expected " + article(kind) + kindName(kind) + ", got " + this.kindName());
    }
  }

  private typedField(key: string, kind: Kind): Value {
    const v = this.get(key);
    if (v.kind != kind) {
      throw new Error("field \"" + key + "\": expected " + article(kind) + kindName(kind) + ", got " + v.kindName());
    }
    return v;
  }
}

/** The outcome of Value.tryDecode: the value, or the error (then value is null). */
export class DecodeResult {
  constructor(public value: Value | null, public error: string | null) {}
}

/** a == b for two non-null strings, cheaper than String.__eq for short ones. */
// @ts-ignore: decorator
@inline
export function sameString(a: string, b: string): bool {
  const n = a.length;
  if (n != b.length) return false;
  const pa = changetype<usize>(a), pb = changetype<usize>(b);
  const bytes = <usize>n << 1;
  let i: usize = 0;
  for (; i + 8 <= bytes; i += 8) if (load<u64>(pa + i) != load<u64>(pb + i)) return false;
  for (; i < bytes; i += 2) if (load<u16>(pa + i) != load<u16>(pb + i)) return false;
  return true;
}

/** "an " before int and actor ref, "a " before the other kind names. */
function article(kind: Kind): string {
  return kind == Kind.Int || kind == Kind.Actor ? "an " : "a ";
}

/** `s` as a JSON string literal. */
export function quote(s: string): string {
  let out = "\"";
  let run = 0; // start of the characters not yet copied
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x20 && c != 0x22 && c != 0x5c) continue;
    out += s.substring(run, i);
    if (c == 0x22) out += "\\\"";
    else if (c == 0x5c) out += "\\\\";
    else if (c == 0x0a) out += "\\n";
    else out += "\\u00" + (c < 0x10 ? "0" : "1") + "0123456789abcdef".charAt(c & 15);
    run = i + 1;
  }
  return out + s.substring(run) + "\"";
}
