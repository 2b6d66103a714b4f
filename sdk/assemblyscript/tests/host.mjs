// A JavaScript host for the SDK's tests: CBOR for the ABI v1 subset and every import of
// module "reef" (docs/abi.md), played in Node, independently of the engine in src/wasm.
//
// JS model of values: null, boolean, BigInt (int; plain Numbers are encoded as ints too),
// Float (float), string, Array (list), plain object (record), Ref (actor ref).
import { readFileSync } from 'node:fs';
import assert from 'node:assert/strict';

export class Float { constructor(v) { this.v = v; } }
export class Ref { constructor(id) { this.id = id; } }
export const ACTOR_TAG = 1380271430;

function head(major, arg) {
  arg = BigInt(arg);
  const mt = major << 5;
  if (arg < 24n) return [mt | Number(arg)];
  for (const [max, info, n] of [[0xffn, 24, 1], [0xffffn, 25, 2], [0xffffffffn, 26, 4], [(1n << 64n) - 1n, 27, 8]]) {
    if (arg <= max) {
      const out = [mt | info];
      for (let i = n - 1; i >= 0; i--) out.push(Number((arg >> BigInt(8 * i)) & 0xffn));
      return out;
    }
  }
  throw new Error('argument too large');
}

/** The deterministic float encoding: the shortest of half, single, double that keeps v. */
function floatBytes(v) {
  const dv = new DataView(new ArrayBuffer(8));
  dv.setFloat32(0, v);
  if (dv.getFloat32(0) === v || Number.isNaN(v)) {
    const h = toHalf(v);
    if (h !== null) return [0xf9, h >> 8, h & 0xff];
    return [0xfa, ...new Uint8Array(dv.buffer, 0, 4)];
  }
  dv.setFloat64(0, v);
  return [0xfb, ...new Uint8Array(dv.buffer)];
}

/** Half-precision bits when they keep v exactly, else null. */
function toHalf(v) {
  for (let bits = 0; bits < 0x10000; bits++) {
    if ((bits & 0x7c00) === 0x7c00) continue;
    if (Object.is(half(bits), v)) return bits;
  }
  return null;
}

export function half(bits) {
  const exp = (bits >> 10) & 0x1f, mant = bits & 0x3ff;
  const v = exp === 0 ? mant * 2 ** -24 : exp === 31 ? (mant ? NaN : Infinity) : (mant + 1024) * 2 ** (exp - 25);
  return bits & 0x8000 ? -v : v;
}

export function encode(v) {
  const out = [];
  const put = (x) => {
    if (x === null) out.push(0xf6);
    else if (x === false) out.push(0xf4);
    else if (x === true) out.push(0xf5);
    else if (typeof x === 'number' || typeof x === 'bigint') {
      const b = BigInt(x);
      out.push(...(b >= 0n ? head(0, b) : head(1, -1n - b)));
    } else if (x instanceof Float) out.push(...floatBytes(x.v));
    else if (typeof x === 'string') {
      const bytes = new TextEncoder().encode(x);
      out.push(...head(3, bytes.length));
      for (const b of bytes) out.push(b);
    } else if (x instanceof Ref) {
      out.push(...head(6, ACTOR_TAG));
      put(x.id);
    } else if (x instanceof Uint8Array) {
      for (const b of x) out.push(b); // raw CBOR, inserted as is
    } else if (Array.isArray(x)) {
      out.push(...head(4, x.length));
      x.forEach(put);
    } else {
      const keys = Object.keys(x);
      out.push(...head(5, keys.length));
      for (const k of keys) { put(k); put(x[k]); }
    }
  };
  put(v);
  return Uint8Array.from(out);
}

export function decode(bytes) {
  let i = 0;
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const need = (n) => { if (i + n > bytes.length) throw new Error('truncated CBOR'); };
  const arg = (info) => {
    if (info < 24) return BigInt(info);
    const n = { 24: 1, 25: 2, 26: 4, 27: 8 }[info];
    if (!n) throw new Error(`bad additional info ${info}`);
    need(n);
    let v = 0n;
    for (let k = 0; k < n; k++) v = (v << 8n) | BigInt(bytes[i + k]);
    i += n;
    return v;
  };
  const item = () => {
    need(1);
    const ib = bytes[i++];
    const major = ib >> 5, info = ib & 31;
    if (major === 7) {
      if (info === 20) return false;
      if (info === 21) return true;
      if (info === 22) return null;
      const n = { 25: 2, 26: 4, 27: 8 }[info];
      if (!n) throw new Error(`bad simple value ${info}`);
      need(n);
      const v = n === 2 ? half(dv.getUint16(i)) : n === 4 ? dv.getFloat32(i) : dv.getFloat64(i);
      i += n;
      return new Float(v);
    }
    const a = arg(info);
    switch (major) {
      case 0: return a;
      case 1: return -1n - a;
      case 3: { need(Number(a)); const s = new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(i, i + Number(a))); i += Number(a); return s; }
      case 4: return Array.from({ length: Number(a) }, item);
      case 5: { const o = {}; for (let k = 0; k < Number(a); k++) { const key = item(); if (typeof key !== 'string' || key in o) throw new Error('bad key'); o[key] = item(); } return o; }
      case 6: { if (a !== BigInt(ACTOR_TAG)) throw new Error('unknown tag'); const id = item(); if (typeof id !== 'string' || id.length !== 21) throw new Error('bad ref'); return new Ref(id); }
      default: throw new Error(`unsupported major type ${major}`);
    }
  };
  const v = item();
  if (i !== bytes.length) throw new Error('trailing bytes');
  return v;
}

