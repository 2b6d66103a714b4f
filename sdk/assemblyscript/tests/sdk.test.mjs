// The SDK's unit tests: the probes of tests/ and the examples, built with build.mjs and run in
// Node against the JavaScript host of host.mjs. Run: npm test (in sdk/assemblyscript).
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { buildDir, buildModules } from './modules.mjs';
import {
  Guest, Float, Ref, SELF, encode, decode, hex, toHex, signatures, expectFail,
} from './host.mjs';

let wasm;
before(async () => { wasm = await buildModules('modules'); }, { timeout: 300000 });

const REF_A = 'V1StGXR8_Z5jdHi6B-myT';
const REF_B = 'abcdefghijklmnopqrstu';
const IMPORTS = {
  send: [['i32', 'i32', 'i32', 'i32'], ['i32']],
  send_from: [['i32', 'i32', 'i32', 'i32', 'i32', 'i32'], ['i32']],
  call: [['i32', 'i32', 'i32', 'i32', 'i32'], ['i32']],
  call_reply: [['i32', 'i32'], ['i32']],
  log: [['i32', 'i32', 'i32'], ['i32']],
  self: [['i32', 'i32'], ['i32']],
  fail: [['i32', 'i32'], []],
  now_ms: [[], ['i64']],
  random: [['i32', 'i32'], ['i32']],
  env: [['i32', 'i32', 'i32', 'i32'], ['i32']],
  sql_exec: [['i32', 'i32', 'i32', 'i32'], ['i64']],
  sql_query: [['i32', 'i32', 'i32', 'i32', 'i32', 'i32'], ['i32']],
  append: [['i32', 'i32'], ['i64']],
};
const HANDLE = [['i32', 'i32', 'i32', 'i32', 'i32', 'i32'], ['i64']];
const EXPORTS = {
  counter: ['memory', 'reef_abi_version', 'reef_alloc', 'reef_handle'],
  program_counter: ['counter_handle', 'memory', 'reef_abi_version', 'reef_alloc'],
  deposit: ['memory', 'reef_abi_version', 'reef_alloc', 'reef_command_decide', 'reef_command_fold', 'reef_command_fold_ignores_input', 'reef_command_init'],
  balances: ['memory', 'reef_abi_version', 'reef_alloc', 'reef_project', 'reef_query'],
  withdrawal_alert: ['memory', 'reef_abi_version', 'reef_alloc', 'reef_effect', 'reef_partition_key', 'reef_query'],
};

// ---- ABI surface ---------------------------------------------------------------------------

test('every module imports only functions of module "reef", with their signatures', () => {
  for (const [name, path] of Object.entries(wasm)) {
    for (const imp of signatures(readFileSync(path)).imports) {
      assert.equal(imp.module, 'reef', `${name}: import ${imp.module}.${imp.field}`);
      assert.deepEqual(imp.type, IMPORTS[imp.field], `${name}: reef.${imp.field}`);
    }
  }
});

test('modules export exactly their kind\'s functions, with ABI signatures', () => {
  for (const [name, want] of Object.entries(EXPORTS)) {
    const { exports } = signatures(readFileSync(wasm[name]));
    assert.deepEqual(exports.map((e) => e.field).sort(), want, name);
  }
  const { exports } = signatures(readFileSync(wasm.program_counter));
  assert.deepEqual(exports.find((e) => e.field === 'counter_handle').type, HANDLE);
  assert.equal(new Guest(wasm.counter).exports.reef_abi_version(), 1);
});

test('modules use only core wasm 1.0, bulk memory, sign extension and mutable globals', async () => {
  const binaryen = (await import('assemblyscript/binaryen')).default;
  for (const [name, path] of Object.entries(wasm)) {
    const m = binaryen.readBinary(readFileSync(path));
    assert.doesNotMatch(m.emitText(), /trunc_sat|v128|\bref\.|return_call|table\.(grow|fill|get|set|size)|\btry\b|atomic/, name);
    m.dispose();
  }
});

