// Guest SDK tests: run the guests built from sdk/c and examples/ in Node 20 against a
// JavaScript host that implements the ABI v1 imports (docs/abi.md), independently of the
// engine in src/wasm.
//
// Usage: node sdk_test.mjs <guest-dir>   (the directory holding counter.wasm, hello.wasm,
// sdk_probe.wasm). Exits non-zero when any check fails.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import assert from 'node:assert/strict';

const guestDir = process.argv[2];
if (!guestDir) {
  console.error('usage: node sdk_test.mjs <guest-dir>');
  process.exit(2);
}

// ---- CBOR (RFC 8949) for the ABI v1 subset ------------------------------------------------
// JS model: null, boolean, BigInt or safe integer Number (int), Float (float), string, Array
// (list), plain object (record), Ref (actor ref).
class Float { constructor(v) { this.v = v; } }
class Ref { constructor(id) { this.id = id; } }
const ACTOR_TAG = 1380271430;

function head(major, arg) {
  arg = BigInt(arg);
  const mt = major << 5;
  if (arg < 24n) return [mt | Number(arg)];
  const widths = [[0xffn, 24, 1], [0xffffn, 25, 2], [0xffffffffn, 26, 4], [(1n << 64n) - 1n, 27, 8]];
  for (const [max, info, n] of widths) {
    if (arg <= max) {
      const out = [mt | info];
      for (let i = n - 1; i >= 0; i--) out.push(Number((arg >> BigInt(8 * i)) & 0xffn));
      return out;
    }
  }
  throw new Error('argument too large');
}