export const hex = (s) => Uint8Array.from(s.replace(/\s+/g, '').match(/../g) ?? [], (h) => parseInt(h, 16));
export const toHex = (b) => Buffer.from(b).toString('hex');

/** The guest ended the call through reef.fail. */
export class Failed extends Error {
  constructor(reason) { super(`guest failed: ${reason}`); this.reason = reason; }
}

export const SELF = 'SELFselfSELFselfSELF0';

/** One instance of a guest module with a JS host around it. Options: env (object), sql
 * (function (sql, params, query) -> rows changed or rows), call (function (target, msg,
 * timeout) -> reply value or a negative code), now (ms). */
export class Guest {
  constructor(path, options = {}) {
    this.bytes = readFileSync(path);
    this.module = new WebAssembly.Module(this.bytes);
    this.options = options;
    this.reset();
  }

  reset() {
    const o = this.options;
    this.sends = [];
    this.logs = [];
    this.appends = [];
    this.sql = [];
    this.randomCalls = 0;
    let pendingReply = null;
    const text = (p, l) => new TextDecoder('utf-8', { fatal: true }).decode(this.bytesAt(p, l));
    const value = (p, l) => { try { return decode(this.bytesAt(p, l)); } catch (e) { if (e.message === 'host_bounds') throw e; return undefined; } };
    const put = (bytes, p, cap) => { if (bytes.length <= cap) { this.bytesAt(p, cap); this.memory.set(bytes, p); } return bytes.length; };
    const reef = {
      send: (tp, tl, mp, ml) => {
        const target = value(tp, tl), msg = value(mp, ml);
        if (!(target instanceof Ref) || msg === undefined) return -1;
        if (this.sends.length >= (o.maxSends ?? 4096)) return -2;
        this.sends.push({ sender: new Ref(SELF), target, msg });
        return 0;
      },
      send_from: (sp, sl, tp, tl, mp, ml) => {
        const sender = value(sp, sl), target = value(tp, tl), msg = value(mp, ml);
        if (!(target instanceof Ref) || msg === undefined || !(sender === null || sender instanceof Ref)) return -1;
        this.sends.push({ sender, target, msg });
        return 0;
      },
      call: (tp, tl, mp, ml, timeout) => {
        const target = value(tp, tl), msg = value(mp, ml);
        if (!(target instanceof Ref) || msg === undefined || timeout < 1 || timeout > 600000) return -1;
        const r = o.call ? o.call(target, msg, timeout) : -3;
        if (typeof r === 'number' && r < 0) return r;
        pendingReply = encode(r);
        return pendingReply.length;
      },
      call_reply: (bp, cap) => (pendingReply ? put(pendingReply, bp, cap) : -1),
      log: (level, mp, ml) => {
        if (level < 0 || level > 5) return -1;
        if (ml > 512) return -2;
        let t;
        try { t = text(mp, ml); } catch { return -1; }
        this.logs.push({ level, text: t });
        return 0;
      },
      self: (bp, cap) => put(encode(new Ref(SELF)), bp, cap),
      fail: (mp, ml) => { throw new Failed(new TextDecoder().decode(this.bytesAt(mp, ml))); },
      now_ms: () => BigInt(o.now ?? 1764547200000),
      random: (bp, len) => {
        if (len > 65536) return -2;
        this.randomCalls++;
        const b = this.bytesAt(bp, len);
        for (let k = 0; k < len; k++) b[k] = (k * 7 + this.randomCalls) & 0xff;
        this.memory.set(b, bp);
        return 0;
      },
      env: (kp, kl, op, cap) => {
        const v = (o.env ?? {})[text(kp, kl)];
        return v === undefined ? -6 : put(new TextEncoder().encode(v), op, cap);
      },
      sql_exec: (sp, sl, pp, pl) => {
        const sql = text(sp, sl), params = value(pp, pl);
        this.sql.push({ sql, params });
        return BigInt(o.sql ? o.sql(sql, params, false) : 0);
      },
      sql_query: (sp, sl, pp, pl, op, cap) => {
        const sql = text(sp, sl), params = value(pp, pl);
        this.sql.push({ sql, params });
        return put(encode(o.sql ? o.sql(sql, params, true) : []), op, cap);
      },
      append: (ep, el) => {
        const events = value(ep, el);
        if (!Array.isArray(events)) throw new Error('append: not a list');
        this.appends.push(...events);
        return BigInt(100 + this.appends.length);
      },
    };
    this.instance = new WebAssembly.Instance(this.module, { reef });
    this.exports = this.instance.exports;
  }