test('the stub runtime is set up before the start function allocates anything', async () => {
  // A start function that allocates (calls) before it sets the stub's heap offset would place
  // objects at address 0. Names are stripped, so this checks that a global is set first.
  const binaryen = (await import('assemblyscript/binaryen')).default;
  for (const [name, path] of Object.entries(wasm)) {
    if (name.endsWith('_minimal')) continue;
    const m = binaryen.readBinary(readFileSync(path));
    const wat = m.emitText();
    m.dispose();
    const start = /\(start \$(\S+)\)/.exec(wat)?.[1];
    if (!start) continue;
    const body = wat.split(`(func $${start}\n`)[1].split('\n )')[0];
    const statements = body.split(/\n(?=  \()/);
    const firstCall = statements.findIndex((st) => /\bcall\b/.test(st));
    const firstConstSet = statements.findIndex((st) => /^\s*\(global\.set \S+\s+\(i32\.const \d+\)\s*\)$/.test(st));
    assert.ok(firstCall < 0 || (firstConstSet >= 0 && firstConstSet < firstCall), `${name}: start calls before it sets the heap offset:\n${body.slice(0, 400)}`);
  }
});

// ---- The counter example ---------------------------------------------------------------------

test('counter: add, negative values, large states', () => {
  const g = new Guest(wasm.counter);
  assert.equal(g.handle(0, null, { op: 'add', value: 5 }).state, 5n);
  assert.equal(g.handle(10, null, { op: 'add', value: -3 }).state, 7n);
  assert.equal(g.handle(2n ** 62n, new Ref(REF_B), { value: 1, op: 'add' }).state, 2n ** 62n + 1n);
  assert.equal(g.sends.length, 0);
});

test('counter: send commits 1 and sends {"op":"add","value":5}; spec 001 walk-through', () => {
  const sender = new Guest(wasm.counter), receiver = new Guest(wasm.counter);
  const s = sender.handle(0, null, { op: 'send', value: 5, target: new Ref(REF_B) });
  assert.equal(s.state, 1n);
  assert.deepEqual(s.sends, [{ sender: new Ref(SELF), target: new Ref(REF_B), msg: { op: 'add', value: 5n } }]);
  assert.equal(receiver.handle(10, s.sends[0].sender, s.sends[0].msg).state, 15n);
});

test('counter: get replies to an actor sender, not to the host', () => {
  const g = new Guest(wasm.counter);
  const r = g.handle(7, new Ref(REF_A), { op: 'get' });
  assert.equal(r.state, 7n);
  assert.deepEqual(r.sends, [{ sender: new Ref(SELF), target: new Ref(REF_A), msg: 7n }]);
  assert.equal(g.handle(7, null, { op: 'get' }).sends.length, 0);
});

test('counter: bad messages fail with the C counter\'s reasons (plus where), sending nothing', () => {
  const g = new Guest(wasm.counter);
  const cases = [
    [0, { op: 'mul', value: 2 }, "counter: unknown op 'mul'; expected add, send or get"],
    [0, 7, "counter: message must be a record with a text field 'op' (add, send or get)"],
    [0, { value: 1 }, "counter: message must be a record with a text field 'op' (add, send or get)"],
    [0, { op: 1 }, "counter: message must be a record with a text field 'op' (add, send or get)"],
    [0, { op: 'add' }, "counter: op 'add' needs an integer field 'value' (field not found)"],
    [0, { op: 'add', value: new Float(5) }, "counter: op 'add' needs an integer field 'value' (wrong kind of value)"],
    [0, { op: 'send', value: 5, target: REF_A }, "counter: op 'send' needs an actor ref field 'target'"],
    [0, { op: 'send', value: 5 }, "counter: op 'send' needs an actor ref field 'target'"],
    ['zero', { op: 'add', value: 1 }, 'counter: state must be an integer, got text'],
    [2n ** 63n - 1n, { op: 'add', value: 1 }, 'counter: 9223372036854775807 + 1 overflows int64'],
    [-(2n ** 63n), { op: 'add', value: -1 }, 'counter: -9223372036854775808 + -1 overflows int64'],
  ];
  for (const [state, message, reason] of cases) {
    const got = expectFail(() => g.handle(state, null, message));
    assert.match(got, new RegExp(`^${reason.replace(/[()[\]+.*?]/g, '\\$&')} \\(.*counter\\.ts:\\d+:\\d+\\)$`));
    assert.equal(g.sends.length, 0);
  }
});

test('counter: truncated and garbage inputs fail explicitly, never trap', () => {
  const g = new Guest(wasm.counter);
  const good = encode({ op: 'add', value: 5 });
  for (let cut = 0; cut < good.length; cut++) {
    assert.match(expectFail(() => g.handle(0, null, good.subarray(0, cut))), /^reef: the message from the host is no valid value: /);
  }
  assert.match(expectFail(() => g.handle(0, null, hex('bf 62 6f 70 63 61 64 64 ff'))), /indefinite lengths/);
  assert.equal(g.handle(0, null, { op: 'add', value: 1 }).state, 1n, 'works after failures');
});

test('counter: memory stays bounded over 20,000 invocations of one instance', () => {
  const g = new Guest(wasm.counter);
  let state = 0n;
  for (let k = 0; k < 20000; k++) state = g.handle(state, null, { op: 'add', value: 1 }).state;
  assert.equal(state, 20000n);
  assert.ok(g.memory.length <= 2 * 65536, `memory grew to ${g.memory.length} bytes`);
});

test('counter: a 1 MiB message grows memory and still works; reef_alloc(-1) gives 0', () => {
  const g = new Guest(wasm.counter);
  assert.equal(g.handle(1, null, { pad: 'x'.repeat(1 << 20), op: 'add', value: 2 }).state, 3n);
  assert.equal(g.exports.reef_alloc(-1), 0);
  assert.equal(g.handle(0, null, { op: 'add', value: 5 }).state, 5n);
});

// ---- The program unit example -----------------------------------------------------------------

test('program counter: replies {"count"}, refuses bad messages with {"error"}, fails on "fail"', () => {
  const g = new Guest(wasm.program_counter);
  const add = g.handle(41, new Ref(REF_A), { op: 'add' }, 'counter_handle');
  assert.equal(add.state, 42n);
  assert.deepEqual(add.sends, [{ sender: new Ref(SELF), target: new Ref(REF_A), msg: { count: 42n } }]);
  assert.equal(g.handle(0, null, { op: 'add' }, 'counter_handle').sends.length, 0);
  for (const [message, reason] of [
    [{ op: 'mul' }, 'counter: unknown op "mul"; expected add, get or fail'],
    [7, 'counter: the message must be an object with a text field "op" (add, get or fail), not int'],
    [[1], 'counter: the message must be an object with a text field "op" (add, get or fail), not list'],
    [{ op: 5 }, 'counter: the message needs a text field "op" (add, get or fail)'],
  ]) {
    const r = g.handle(41, new Ref(REF_A), message, 'counter_handle');
    assert.equal(r.state, 41n);
    assert.deepEqual(r.sends[0].msg, { error: reason });
  }
  const max = 2n ** 63n - 1n;
  assert.deepEqual(g.handle(max, new Ref(REF_A), { op: 'add' }, 'counter_handle').sends[0].msg, { error: `counter: ${max} + 1 would overflow` });
  assert.match(expectFail(() => g.handle(0, new Ref(REF_A), { op: 'fail' }, 'counter_handle')), /^counter: failed on request \(op 'fail'\)/);
});

// ---- Values: encoding, decoding, limits --------------------------------------------------------

/** Decodes `bytes` in the probe with actor (0) or module (1) limits: {ok, bytes | error}. */
function probeDecode(g, bytes, kind = 0) {
  const rc = g.raw('probe_decode', [bytes], kind);
  const out = g.unpack(g.exports.probe_result());
  return rc === 0 ? { ok: true, bytes: out } : { ok: false, error: new TextDecoder().decode(out) };
}

test('values round-trip to the same deterministic encoding', () => {
  const g = new Guest(wasm.probe);
  const values = [null, true, false, 0, 23, 24, 255, 256, 65535, 65536, 2n ** 32n - 1n, 2n ** 32n, 2n ** 63n - 1n,
    -1, -24, -25, -256, -257, -(2n ** 63n), '', 'héllo', '日本', '😀 x', 'x'.repeat(300), 'é'.repeat(40000), [], [1, [2, [3]]],
    {}, { a: 1, b: [null, 'z'] }, { z: 1, a: 2 }, new Ref(REF_A), new Ref('__reply_address_00001'),
    { op: 'send', value: 5, target: new Ref(REF_B) }, new Float(1.5), new Float(-0.1), [new Float(1e300)],
    new Float(0), new Float(-0), new Float(65504), new Float(100000), new Float(5.960464477539063e-8),
    new Float(3.4028234663852886e38), new Float(2 ** -149), new Float(1.1)];
  for (const v of values) {
    const enc = encode(v);
    const r = probeDecode(g, enc);
    assert.ok(r.ok, r.error);
    assert.equal(toHex(r.bytes), toHex(enc), `round trip of ${toHex(enc).slice(0, 40)}`);
  }
});

test('floats encode in the shortest exact width; ints in the shortest head', () => {
  const g = new Guest(wasm.probe);
  const floats = [[1.5, 'f93e00'], [-0, 'f98000'], [0, 'f90000'], [65504, 'f97bff'], [100000, 'fa47c35000'],
    [5.960464477539063e-8, 'f90001'], [0.00006103515625, 'f90400'], [-4, 'f9c400'], [1.1, 'fb3ff199999999999a'],
    [3.4028234663852886e38, 'fa7f7fffff'], [1e300, 'fb7e37e43c8800759c'], [2 ** -149, 'fa00000001'], [2 ** -24 * 3, 'f90003']];
  for (const [f, want] of floats) assert.equal(toHex(g.unpack(g.exports.probe_float(f))), want, `${f}`);
  const ints = [[0n, '00'], [23n, '17'], [24n, '1818'], [255n, '18ff'], [256n, '190100'], [65536n, '1a00010000'],
    [2n ** 32n, '1b0000000100000000'], [-1n, '20'], [-25n, '3818'], [-(2n ** 63n), '3b7fffffffffffffff']];
  for (const [i, want] of ints) assert.equal(toHex(g.unpack(g.exports.probe_int(i))), want, `${i}`);
});

test('non-shortest heads and half/single floats decode exactly and re-encode canonically', () => {
  const g = new Guest(wasm.probe);
  const ref = toHex(new TextEncoder().encode(REF_A));
  for (const [input, want] of [['1805', '05'], ['190005', '05'], ['1b0000000000000005', '05'], ['3903e7', '3903e7'],
    ['fb3ff8000000000000', 'f93e00'], ['fa3fc00000', 'f93e00'], ['f93c00', 'f93c00'], ['7800', '60'],
    ['7a0000000161', '6161'], ['b801616101', 'a1616101'], ['9900020102', '820102'],
    [`db0000000052454546 7815 ${ref}`, `da5245454675${ref}`]]) {
    const r = probeDecode(g, hex(input));
    assert.ok(r.ok, `${input}: ${r.error}`);
    assert.equal(toHex(r.bytes), want, input);
  }
});

test('malformed and out-of-subset input is an error with the host\'s message, never a trap', () => {
  const g = new Guest(wasm.probe);
  const badRef = toHex(new TextEncoder().encode('abcdefghijklmnopqrst!'));
  const cases = [
    ['', 'invalid CBOR at byte offset 0: unexpected end of input, expected a data item'],
    ['19 01', 'invalid CBOR at byte offset 0: unexpected end of input inside a head'],
    ['1b 80 00 00 00 00 00 00 00', 'invalid CBOR at byte offset 0: integer outside the int64 range'],
    ['3b 80 00 00 00 00 00 00 00', 'invalid CBOR at byte offset 0: integer outside the int64 range'],
    ['65 61 62', 'invalid CBOR at byte offset 0: text string length 5 exceeds the remaining 2 bytes of input'],
    ['9b ff ff ff ff ff ff ff ff 00', 'invalid CBOR at byte offset 0: list length 18446744073709551615 exceeds the remaining 1 bytes of input'],
    ['bb ff ff ff ff ff ff ff ff', 'invalid CBOR at byte offset 0: record length 18446744073709551615 exceeds what the remaining 0 bytes of input can hold'],
    ['a1 61 61', 'invalid CBOR at byte offset 3: unexpected end of input, expected a data item'],
    ['9f 01 ff', 'invalid CBOR at byte offset 0: indefinite lengths are not supported'],
    ['7f 61 61 ff', 'invalid CBOR at byte offset 0: indefinite lengths are not supported'],
    ['ff', 'invalid CBOR at byte offset 0: unexpected break stop code (indefinite lengths are not supported)'],
    ['41 00', 'invalid CBOR at byte offset 0: byte strings are not supported (major type 2)'],
    ['c1 00', 'invalid CBOR at byte offset 0: unsupported tag 1 (only 1380271430, actor ref, is allowed)'],
    ['da 52 45 45 46 63 61 62 63', 'invalid CBOR at byte offset 5: an actor ref must be 21 characters of A-Za-z0-9_-'],
    [`da 52 45 45 46 75 ${badRef}`, 'invalid CBOR at byte offset 5: an actor ref must be 21 characters of A-Za-z0-9_-'],
    ['da 52 45 45 46 01', 'invalid CBOR at byte offset 5: actor ref tag must wrap a text string'],
    ['f7', 'invalid CBOR at byte offset 0: simple value 23 is not supported (only false, true and null)'],
    ['f8 20', 'invalid CBOR at byte offset 0: simple value 32 is not supported (only false, true and null)'],
    ['1c', 'invalid CBOR at byte offset 0: reserved additional information value'],
    ['f9 7e 00', 'invalid CBOR at byte offset 0: NaN and infinities are not allowed'],
    ['f9 7c 00', 'invalid CBOR at byte offset 0: NaN and infinities are not allowed'],
    ['fb 7f f0 00 00 00 00 00 00', 'invalid CBOR at byte offset 0: NaN and infinities are not allowed'],
    ['81', 'invalid CBOR at byte offset 0: list length 1 exceeds the remaining 0 bytes of input'],
    ['a1 01 02', 'invalid CBOR at byte offset 1: record key is not a text string'],
    ['a2 61 61 01 61 61 02', 'invalid CBOR at byte offset 4: duplicate record key'],
    ['00 00', 'invalid CBOR at byte offset 1: 1 trailing bytes after the data item (exactly one is allowed)'],
    ['62 c3 28', 'invalid CBOR at byte offset 1: text string is not valid UTF-8'],
    ['63 ed a0 80', 'invalid CBOR at byte offset 1: text string is not valid UTF-8'], // a surrogate
    ['62 c0 80', 'invalid CBOR at byte offset 1: text string is not valid UTF-8'], // overlong
    ['64 f4 90 80 80', 'invalid CBOR at byte offset 1: text string is not valid UTF-8'], // over U+10FFFF
    ['65 61 62 63 64 e2', 'invalid CBOR at byte offset 5: text string is not valid UTF-8'], // cut short
  ];
  for (const [input, want] of cases) {
    const r = probeDecode(g, hex(input));
    assert.equal(r.ok, false, input);
    assert.equal(r.error, want, input);
  }
  // Duplicate keys in a large record (hashed check) too.
  const keys = Array.from({ length: 40 }, (_, k) => `k${k}`);
  const big = Object.fromEntries(keys.map((k) => [k, 1]));
  assert.ok(probeDecode(g, encode(big)).ok);
  const twice = Uint8Array.from([0xb8, 41, ...encode(big).subarray(2), ...encode('k7'), 0x02]);
  assert.match(probeDecode(g, twice).error, /duplicate record key/);
});

test('limits: depth, nodes, string bytes and size, for actors and for modules', () => {
  const g = new Guest(wasm.probe);
  const nest = (depth) => { let v = 0; for (let d = 0; d < depth; d++) v = [v]; return v; };
  assert.ok(probeDecode(g, encode(nest(32))).ok);
  assert.equal(probeDecode(g, encode(nest(33))).error, 'value depth exceeds limit max_depth=32');
  assert.ok(probeDecode(g, encode(nest(72)), 1).ok);
  assert.equal(probeDecode(g, encode(nest(73)), 1).error, 'value depth exceeds limit max_depth=72');
  assert.ok(probeDecode(g, encode(Array(4095).fill(0))).ok);
  assert.equal(probeDecode(g, encode(Array(4096).fill(0))).error, 'value node count exceeds limit max_nodes=4096');
  assert.ok(probeDecode(g, encode(Array(4096).fill(0)), 1).ok);
  assert.ok(probeDecode(g, encode(['x'.repeat(1 << 19), 'y'.repeat(1 << 19)])).ok);
  assert.equal(probeDecode(g, encode(['x'.repeat(1 << 19), 'y'.repeat((1 << 19) + 1)])).error,
    'value string and key bytes exceed limit max_string_bytes=1048576');
  assert.equal(probeDecode(g, encode({ ['k'.repeat(1 << 20)]: 'v' })).error, 'value string and key bytes exceed limit max_string_bytes=1048576');
  const over = new Uint8Array((4 << 20) + 1).fill(0);
  assert.equal(probeDecode(g, over).error, `CBOR of ${(4 << 20) + 1} bytes exceeds limit max_cbor_bytes=4194304`);
  // 100,000 nested lists: an error at the depth limit, not a stack overflow.
  const deep = new Uint8Array(100001).fill(0x81);
  deep[100000] = 0;
  assert.equal(probeDecode(g, deep, 1).error, 'value depth exceeds limit max_depth=72');
});

/** A strict JS check of the ABI subset, for comparing with the guest's decoder. */
function strictOk(bytes) {
  try {
    const v = decode(bytes);
    let ok = true;
    const walk = (x) => {
      if (x instanceof Float) ok &&= Number.isFinite(x.v);
      else if (typeof x === 'bigint') ok &&= x >= -(2n ** 63n) && x < 2n ** 63n;
      else if (x instanceof Ref) ok &&= /^[A-Za-z0-9_-]{21}$/.test(x.id);
      else if (Array.isArray(x)) x.forEach(walk);
      else if (x && typeof x === 'object') Object.values(x).forEach(walk);
    };
    walk(v);
    return ok;
  } catch { return false; }
}

test('20,000 random and mutated inputs: never a trap, and the guest agrees with a strict decoder', () => {
  const g = new Guest(wasm.probe);
  let seed = 12345;
  const rand = (n) => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed % n; };
  const seeds = [encode({ op: 'send', value: -5, target: new Ref(REF_A), l: [new Float(1.5), null, true, 'tx', 'é'] }),
    encode([new Float(2.5), 'abc', { k: [] }, 70000, -300])];
  for (let k = 0; k < 20000; k++) {
    let bytes;
    if (k % 2) bytes = Uint8Array.from({ length: rand(24) }, () => rand(256));
    else {
      bytes = Uint8Array.from(seeds[k % 4 === 0 ? 0 : 1]);
      for (let m = rand(4) + 1; m > 0; m--) bytes[rand(bytes.length)] = rand(256);
      if (rand(3) === 0) bytes = bytes.subarray(0, rand(bytes.length));
    }
    const r = probeDecode(g, bytes);
    assert.equal(r.ok, strictOk(bytes), `${toHex(bytes)}: ${r.error}`);
    if (r.ok) assert.deepEqual(decode(r.bytes), decode(bytes));
  }
});