function encode(v) {
  const out = [];
  const put = (x) => {
    if (x === null) out.push(0xf6);
    else if (x === false) out.push(0xf4);
    else if (x === true) out.push(0xf5);
    else if (typeof x === 'number' || typeof x === 'bigint') {
      const b = BigInt(x);
      out.push(...(b >= 0n ? head(0, b) : head(1, -1n - b)));
    } else if (x instanceof Float) {
      const dv = new DataView(new ArrayBuffer(8));
      dv.setFloat64(0, x.v);
      out.push(0xfb, ...new Uint8Array(dv.buffer));
    } else if (typeof x === 'string') {
      const bytes = new TextEncoder().encode(x);
      out.push(...head(3, bytes.length));
      for (const b of bytes) out.push(b);
    } else if (x instanceof Ref) {
      out.push(...head(6, ACTOR_TAG));
      put(x.id);
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

function decode(bytes, { fatalUtf8 = true } = {}) {
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
      case 3: { need(Number(a)); const s = new TextDecoder('utf-8', { fatal: fatalUtf8 }).decode(bytes.subarray(i, i + Number(a))); i += Number(a); return s; }
      case 4: return Array.from({ length: Number(a) }, item);
      case 5: { const o = {}; for (let k = 0; k < Number(a); k++) { const key = item(); if (key in o) throw new Error('duplicate key'); o[key] = item(); } return o; }
      case 6: { if (a !== BigInt(ACTOR_TAG)) throw new Error('unknown tag'); const id = item(); if (typeof id !== 'string' || id.length !== 21) throw new Error('bad ref'); return new Ref(id); }
      default: throw new Error(`unsupported major type ${major}`);
    }
  };
  const v = item();
  if (i !== bytes.length) throw new Error('trailing bytes');
  return v;
}

function half(bits) {
  const exp = (bits >> 10) & 0x1f, mant = bits & 0x3ff;
  const v = exp === 0 ? mant * 2 ** -24 : exp === 31 ? (mant ? NaN : Infinity) : (mant + 1024) * 2 ** (exp - 25);
  return bits & 0x8000 ? -v : v;
}

const hex = (s) => Uint8Array.from(s.replace(/\s+/g, '').match(/../g) ?? [], (h) => parseInt(h, 16));

// ---- A JavaScript host for ABI v1 ---------------------------------------------------------
class Failed extends Error { constructor(reason) { super(`guest failed: ${reason}`); this.reason = reason; } }

const SELF = 'SELFselfSELFselfSELF0';
const IMPORT_TABLE = {
  send: [['i32', 'i32', 'i32', 'i32'], ['i32']],
  send_from: [['i32', 'i32', 'i32', 'i32', 'i32', 'i32'], ['i32']],
  log: [['i32', 'i32', 'i32'], ['i32']],
  self: [['i32', 'i32'], ['i32']],
  fail: [['i32', 'i32'], []],
};
const EXPORT_TABLE = {
  reef_abi_version: [[], ['i32']],
  reef_alloc: [['i32'], ['i32']],
  reef_handle: [['i32', 'i32', 'i32', 'i32', 'i32', 'i32'], ['i64']],
  reef_on_shutdown: [['i32', 'i32'], ['i64']],
};

class Guest {
  constructor(name) {
    this.bytes = readFileSync(join(guestDir, `${name}.wasm`));
    this.module = new WebAssembly.Module(this.bytes);
    this.sends = [];
    this.logs = [];
    const mem = () => new Uint8Array(this.instance.exports.memory.buffer);
    const bytesAt = (ptr, len) => {
      const m = mem();
      if (ptr < 0 || len < 0 || ptr + len > m.length) throw new Error('host_bounds');
      return m.slice(ptr, ptr + len);
    };
    const value = (ptr, len) => { try { return decode(bytesAt(ptr, len)); } catch (e) { if (e.message === 'host_bounds') throw e; return undefined; } };
    const reef = {
      send: (tp, tl, mp, ml) => {
        const target = value(tp, tl), msg = value(mp, ml);
        if (!(target instanceof Ref) || msg === undefined) return -1;
        this.sends.push({ sender: new Ref(SELF), target, msg });
        return 0;
      },
      send_from: (sp, sl, tp, tl, mp, ml) => {
        const sender = value(sp, sl), target = value(tp, tl), msg = value(mp, ml);
        if (!(target instanceof Ref) || msg === undefined || !(sender === null || sender instanceof Ref)) return -1;
        this.sends.push({ sender, target, msg });
        return 0;
      },
      log: (level, mp, ml) => {
        if (level < 0 || level > 5) return -1;
        if (ml > 512) return -2;
        let text;
        try { text = new TextDecoder('utf-8', { fatal: true }).decode(bytesAt(mp, ml)); } catch { return -1; }
        this.logs.push({ level, text });
        return 0;
      },
      self: (bp, cap) => {
        const enc = encode(new Ref(SELF));
        if (enc.length <= cap) { bytesAt(bp, cap); mem().set(enc, bp); }
        return enc.length;
      },
      fail: (mp, ml) => { throw new Failed(new TextDecoder().decode(bytesAt(mp, ml))); },
    };
    this.instance = new WebAssembly.Instance(this.module, { reef });
  }

  get memory() { return new Uint8Array(this.instance.exports.memory.buffer); }

  // One invocation: reef_alloc, copy the inputs, reef_handle (or the handler export `entry`,
  // as a program's unit names it), decode the new state.
  // Sends are returned only when the invocation commits, like the real host.
  handle(state, sender, message, { raw = false, entry = 'reef_handle' } = {}) {
    const parts = [state, sender, message].map((v) => (v instanceof Uint8Array ? v : encode(v)));
    const total = parts.reduce((n, p) => n + p.length, 0);
    this.sends = [];
    this.logs = [];
    const ptr = this.instance.exports.reef_alloc(total);
    assert.ok(ptr > 0, 'reef_alloc returned 0');
    const args = [];
    let at = ptr;
    for (const p of parts) { this.memory.set(p, at); args.push(at, p.length); at += p.length; }
    const packed = this.instance.exports[entry](...args);
    const outPtr = Number(packed & 0xffffffffn), outLen = Number(packed >> 32n);
    const bytes = this.memory.slice(outPtr, outPtr + outLen);
    assert.equal(bytes.length, outLen, 'returned state out of bounds');
    return { state: raw ? bytes : decode(bytes), sends: this.sends, logs: this.logs };
  }

  // Calls a probe export with `bytes` placed in a fresh arena buffer.
  probe(name, bytes, ...extra) {
    const ptr = this.instance.exports.reef_alloc(bytes.length);
    this.memory.set(bytes, ptr);
    return this.instance.exports[name](ptr, bytes.length, ...extra);
  }
}

// ---- Minimal wasm binary reader: import and export signatures ------------------------------
function signatures(bytes) {
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

// ---- Test runner ---------------------------------------------------------------------------
const results = [];
function test(name, fn) {
  try { fn(); results.push([name, null]); } catch (e) { results.push([name, e]); }
}
function expectFail(fn, pattern) {
  try { fn(); } catch (e) {
    if (e instanceof Failed) { assert.match(e.reason, pattern); return e.reason; }
    throw new Error(`expected a guest failure, got ${e}`);
  }
  throw new Error('expected a guest failure, the invocation committed');
}

const REF_A = 'V1StGXR8_Z5jdHi6B-myT';
const REF_B = 'abcdefghijklmnopqrstu';

// ABI surface ----------------------------------------------------------------------------------
for (const name of ['counter', 'hello', 'sdk_probe']) {
  test(`${name}: imports only module "reef" functions of the ABI table, with their signatures`, () => {
    const { imports } = signatures(readFileSync(join(guestDir, `${name}.wasm`)));
    for (const imp of imports) {
      assert.equal(imp.module, 'reef', `import ${imp.module}.${imp.field}`);
      assert.ok(imp.field in IMPORT_TABLE, `unknown import reef.${imp.field}`);
      assert.deepEqual(imp.type, IMPORT_TABLE[imp.field], `signature of reef.${imp.field}`);
    }
  });
  test(`${name}: exports memory and the actor entry points with ABI signatures`, () => {
    const { exports } = signatures(readFileSync(join(guestDir, `${name}.wasm`)));
    const byName = Object.fromEntries(exports.map((e) => [e.field, e]));
    assert.equal(byName.memory?.kind, 2, 'memory export');
    for (const req of ['reef_abi_version', 'reef_alloc', 'reef_handle']) assert.ok(req in byName, `missing ${req}`);
    for (const e of exports) {
      if (e.field in EXPORT_TABLE) assert.deepEqual(e.type, EXPORT_TABLE[e.field], `signature of ${e.field}`);
      else if (name !== 'sdk_probe') assert.equal(e.field, 'memory', `unexpected export ${e.field}`);
    }
    assert.equal('reef_on_shutdown' in byName, name === 'sdk_probe', 'reef_on_shutdown only with a hook');
  });
}

test('reef_abi_version returns 1', () => {
  assert.equal(new Guest('counter').instance.exports.reef_abi_version(), 1);
});

// Counter (spec 001) ----------------------------------------------------------------------------
test('counter: add 5 from 0 commits 5 and sends nothing', () => {
  const r = new Guest('counter').handle(0, null, { op: 'add', value: 5 });
  assert.equal(r.state, 5n);
  assert.equal(r.sends.length, 0);
});

test('counter: add accepts negative values and large states', () => {
  const g = new Guest('counter');
  assert.equal(g.handle(10, null, { op: 'add', value: -3 }).state, 7n);
  assert.equal(g.handle(2n ** 62n, new Ref(REF_B), { value: 1, op: 'add' }).state, 2n ** 62n + 1n);
});

test('counter: send from 0 commits 1 and sends {"op":"add","value":5} to the target', () => {
  const r = new Guest('counter').handle(0, null, { op: 'send', value: 5, target: new Ref(REF_A) });
  assert.equal(r.state, 1n);
  assert.equal(r.sends.length, 1);
  assert.deepEqual(r.sends[0].target, new Ref(REF_A));
  assert.deepEqual(r.sends[0].msg, { op: 'add', value: 5n });
  assert.deepEqual(r.sends[0].sender, new Ref(SELF));
});

test('counter: spec 001 walk-through (sender 0 -> 1, receiver 10 -> 15)', () => {
  const sender = new Guest('counter'), receiver = new Guest('counter');
  const s = sender.handle(0, null, { op: 'send', value: 5, target: new Ref(REF_B) });
  assert.equal(s.state, 1n);
  const [effect] = s.sends;
  const r = receiver.handle(10, effect.sender, effect.msg);
  assert.equal(r.state, 15n);
});

test('counter: unknown op fails with a reason naming it', () => {
  const reason = expectFail(() => new Guest('counter').handle(0, null, { op: 'mul', value: 2 }), /unknown op/);
  assert.equal(reason, "counter: unknown op 'mul'; expected add, send or get");
});

test('counter: malformed messages fail explicitly and send nothing', () => {
  const g = new Guest('counter');
  expectFail(() => g.handle(0, null, 7), /record with a text field 'op'/);
  expectFail(() => g.handle(0, null, { value: 1 }), /text field 'op'/);
  expectFail(() => g.handle(0, null, { op: 1 }), /text field 'op'/);
  expectFail(() => g.handle(0, null, { op: 'add' }), /op 'add' needs an integer field 'value' \(field not found\)/);
  expectFail(() => g.handle(0, null, { op: 'add', value: new Float(5) }), /needs an integer field 'value' \(wrong kind of value\)/);
  expectFail(() => g.handle(0, null, { op: 'send', value: 5, target: REF_A }), /actor ref field 'target'/);
  expectFail(() => g.handle(0, null, { op: 'send', value: 5 }), /actor ref field 'target'/);
  expectFail(() => g.handle('zero', null, { op: 'add', value: 1 }), /state must be an integer, got text/);
  expectFail(() => g.handle(2n ** 63n - 1n, null, { op: 'add', value: 1 }), /overflows int64/);
  // Truncated and garbage message bytes: an explicit failure, never a trap.
  const good = encode({ op: 'add', value: 5 });
  for (let cut = 0; cut < good.length; cut++) expectFail(() => g.handle(0, null, good.subarray(0, cut)), /counter:/);
  expectFail(() => g.handle(0, null, hex('bf 62 6f 70 63 61 64 64 ff')), /counter:/); // indefinite map
  assert.equal(g.sends.length, 0);
});

test('counter: each invocation reuses the arena (memory stays bounded over 20,000 calls)', () => {
  const g = new Guest('counter');
  let state = 0n;
  for (let k = 0; k < 20000; k++) state = g.handle(state, null, { op: 'add', value: 1 }).state;
  assert.equal(state, 20000n);
  assert.ok(g.memory.length <= 4 * 65536, `memory grew to ${g.memory.length} bytes`);
});

test('counter: a 1 MiB message grows memory and still works', () => {
  const g = new Guest('counter');
  const r = g.handle(1, null, { pad: 'x'.repeat(1 << 20), op: 'add', value: 2 });
  assert.equal(r.state, 3n);
});

test('reef_alloc returns 0 when the request cannot fit in 4 GiB, and the guest recovers', () => {
  const g = new Guest('counter');
  assert.equal(g.instance.exports.reef_alloc(-1), 0);
  assert.equal(g.handle(0, null, { op: 'add', value: 5 }).state, 5n);
});

// Hello ---------------------------------------------------------------------------------------------
test('hello: logs a greeting at info and replies to an actor sender', () => {
  const r = new Guest('hello').handle(0, new Ref(REF_A), { name: 'Ada' });
  assert.equal(r.state, 1n);
  assert.deepEqual(r.logs, [{ level: 2, text: 'hello, Ada!' }]);
  assert.deepEqual(r.sends, [{ sender: new Ref(SELF), target: new Ref(REF_A), msg: { greeting: 'hello, Ada!' } }]);
});

test('hello: host-originated messages get a log but no reply; default name is world', () => {
  const r = new Guest('hello').handle(41, null, 'not a record');
  assert.equal(r.state, 42n);
  assert.deepEqual(r.logs, [{ level: 2, text: 'hello, world!' }]);
  assert.equal(r.sends.length, 0);
});

test('hello: a long multi-byte name is replied whole and its log line says it was cut', () => {
  const name = 'é'.repeat(400);
  const r = new Guest('hello').handle(0, new Ref(REF_A), { name });
  assert.equal(r.logs.length, 1, 'the log call was rejected');
  const logged = r.logs[0].text;
  assert.ok(new TextEncoder().encode(logged).length <= 512, 'within the log limit');
  assert.match(logged, /^hello, (é)+ \[cut: 808 bytes in all\]$/);
  assert.deepEqual(r.sends[0].msg, { greeting: `hello, ${name}!` });
});

test('REEF_ACTOR_WITH_SHUTDOWN: reef_on_shutdown returns the hook\'s final state', () => {
  const g = new Guest('sdk_probe');
  assert.deepEqual(g.handle(1, null, { m: [1, 'two'] }).state, { m: [1n, 'two'] });
  const state = encode({ n: 7 });
  const ptr = g.instance.exports.reef_alloc(state.length);
  g.memory.set(state, ptr);
  const packed = g.instance.exports.reef_on_shutdown(ptr, state.length);
  const out = g.memory.slice(Number(packed & 0xffffffffn), Number(packed & 0xffffffffn) + Number(packed >> 32n));
  assert.deepEqual(decode(out), { stopped: { n: 7n } });
});

// Program units (examples/program): REEF_HANDLER, REEF_UNIT_MODULE, reef_reply --------------------
test('REEF_UNIT_MODULE + REEF_HANDLER: counter exports counter_handle and no reef_handle', () => {
  const { exports } = signatures(readFileSync(join(guestDir, 'program_counter.wasm')));
  const byName = Object.fromEntries(exports.map((e) => [e.field, e]));
  assert.deepEqual(Object.keys(byName).sort(), ['counter_handle', 'memory', 'reef_abi_version', 'reef_alloc']);
  assert.deepEqual(byName.counter_handle.type, EXPORT_TABLE.reef_handle, 'signature of counter_handle');
});

test('program counter: add replies {"count": new} to the sender with reef_reply', () => {
  const g = new Guest('program_counter');
  const r = g.handle(41, new Ref(REF_A), { op: 'add' }, { entry: 'counter_handle' });
  assert.equal(r.state, 42n);
  assert.deepEqual(r.sends, [{ sender: new Ref(SELF), target: new Ref(REF_A), msg: { count: 42n } }]);
  const get = g.handle(42, new Ref(REF_B), { op: 'get' }, { entry: 'counter_handle' });
  assert.equal(get.state, 42n);
  assert.deepEqual(get.sends, [{ sender: new Ref(SELF), target: new Ref(REF_B), msg: { count: 42n } }]);
});

test('program counter: a null sender gets no reply (reef_reply: not found) and still commits', () => {
  const r = new Guest('program_counter').handle(0, null, { op: 'add' }, { entry: 'counter_handle' });
  assert.equal(r.state, 1n);
  assert.equal(r.sends.length, 0);
});

test('program counter: only op fail fails; a bad message gets an error reply and keeps the count', () => {
  const g = new Guest('program_counter');
  expectFail(() => g.handle(0, new Ref(REF_A), { op: 'fail' }, { entry: 'counter_handle' }), /failed on request/);
  const cases = [
    [{ op: 'mul' }, /unknown op "mul"; expected add, get or fail/],
    [7, /must be an object with a text field "op".*not int/],
    [[1, 2], /not list/],
    [{ op: 5 }, /^counter: the message needs a text field "op" \(add, get or fail\)$/],
    [{ value: 1 }, /^counter: the message needs a text field "op"/],
  ];
  for (const [message, reason] of cases) {
    const r = g.handle(41, new Ref(REF_A), message, { entry: 'counter_handle' });
    assert.equal(r.state, 41n, 'the count is kept');
    assert.equal(r.sends.length, 1);
    assert.match(r.sends[0].msg.error, reason);
  }
  const overflow = g.handle(9223372036854775807n, new Ref(REF_A), { op: 'add' }, { entry: 'counter_handle' });
  assert.equal(overflow.state, 9223372036854775807n);
  assert.match(overflow.sends[0].msg.error, /would overflow/);
});

test('program worker: v1 and v2 count what they served and echo the message with their version', () => {
  for (const version of [1n, 2n]) {
    const g = new Guest(`program_worker_v${version}`);
    const first = g.handle(null, new Ref(REF_A), { x: 1 });
    assert.deepEqual(first.state, { served: 1n });
    assert.deepEqual(first.sends, [{ sender: new Ref(SELF), target: new Ref(REF_A), msg: { version, echo: { x: 1n }, served: 1n } }]);
    const next = g.handle({ served: 1 }, null, 'hi');
    assert.deepEqual(next.state, { served: 2n });
    assert.equal(next.sends.length, 0);
    expectFail(() => g.handle(null, new Ref(REF_A), { op: 'fail' }), /failed on request/);
  }
});

// CBOR reader and writer (sdk_probe) ----------------------------------------------------------------
const OK = 0, E_LIMIT = -2, E_MALFORMED = -3, E_TYPE = -4, E_NOT_FOUND = -6, E_END = -8;
const KIND = { invalid: 0, null: 1, bool: 2, int: 3, float: 4, text: 5, list: 6, record: 7, actor: 8 };

function roundtrip(g, bytes) {
  const r = g.probe('probe_roundtrip', bytes);
  if (r < 0n) return Number(r);
  const ptr = Number(r & 0xffffffffn), len = Number(r >> 32n);
  return g.memory.slice(ptr, ptr + len);
}

test('reader+writer: values round-trip to the same encoding', () => {
  const g = new Guest('sdk_probe');
  const values = [null, true, false, 0, 23, 24, 255, 256, 65535, 65536, 2n ** 32n, 2n ** 63n - 1n, -1, -24, -25, -(2n ** 63n),
    '', 'héllo', 'x'.repeat(300), [], [1, [2, [3]]], {}, { a: 1, b: [null, 'z'] }, new Ref(REF_A),
    { op: 'send', value: 5, target: new Ref(REF_B) }, new Float(1.5), new Float(-0.1), [new Float(1e300)]];
  for (const v of values) {
    const enc = encode(v);
    assert.deepEqual(roundtrip(g, enc), enc, `round trip of ${JSON.stringify(v, (k, x) => (typeof x === 'bigint' ? `${x}n` : x))}`);
    assert.equal(g.probe('probe_skip', enc), enc.length);
  }
});

test('reader: non-shortest heads and half/single floats decode exactly (RFC 8949 appendix A)', () => {
  const g = new Guest('sdk_probe');
  for (const [h, want] of [['1805', 5n], ['190005', 5n], ['1b0000000000000005', 5n], ['3903e7', -1000n]]) {
    assert.equal(g.probe('probe_read_int', hex(h)), OK, h);
    assert.equal(g.instance.exports.probe_last_int(), want, h);
  }
  for (const [h, want] of [['f93c00', 1], ['f97bff', 65504], ['f90001', 5.960464477539063e-8], ['f90400', 0.00006103515625],
    ['f9c400', -4], ['f98000', -0], ['fa47c35000', 100000], ['fa7f7fffff', 3.4028234663852886e38], ['fb3ff199999999999a', 1.1]]) {
    assert.equal(g.probe('probe_read_float', hex(h)), OK, h);
    assert.ok(Object.is(g.instance.exports.probe_last_float(), want), `${h}: ${g.instance.exports.probe_last_float()}`);
  }
});

test('reader: malformed and out-of-subset input gives an error code, never a trap', () => {
  const g = new Guest('sdk_probe');
  const cases = [
    ['', E_END], ['19 01', E_MALFORMED], ['1b 80 00 00 00 00 00 00 00', E_MALFORMED], ['3b 80 00 00 00 00 00 00 00', E_MALFORMED],
    ['65 61 62', E_MALFORMED], ['9b ff ff ff ff ff ff ff ff 00', E_MALFORMED], ['bb ff ff ff ff ff ff ff ff', E_MALFORMED],
    ['a1 61 61', E_END], ['9f 01 ff', E_MALFORMED], ['7f 61 61 ff', E_MALFORMED], ['41 00', E_MALFORMED],
    ['c1 00', E_MALFORMED], ['da 52 45 45 46 63 61 62 63', E_MALFORMED], ['f7', E_MALFORMED], ['f8 20', E_MALFORMED],
    ['1c', E_MALFORMED], ['f9 7e 00', E_MALFORMED], ['f9 7c 00', E_MALFORMED], ['fb 7f f0 00 00 00 00 00 00', E_MALFORMED],
    ['81', E_MALFORMED], ['a1 01 02', E_TYPE], ['00 00', E_MALFORMED],
  ];
  const badRef = Uint8Array.from([...hex('da 52 45 45 46 75'), ...new TextEncoder().encode('abcdefghijklmnopqrst!')]);
  cases.push([badRef, E_MALFORMED]);
  for (const [input, want] of cases) {
    const bytes = typeof input === 'string' ? hex(input) : input;
    assert.equal(roundtrip(g, bytes), want, `round trip of ${Buffer.from(bytes).toString('hex')}`);
  }
  assert.equal(g.probe('probe_read_int', hex('f5')), E_TYPE);
  assert.equal(g.probe('probe_read_int', hex('f9 3c 00')), E_TYPE);
  assert.equal(g.probe('probe_read_float', hex('01')), E_TYPE);
  assert.equal(g.probe('probe_peek', hex('41 00')), KIND.invalid);
  assert.equal(g.probe('probe_peek', encode(new Ref(REF_A))), KIND.actor);
});

test('reader: record lookup finds fields anywhere, reports missing keys and non-text keys', () => {
  const g = new Guest('sdk_probe');
  const rec = encode({ a: [1, { x: 2 }], op: 'add', value: -7 });
  const field = (bytes, key) => {
    const kp = g.instance.exports.reef_alloc(bytes.length + 8192) + 4096;
    g.memory.set([...new TextEncoder().encode(key), 0], kp);
    g.memory.set(bytes, kp + 1024);
    return g.instance.exports.probe_field_int(kp + 1024, bytes.length, kp);
  };
  assert.equal(field(rec, 'value'), OK);
  assert.equal(g.instance.exports.probe_last_int(), -7n);
  assert.equal(field(rec, 'valu'), E_NOT_FOUND);
  assert.equal(field(rec, 'op'), E_TYPE);
  assert.equal(field(encode([1]), 'value'), E_TYPE);
  assert.equal(field(hex('a1 01 02'), 'value'), E_MALFORMED);
  assert.equal(field(hex('a2 61 61 9f'), 'value'), E_MALFORMED);
});

test('reader: reef_fields finds several fields in one pass, like reef_field', () => {
  const g = new Guest('sdk_probe');
  const fields = (bytes) => {
    const rc = g.probe('probe_fields', bytes);
    const packed = Number(g.instance.exports.probe_last_int());
    return [rc, [0, 1, 2].map((i) => (packed >> (8 * i)) & 255)];
  };
  // {"a": [1, {"x": 2}], "op": "add", "value": -7}: "x" only nested, so missing.
  const rec = encode({ a: [1, { x: 2 }], op: 'add', value: -7 });
  const [rc, at] = fields(rec);
  assert.equal(rc, E_NOT_FOUND);
  assert.deepEqual(at, [rec.indexOf(0x63) /* "add" */, rec.length - 1, 255]);
  const all = encode({ x: null, value: 1, op: 'send' });
  assert.deepEqual(fields(all), [OK, [all.length - 5, 10, 3]]);
  assert.deepEqual(fields(encode({})), [E_NOT_FOUND, [255, 255, 255]]);
  assert.equal(fields(encode([1]))[0], E_TYPE);
  assert.equal(fields(hex(''))[0], E_TYPE);
  assert.equal(fields(hex('a2 61 61 9f'))[0], E_MALFORMED);
  assert.equal(fields(hex('a1 01 02'))[0], E_MALFORMED);
  // Keys are compared by length and bytes: a prefix or an extension of a key is no match.
  assert.deepEqual(fields(encode({ o: 1, opp: 2, valu: 3, x: 4 }))[1], [255, 255, 17]);
  // Random inputs: never a trap, always a known code.
  let seed = 99;
  const rand = (n) => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n; };
  for (let k = 0; k < 5000; k++) {
    const bytes = Uint8Array.from(all);
    for (let m = rand(3) + 1; m > 0; m--) bytes[rand(bytes.length)] = rand(256);
    const cut = rand(2) ? bytes : bytes.subarray(0, rand(bytes.length));
    assert.ok([OK, E_NOT_FOUND, E_TYPE, E_MALFORMED].includes(fields(cut)[0]));
  }
});

test('reader: 100,000 nested lists are skipped iteratively; typed copy stops at its depth limit', () => {
  const g = new Guest('sdk_probe');
  const deep = new Uint8Array(100001).fill(0x81);
  deep[100000] = 0x00;
  assert.equal(g.probe('probe_skip', deep), deep.length);
  assert.equal(roundtrip(g, deep), E_LIMIT);
  assert.equal(g.probe('probe_skip', deep.subarray(0, 100000)), E_MALFORMED);
});

test('reader: 20,000 random and mutated inputs never trap and skip agrees with round trip', () => {
  const g = new Guest('sdk_probe');
  let seed = 12345;
  const rand = (n) => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n; };
  const seeds = [encode({ op: 'send', value: -5, target: new Ref(REF_A), l: [new Float(1.5), null, true, 'tx'] }), encode([new Float(2.5), 'abc', { k: [] }])];
  for (let k = 0; k < 20000; k++) {
    let bytes;
    if (k % 2) {
      bytes = Uint8Array.from({ length: rand(24) }, () => rand(256));
    } else {
      bytes = Uint8Array.from(seeds[k % 4 === 0 ? 0 : 1]);
      for (let m = rand(4) + 1; m > 0; m--) bytes[rand(bytes.length)] = rand(256);
      if (rand(3) === 0) bytes = bytes.subarray(0, rand(bytes.length));
    }
    const copy = roundtrip(g, bytes);
    const skipped = g.probe('probe_skip', bytes);
    if (copy instanceof Uint8Array) {
      assert.equal(skipped, bytes.length, `skip disagrees on ${Buffer.from(bytes).toString('hex')}`);
      decode(copy, { fatalUtf8: false }); // well-formed (UTF-8 validity is the host's job)
    } else {
      assert.ok(copy < 0, 'error codes are negative');
    }
  }
});