  get memory() { return new Uint8Array(this.exports.memory.buffer); }

  bytesAt(ptr, len) {
    const m = this.memory;
    if (ptr < 0 || len < 0 || ptr + len > m.length) throw new Error('host_bounds');
    return m.slice(ptr, ptr + len);
  }

  /** reef_alloc, copy the inputs (values or raw Uint8Array CBOR), call export `name`.
   * Returns the raw result (a number or BigInt); see call/value. */
  raw(name, inputs, ...extra) {
    const parts = inputs.map((v) => (v instanceof Uint8Array ? v : encode(v)));
    const total = parts.reduce((n, p) => n + p.length, 0);
    this.sends = []; this.logs = []; this.appends = []; this.sql = [];
    const ptr = this.exports.reef_alloc(total);
    assert.ok(ptr > 0, 'reef_alloc returned 0');
    const args = [];
    let at = ptr;
    for (const p of parts) { this.memory.set(p, at); args.push(at, p.length); at += p.length; }
    return this.exports[name](...args, ...extra);
  }

  /** The bytes of a packed (ptr | len << 32) result. */
  unpack(packed) {
    const ptr = Number(BigInt.asUintN(64, packed) & 0xffffffffn), len = Number(BigInt.asUintN(64, packed) >> 32n);
    return this.bytesAt(ptr, len);
  }

  /** Calls export `name` on `inputs` and decodes its packed result. */
  value(name, inputs, ...extra) {
    return decode(this.unpack(this.raw(name, inputs, ...extra)));
  }

  /** One actor invocation: { state, sends, logs }. */
  handle(state, sender, message, entry = 'reef_handle') {
    const r = this.value(entry, [state, sender, message]);
    return { state: r, sends: this.sends, logs: this.logs };
  }
}

/** The imports and exports of a wasm binary, with function signatures. */
export function signatures(bytes) {
  let i = 8;
  const u = () => { let r = 0, s = 0, b; do { b = bytes[i++]; r |= (b & 0x7f) << s; s += 7; } while (b & 0x80); return r >>> 0; };
  const name = () => { const n = u(); const s = new TextDecoder().decode(bytes.subarray(i, i + n)); i += n; return s; };
  const valtype = { 0x7f: 'i32', 0x7e: 'i64', 0x7d: 'f32', 0x7c: 'f64' };
  const types = [], imports = [], funcTypes = [], exports = [];
  while (i < bytes.length) {
    const id = bytes[i++], size = u(), end = i + size;
    if (id === 1) {
      for (let n = u(); n > 0; n--) { i++; const p = Array.from({ length: u() }, () => valtype[bytes[i++]]); const r = Array.from({ length: u() }, () => valtype[bytes[i++]]); types.push([p, r]); }
    } else if (id === 2) {
      for (let n = u(); n > 0; n--) { const module = name(), field = name(), kind = bytes[i++]; assert.equal(kind, 0, `import ${module}.${field} is not a function`); const t = u(); imports.push({ module, field, type: types[t] }); funcTypes.push(types[t]); }
    } else if (id === 3) {
      for (let n = u(); n > 0; n--) funcTypes.push(types[u()]);
    } else if (id === 7) {
      for (let n = u(); n > 0; n--) { const field = name(), kind = bytes[i++], idx = u(); exports.push({ field, kind, type: kind === 0 ? funcTypes[idx] : null }); }
    }
    i = end;
  }
  return { imports, exports };
}

/** Runs fn, expecting the guest to fail; returns the reason. */
export function expectFail(fn) {
  try { fn(); } catch (e) {
    if (e instanceof Failed) return e.reason;
    throw new Error(`expected a guest failure, got ${e.stack}`);
  }
  throw new Error('expected a guest failure, the call returned');
}