// ---- Value API and errors ----------------------------------------------------------------------

const probe = (message, state = 0, sender = null) => new Guest(wasm.probe).handle(state, sender, message);

test('Value: build, set replaces in place, keys, kinds, equality, toString', () => {
  assert.deepEqual(probe({ op: 'build' }).state, [
    { a: 3n, b: 'two', f: new Float(1.5), t: true, n: null, l: [-1n, ['x', 'é'], new Float(0.1)], r: new Ref(REF_A) },
    7n, ['a', 'b', 'f', 't', 'n', 'l', 'r'], true, false]);
  const built = new Guest(wasm.probe).value('reef_handle', [0, null, { op: 'build' }]);
  assert.deepEqual(Object.keys(built[0]), ['a', 'b', 'f', 't', 'n', 'l', 'r'], 'insertion order');
  assert.deepEqual(probe({ op: 'keys', value: { x: 1, y: 'z' } }).state, ['x', 1n, 'y', 'z']);
  assert.deepEqual(probe({ op: 'kinds', value: [null, true, 1, new Float(1), 's', [], {}, new Ref(REF_A)] }).state,
    ['null', 'bool', 'int', 'float', 'text', 'list', 'record', 'actor ref']);
  assert.equal(probe({ op: 'equals', a: { x: [1, 's'], y: null }, b: { y: null, x: [1, 's'] } }).state, true);
  assert.equal(probe({ op: 'equals', a: 1, b: new Float(1) }).state, false);
  assert.equal(probe({ op: 'equals', a: new Float(0), b: new Float(-0) }).state, true);
  assert.equal(probe({ op: 'to_string', value: { a: [1, new Float(1.5), 'q"\\\n\u0001'], r: new Ref(REF_A), n: null } }).state,
    `{"a":[1,1.5,"q\\"\\\\\\n\\u0001"],"r":{"$actor":"${REF_A}"},"n":null}`);
});