test('reef_format: supported conversions and truncation', () => {
  const g = new Guest('sdk_probe');
  const buf = g.instance.exports.reef_alloc(64);
  const n = g.instance.exports.probe_format(buf, 64);
  assert.equal(new TextDecoder().decode(g.memory.slice(buf, buf + n)), 'ab|xy|-42|-9223372036854775808|7|Z|%');
  // Cut: REEF_E_LIMIT, never a silent short length; the buffer holds what fit.
  const m = g.instance.exports.probe_format(buf, 6);
  assert.equal(m, -2);
  assert.equal(new TextDecoder().decode(g.memory.slice(buf, buf + 6)), 'ab|xy\0');
  // An unsupported conversion: REEF_E_INVALID, named in the text, and formatting stops.
  assert.equal(g.instance.exports.probe_format_unsupported(buf, 64), -1);
  const text = new TextDecoder().decode(g.memory.slice(buf, buf + 64)).split('\0')[0];
  assert.equal(text, 'a[unsupported conversion "%x"]');
});

test('reef_strf keeps texts over 1,024 bytes whole, so two long tokens stay two tags', () => {
  const g = new Guest('sdk_probe');
  const strf = (text) => {
    const packed = g.probe('probe_strf', new TextEncoder().encode(text));
    const ptr = Number(packed & 0xffffffffn), len = Number(packed >> 32n);
    return new TextDecoder().decode(g.memory.slice(ptr, ptr + len));
  };
  const a = 'x'.repeat(1050) + 'a'.repeat(50), b = 'x'.repeat(1050) + 'b'.repeat(50);
  assert.equal(strf(a), `order:${a}`);
  assert.equal(strf(b), `order:${b}`);
  assert.notEqual(strf(a), strf(b));
  const big = 'é'.repeat(40000); // 80,000 bytes
  assert.equal(strf(big), `order:${big}`);
});

test('reef_logf says when it cuts a message, and reef_failf never cuts', () => {
  const g = new Guest('sdk_probe');
  const short = g.probe('probe_logf', new TextEncoder().encode('fine'));
  assert.equal(short, 0);
  assert.deepEqual(g.logs.at(-1), { level: 2, text: 'fine' });
  const long = 'é'.repeat(400); // 800 bytes: over the 512-byte log limit
  assert.equal(g.probe('probe_logf', new TextEncoder().encode(long)), -2);
  const logged = g.logs.at(-1).text;
  assert.ok(new TextEncoder().encode(logged).length <= 512, 'within the log limit');
  assert.match(logged, /^(é)+ \[cut: 800 bytes in all\]$/);
  const reason = 'r'.repeat(3000);
  assert.throws(() => g.probe('probe_failf', new TextEncoder().encode(reason)),
    (e) => e instanceof Failed && e.reason === `failed: ${reason}`);
});

// ---- Report ------------------------------------------------------------------------------------------
let failed = 0;
for (const [name, err] of results) {
  if (err) { failed++; console.log(`FAIL ${name}\n     ${err.stack?.split('\n').slice(0, 3).join('\n     ')}`); }
  else console.log(`ok   ${name}`);
}
console.log(`\n${results.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