test('errors: a throw fails with message and place; fail() with the reason verbatim', () => {
  const where = / \(.*\.ts:\d+:\d+\)$/;
  const cases = [
    [{ op: 'get', record: { a: 1 }, key: 'zz' }, 'no field "zz"'],
    [{ op: 'get', record: [1], key: 'zz' }, 'expected a record, got list'],
    [{ op: 'get_int', record: { k: 's' }, key: 'k' }, 'field "k": expected an int, got text'],
    [{ op: 'as_int', value: 's' }, 'expected an int, got text'],
    [{ op: 'as_int', value: new Ref(REF_A) }, 'expected an int, got actor ref'],
    [{ op: 'at', value: [1, 2], index: 5 }, 'index 5 out of range (length 2)'],
    [{ op: 'nan' }, 'a float must be finite, not NaN'],
    [{ op: 'bad_ref' }, 'not an actor ref (21 characters of A-Za-z0-9_-): "not a ref"'],
    [{ op: 'cycle' }, 'value nested deeper than 500 levels (a list or record that contains itself?)'],
    [{ op: 'throw', text: 'boom' }, 'boom'],
    [{ op: 'surrogate' }, 'Unpaired surrogate'],
  ];
  for (const [message, want] of cases) {
    const reason = expectFail(() => probe(message));
    assert.ok(reason.startsWith(want + ' ('), `${JSON.stringify(message, (k, v) => (typeof v === 'bigint' ? Number(v) : v))}: ${reason}`);
    assert.match(reason, where);
  }
  assert.equal(expectFail(() => probe({ op: 'fail', text: 'exactly this, é' })), 'exactly this, é');
  assert.equal(expectFail(() => probe({ op: 'fail', text: 'r'.repeat(3000) })), 'r'.repeat(3000), 'never cut');
  assert.match(expectFail(() => new Guest(wasm.probe).handle(0, 5, { op: 'echo', value: 1 })), /^reef: the sender from the host is neither an actor ref nor null/);
});

// ---- Actor functions -----------------------------------------------------------------------------

test('send, sendFrom (actor and null sender), reply, self, sender', () => {
  const s = probe({ op: 'send', target: new Ref(REF_B), value: { x: [1] } });
  assert.deepEqual(s.sends, [{ sender: new Ref(SELF), target: new Ref(REF_B), msg: { x: [1n] } }]);
  const f = probe({ op: 'send_from', sender: new Ref(REF_A), target: new Ref(REF_B), value: 'hi' });
  assert.deepEqual(f.sends, [{ sender: new Ref(REF_A), target: new Ref(REF_B), msg: 'hi' }]);
  const h = probe({ op: 'send_from', sender: null, target: new Ref(REF_B), value: 'hi' });
  assert.deepEqual(h.sends, [{ sender: null, target: new Ref(REF_B), msg: 'hi' }]);
  const r = probe({ op: 'reply', value: 9 }, 0, new Ref(REF_A));
  assert.equal(r.state, true);
  assert.deepEqual(r.sends, [{ sender: new Ref(SELF), target: new Ref(REF_A), msg: 9n }]);
  const none = probe({ op: 'reply', value: 9 });
  assert.equal(none.state, false, 'no reply for a null sender');
  assert.equal(none.sends.length, 0);
  assert.deepEqual(probe({ op: 'self' }).state, new Ref(SELF));
  assert.deepEqual(probe({ op: 'sender' }, 0, new Ref(REF_A)).state, new Ref(REF_A));
  assert.equal(probe({ op: 'sender' }).state, null);
  const g = new Guest(wasm.probe, { maxSends: 0 });
  assert.match(expectFail(() => g.handle(0, null, { op: 'send', target: new Ref(REF_B), value: 1 })),
    /^reef: send to abcdefghijklmnopqrstu failed: limit exceeded/);
});

test('call: the reply, or a typed error for each of the host\'s codes', () => {
  let answer = 0;
  const g = new Guest(wasm.probe, { call: (target, msg, timeout) => (answer === 0 ? { got: msg, timeout: BigInt(timeout), to: target } : answer) });
  const ok = g.handle(0, null, { op: 'call', target: new Ref(REF_B), value: 'q', timeout: 250 }).state;
  assert.deepEqual(ok, { ok: true, error: 'ok', code: 0n, reply: { got: 'q', timeout: 250n, to: new Ref(REF_B) } });
  for (const [code, text] of [[-1, 'invalid argument'], [-2, 'limit exceeded'], [-3, 'unavailable'], [-4, 'timed out'], [-5, 'no reply'], [-6, 'call cycle']]) {
    answer = code;
    const r = g.handle(0, null, { op: 'call', target: new Ref(REF_B), value: 'q', timeout: 250 }).state;
    assert.deepEqual(r, { ok: false, error: text, code: BigInt(code), reply: null });
  }
  answer = 0;
  for (const timeout of [0, 600001]) {
    assert.deepEqual(g.handle(0, null, { op: 'call', target: new Ref(REF_B), value: 'q', timeout }).state.error, 'invalid argument');
  }
  answer = -4;
  assert.match(expectFail(() => g.handle(0, null, { op: 'call_value', target: new Ref(REF_B), value: 1 })), /^reef: call failed: timed out \(/);
});

test('log: every level; a message over 512 bytes is cut on a character boundary and says so', () => {
  assert.deepEqual(probe({ op: 'levels' }).logs, ['t', 'd', 'i', 'w', 'e', 'f'].map((text, level) => ({ level, text })));
  const short = probe({ op: 'log', level: 3, text: 'fine' });
  assert.equal(short.state, true);
  assert.deepEqual(short.logs, [{ level: 3, text: 'fine' }]);
  const long = probe({ op: 'log', level: 2, text: 'é'.repeat(400) });
  assert.equal(long.state, false);
  const text = long.logs[0].text;
  assert.ok(new TextEncoder().encode(text).length <= 512);
  assert.match(text, /^(é)+ \[cut: 800 bytes in all\]$/);
  const exact = probe({ op: 'log', level: 2, text: 'x'.repeat(512) });
  assert.equal(exact.state, true);
  assert.equal(exact.logs[0].text.length, 512);
});

test('shutdown hook and a further handler for a program unit', () => {
  const g = new Guest(wasm.probe);
  assert.deepEqual(g.value('reef_on_shutdown', [{ n: 7 }]), { stopped: { n: 7n } });
  const r = g.handle(41, new Ref(REF_A), { x: 1 }, 'probe_unit');
  assert.equal(r.state, 42n);
  assert.deepEqual(r.sends, [{ sender: new Ref(SELF), target: new Ref(REF_A), msg: { unit: { x: 1n } } }]);
  assert.equal(g.handle(0, null, 'hi', 'probe_unit').sends.length, 0);
});

// ---- Commands ----------------------------------------------------------------------------------

const EVENT = { position: 12, id: '0190a6c8-7f3e-4c3a-9d2e-1234567890ab', type: 'A', tags: ['t1', 'x'],
  data: { amount: 5 }, timestamp_ms: 1764547200000, correlation_id: 'req-7', causation_id: 'c-1', metadata: { minutesAgo: 5 } };

test('command init: no query, every event, items of types and tags; an empty item throws', () => {
  const g = new Guest(wasm.command_probe);
  assert.deepEqual(g.value('reef_command_init', [{ op: 'none' }]), { query: null, state: { n: 0n } });
  assert.deepEqual(g.value('reef_command_init', [{ op: 'all' }]), { query: [], state: { n: 0n } });
  assert.deepEqual(g.value('reef_command_init', [{ op: 'complex' }]).query,
    [{ types: ['A', 'B'], tags: ['t1', 't2'] }, { types: ['C'] }, { tags: ['x'] }]);
  assert.match(expectFail(() => g.value('reef_command_init', [{ op: 'empty_item' }])), /^a query item needs at least one type or tag \(/);
});

test('command fold: once per event of the page, with every event field', () => {
  const g = new Guest(wasm.command_probe);
  const bare = { position: 13, id: 'u2', type: 'B', tags: [], data: null, timestamp_ms: 5 };
  const r = g.value('reef_command_fold', [{ n: 1 }, { op: 'x' }, [EVENT, bare, EVENT]]);
  assert.equal(r.n, 4n);
  assert.deepEqual(r.last, { ...EVENT, position: 12n, timestamp_ms: 1764547200000n, data: { amount: 5n }, metadata: { minutesAgo: 5n }, has_t1: true });
  const one = g.value('reef_command_fold', [{ n: 0 }, {}, [bare]]);
  assert.deepEqual(one.last, { ...bare, position: 13n, timestamp_ms: 5n, correlation_id: '', causation_id: '', metadata: null, has_t1: false });
  assert.match(expectFail(() => g.value('reef_command_fold', [{ n: 0 }, {}, [{ position: 1 }]])), /^reef: command fold: malformed event: /);
  assert.match(expectFail(() => g.value('reef_command_fold', [{ n: 0 }, {}, 5])), /^reef: command fold: the events must be a list/);
});

test('command decide: reject, accept nothing, events with tags, metadata, scope; host services', () => {
  const g = new Guest(wasm.command_probe, { env: { K: 'v', LONG: 'l'.repeat(1000) }, now: 1234 });
  assert.deepEqual(g.value('reef_command_decide', [{ n: 0 }, { op: 'reject', message: 'no, é' }]), { error: 'no, é' });
  assert.deepEqual(g.value('reef_command_decide', [{ n: 0 }, { op: 'nothing' }]), { events: [] });
  assert.deepEqual(g.value('reef_command_decide', [{ n: 2 }, { op: 'accept' }]), { events: [
    { type: 'Plain', tags: ['t1'], data: { state: { n: 2n } } },
    { type: 'Rich', tags: ['t1', 't2'], data: null, metadata: { minutesAgo: 5n }, encryption_scope: 'scope:1' }] });
  const s = g.value('reef_command_decide', [{ n: 0 }, { op: 'services' }]);
  assert.deepEqual(s.events[0].data, { now: 1234n, first: 1n, last: BigInt((4463 * 7 + 2) & 0xff), len: 70000n, u64: true, k: 'v', long: 1000n, missing: null });
  assert.equal(g.randomCalls, 3, 'random: two calls for 70,000 bytes, one for randomU64');
});

// ---- Projectors: memory across thousands of events -----------------------------------------------

for (const runtime of ['stub', 'minimal']) {
  test(`projector (${runtime} runtime): 5,000 events through one instance, memory bounded, globals kept`, () => {
    const name = runtime === 'stub' ? 'projector_probe' : 'projector_probe_minimal';
    const g = new Guest(wasm[name]);
    assert.deepEqual(g.value('reef_query', []), [{ types: ['Deposited', 'Big'] }]);
    assert.deepEqual(g.sql, [{ sql: 'CREATE TABLE IF NOT EXISTS t (position INTEGER, type TEXT, data TEXT)', params: [] }]);
    let after100 = 0;
    for (let k = 1; k <= 5000; k++) {
      const event = { position: k, id: `id-${k}`, type: 'Deposited', tags: [`account:${k % 7}`], data: { amount: k, note: 'x'.repeat(k % 300) }, timestamp_ms: k };
      assert.equal(g.raw('reef_project', [event]), 0);
      assert.deepEqual(g.sql[0].params.slice(0, 2), [BigInt(k), 'Deposited']);
      if (k === 100) after100 = g.memory.length;
      if (k === 5000) assert.match(g.sql[0].params[2], /"types":"Deposited,Big","start":\{"made":"at start"\}/);
    }
    assert.ok(g.memory.length <= Math.max(after100, 4 * 65536), `memory grew from ${after100} to ${g.memory.length}`);
  });
}

test('sqlQuery and env call again when the result does not fit', () => {
  const rows = Array.from({ length: 200 }, (_, k) => ({ k: BigInt(k), v: 'value '.repeat(10) }));
  const g = new Guest(wasm.projector_probe, { sql: (sql, params, query) => (query ? rows : 1), env: { LONG: 'z'.repeat(5000) } });
  assert.equal(g.raw('reef_project', [{ ...EVENT, type: 'Big' }]), 0);
  const queries = g.sql.filter((s) => s.sql === 'SELECT * FROM big');
  assert.equal(queries.length, 2, 'asked again with room for the rows');
  assert.deepEqual(queries[0].params, [12n, 'p', true, new Float(0.5), null]);
  const insert = g.sql.at(-1);
  assert.deepEqual(insert.params, [200n, `{"k":199,"v":"${'value '.repeat(10)}"}`, 5000n]);
});

// ---- The bank, next to the C bank in the same JS host -------------------------------------------

const cGuest = (name) => join(buildDir, 'guests', `${name}.wasm`);
const haveC = ['bank_deposit', 'bank_withdraw', 'bank_open_account', 'bank_balances', 'bank_withdrawal_alert']
  .every((n) => existsSync(cGuest(n)));

/** What a call of guest g gives: its value, or its failure reason without the AssemblyScript
 * place. After a failure the instance is made anew, as the real host does (a C guest's stack
 * pointer is left where the failure stopped it). */
function outcome(g, fn) {
  try { return { value: fn() }; } catch (e) {
    if (e.reason === undefined) throw e;
    g.reset();
    return { fail: e.reason.replace(/ \([^()]*\.ts:\d+:\d+\)$/, '') };
  }
}

test('bank commands: init, fold and decide answer as the C ones for 3,000 inputs', { skip: !haveC && 'no C guests in build/guests' }, () => {
  const ids = ['a1', '', 'é'.repeat(124), 'é'.repeat(125), 'x'.repeat(248), 'x'.repeat(249), 'a\u0001', 'a\u007f', 'a b', 7, null];
  const amounts = [undefined, 1, 0, -1, 5, 1000000000000n, 1000000000001n, 2n ** 63n - 1n, -(2n ** 63n), new Float(5), 'x'];
  const owners = [undefined, 'Ada', '', 5, null];
  const inputs = [[], 'str', 5, null];
  for (const account_id of ids) for (const amount of amounts) for (const owner of owners) {
    const input = {};
    if (account_id !== null) input.account_id = account_id;
    if (amount !== undefined) input.amount = amount;
    if (owner !== undefined) input.owner = owner;
    inputs.push(input);
  }
  const states = [{ open: false, balance: 0 }, { open: true, balance: 100 }, { open: true, balance: 2n ** 63n - 5n }, { open: true, balance: -(2n ** 63n) }, { bad: 1 }];
  const events = (type, amount) => [{ position: 9, id: 'u', type, tags: ['account:a1'], data: amount === undefined ? null : { account_id: 'a1', amount }, timestamp_ms: 1 }];
  for (const [c, as] of [['bank_deposit', 'deposit'], ['bank_withdraw', 'withdraw'], ['bank_open_account', 'open_account']]) {
    const gc = new Guest(cGuest(c)), ga = new Guest(wasm[as]);
    for (const input of inputs) {
      assert.deepEqual(outcome(ga, () => ga.value('reef_command_init', [input])), outcome(gc, () => gc.value('reef_command_init', [input])), `${as} init ${toHex(encode(input))}`);
      for (const state of states) {
        assert.deepEqual(outcome(ga, () => ga.value('reef_command_decide', [state, input])), outcome(gc, () => gc.value('reef_command_decide', [state, input])), `${as} decide`);
      }
    }
    for (const state of states) {
      for (const [type, amount] of [['AccountOpened'], ['MoneyDeposited', 10], ['MoneyWithdrawn', 10], ['MoneyDeposited'], ['MoneyDeposited', 'x'], ['Other', 5], ['MoneyDeposited', 2n ** 63n - 1n], ['MoneyWithdrawn', 2n ** 63n - 1n]]) {
        const ev = events(type, amount);
        assert.deepEqual(outcome(ga, () => ga.value('reef_command_fold', [state, {}, ev])), outcome(gc, () => gc.value('reef_command_fold', [state, {}, ev])), `${as} fold ${type} ${amount}`);
      }
    }
  }
});

test('bank projector and effect: the same SQL, partition keys, logs and appends as the C ones', { skip: !haveC && 'no C guests in build/guests' }, () => {
  const rows = new Map();
  const sql = (text, params, query) => {
    if (query) return rows.has(params[0]) ? [{ balance: rows.get(params[0]) }] : [];
    if (text.includes('balance) VALUES')) rows.set(params[0], params[1]);
    return 1;
  };
  const seq = [['AccountOpened', { account_id: 'a1', owner: 'Ada' }, ['account:a1']], ['AccountOpened', null, ['account:a2']],
    ['MoneyDeposited', { account_id: 'a1', amount: 100 }], ['MoneyWithdrawn', { account_id: 'a1', amount: 30 }],
    ['MoneyWithdrawn', { account_id: 'a2', amount: 2000 }], ['MoneyDeposited', { account_id: 'a1', amount: 2n ** 63n - 1n }]];
  const results = {};
  for (const [name, file] of [['c', cGuest('bank_balances')], ['as', wasm.balances]]) {
    rows.clear();
    const g = new Guest(file, { sql });
    const log = [];
    log.push(g.value('reef_query', []), g.sql);
    seq.forEach(([type, data, tags], k) => {
      log.push(outcome(g, () => g.raw('reef_project', [{ position: k + 1, id: `e${k}`, type, tags: tags ?? [`account:${data.account_id}`], data, timestamp_ms: 1 }])), g.sql);
    });
    results[name] = log;
  }
  assert.deepEqual(results.as, results.c);
  for (const env of [{}, { LARGE_AMOUNT: '50' }, { LARGE_AMOUNT: '12x' }, { LARGE_AMOUNT: '' }, { LARGE_AMOUNT: '99999999999999999999' }]) {
    const out = {};
    for (const [name, file] of [['c', cGuest('bank_withdrawal_alert')], ['as', wasm.withdrawal_alert]]) {
      const g = new Guest(file, { env });
      const log = [g.value('reef_query', [])];
      for (const data of [{ account_id: 'a1', amount: 1500 }, { account_id: 'a1', amount: 999 }, { account_id: 'a1', amount: 1000 }, { amount: 5000 }, null, { account_id: 'é', amount: 60 }]) {
        const event = { position: 7, id: 'w', type: 'MoneyWithdrawn', tags: [], data, timestamp_ms: 1, correlation_id: 'c' };
        log.push(g.value('reef_partition_key', [event]), outcome(g, () => g.raw('reef_effect', [event])), g.logs, g.appends);
      }
      out[name] = log;
    }
    assert.deepEqual(out.as, out.c, JSON.stringify(env));
  }
});
