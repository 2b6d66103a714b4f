// The Rust SDK's wasm-level tests: Node 20 plays the Reef host for the built guests.
//
// Checks what only the wasm build shows: the real import signatures, the panic hook (a panic
// ends the call through `fail` with its message), malformed host input failing cleanly, the
// call / call_reply protocol, and that instances reused for thousands of calls (projectors,
// effects) keep the same memory size: nothing leaks per call.
//
// Usage (after building the probe and the examples for wasm32-unknown-unknown):
//   node sdk/rust/tests/wasm_host.mjs PROBE_WASM EXAMPLES_RELEASE_DIR
// Exits non-zero on the first failed check.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

const [probePath, examplesDir] = process.argv.slice(2);
if (!probePath || !examplesDir) {
  console.error('usage: node wasm_host.mjs PROBE_WASM EXAMPLES_RELEASE_DIR');
  process.exit(2);
}

// ---- A small CBOR codec for the ABI subset: JS number (integer -> int, else float), BigInt,
// string, array, plain object (record), {$actor: id}, {$float: x} (a float that is integral).
const TAG = 1380271430;
function encode(v) {
  const out = [];
  const head = (major, n) => {
    n = BigInt(n);
    if (n < 24n) out.push((major << 5) | Number(n));
    else if (n < 256n) out.push((major << 5) | 24, Number(n));
    else if (n < 65536n) out.push((major << 5) | 25, Number(n >> 8n), Number(n & 255n));
    else if (n < 4294967296n) { out.push((major << 5) | 26); for (let s = 24n; s >= 0n; s -= 8n) out.push(Number((n >> s) & 255n)); }
    else { out.push((major << 5) | 27); for (let s = 56n; s >= 0n; s -= 8n) out.push(Number((n >> s) & 255n)); }
  };
  const item = (v) => {
    if (v === null) out.push(0xf6);
    else if (v === true) out.push(0xf5);
    else if (v === false) out.push(0xf4);
    else if (typeof v === 'bigint' || (typeof v === 'number' && Number.isInteger(v))) {
      const b = BigInt(v);
      if (b >= 0n) head(0, b); else head(1, -1n - b);
    } else if (typeof v === 'number' || (v && v.$float !== undefined)) {
      const f = typeof v === 'number' ? v : v.$float;
      const b = Buffer.alloc(8); b.writeDoubleBE(f); out.push(0xfb, ...b);
    } else if (typeof v === 'string') { const b = Buffer.from(v, 'utf8'); head(3, b.length); out.push(...b); }
    else if (Array.isArray(v)) { head(4, v.length); v.forEach(item); }
    else if (v.$actor) { head(6, TAG); const b = Buffer.from(v.$actor); head(3, b.length); out.push(...b); }
    else if (v.$raw) out.push(...v.$raw);
    else { const ks = Object.keys(v); head(5, ks.length); for (const k of ks) { item(k); item(v[k]); } }
  };
  item(v);
  return Uint8Array.from(out);
}
function decode(bytes) {
  let p = 0;
  const arg = (info) => {
    if (info < 24) return BigInt(info);
    const n = 1 << (info - 24); let a = 0n;
    for (let i = 0; i < n; i++) a = (a << 8n) | BigInt(bytes[p++]);
    return a;
  };
  const num = (b) => (b >= -(2n ** 53n) && b <= 2n ** 53n ? Number(b) : b);
  const item = () => {
    const ib = bytes[p++], major = ib >> 5, info = ib & 31;
    if (major === 7) {
      if (info === 20) return false; if (info === 21) return true; if (info === 22) return null;
      const dv = new DataView(bytes.buffer, bytes.byteOffset + p);
      if (info === 25) { const h = dv.getUint16(0); p += 2; const e = (h >> 10) & 31, m = h & 1023;
        const v = e === 0 ? m * 2 ** -24 : (m + 1024) * 2 ** (e - 25); return { $float: h & 0x8000 ? -v : v }; }
      if (info === 26) { p += 4; return { $float: dv.getFloat32(0) }; }
      if (info === 27) { p += 8; return { $float: dv.getFloat64(0) }; }
      throw new Error('bad simple ' + info);
    }
    const a = arg(info);
    if (major === 0) return num(a);
    if (major === 1) return num(-1n - a);
    if (major === 3) { const s = Buffer.from(bytes.subarray(p, p + Number(a))).toString('utf8'); p += Number(a); return s; }
    if (major === 4) { const l = []; for (let i = 0n; i < a; i++) l.push(item()); return l; }
    if (major === 5) { const r = {}; for (let i = 0n; i < a; i++) { const k = item(); r[k] = item(); } return r; }
    if (major === 6) return { $actor: item() };
    throw new Error('bad major ' + major);
  };
  const v = item();
  assert.equal(p, bytes.length, 'trailing bytes in a guest result');
  return v;
}
const flt = (v) => (v && v.$float !== undefined ? v.$float : v);

// ---- The host ---------------------------------------------------------------------------
class Fail extends Error {}

async function load(file) {
  const h = { sends: [], logs: [], appended: [], sql: [], env: {}, rows: [], reply: null, onCall: null, self: 'devActorRef000000000A' };
  let mem;
  const bytes = (p, n) => new Uint8Array(mem.buffer, p >>> 0, n >>> 0).slice();
  const text = (p, n) => Buffer.from(bytes(p, n)).toString('utf8');
  const put = (data, p, cap) => { if (data.length <= cap) new Uint8Array(mem.buffer, p >>> 0, data.length).set(data); return data.length; };
  const reef = {
    send: (tp, tl, mp, ml) => { h.sends.push({ from: 'self', target: decode(bytes(tp, tl)), message: decode(bytes(mp, ml)) }); return 0; },
    send_from: (sp, sl, tp, tl, mp, ml) => { h.sends.push({ from: decode(bytes(sp, sl)), target: decode(bytes(tp, tl)), message: decode(bytes(mp, ml)) }); return 0; },
    call: (tp, tl, mp, ml, timeout) => {
      const r = h.onCall(decode(bytes(tp, tl)), decode(bytes(mp, ml)), timeout);
      if (typeof r === 'number') return r;
      h.reply = encode(r); return h.reply.length;
    },
    call_reply: (p, cap) => (h.reply ? put(h.reply, p, cap) : -1),
    log: (level, p, n) => { if (n > 512) return -2; h.logs.push([level, text(p, n)]); return 0; },
    self: (p, cap) => put(encode({ $actor: h.self }), p, cap),
    fail: (p, n) => { throw new Fail(text(p, n)); },
    now_ms: () => 1764547200000n,
    random: (p, n) => { new Uint8Array(mem.buffer, p, n).fill(9); return 0; },
    env: (kp, kl, op, cap) => { const v = h.env[text(kp, kl)]; return v === undefined ? -6 : put(Buffer.from(v), op, cap); },
    sql_exec: (sp, sl, pp, pl) => { h.sql.push([text(sp, sl), decode(bytes(pp, pl))]); return 1n; },
    sql_query: (sp, sl, pp, pl, op, cap) => { h.sql.push([text(sp, sl), decode(bytes(pp, pl))]); return put(encode(h.rows), op, cap); },
    append: (p, n) => { h.appended.push(...decode(bytes(p, n))); return BigInt(h.appended.length); },
  };
  // Like the host, a call that failed or trapped leaves its instance behind: the next call
  // starts from a fresh one (docs/abi.md; Rust's panic machinery also counts on it).
  const module = await WebAssembly.compile(fs.readFileSync(file));
  let ex;
  const fresh = async () => { ex = (await WebAssembly.instantiate(module, { reef })).exports; mem = ex.memory; };
  await fresh();
  h.fresh = fresh;
  // One export call as the host makes it: reef_alloc once, the inputs copied in, the call.
  h.call = (name, ...inputs) => {
    if (h.stale) throw new Error('call after a failure: await h.fresh() first (h.run does)');
    const enc = inputs.map((v) => (v instanceof Uint8Array ? v : encode(v)));
    const total = enc.reduce((n, b) => n + b.length, 0);
    const base = ex.reef_alloc(total) >>> 0;
    assert.notEqual(base, 0, 'reef_alloc failed');
    const args = [];
    let at = base;
    for (const b of enc) { new Uint8Array(mem.buffer, at, b.length).set(b); args.push(at, b.length); at += b.length; }
    try {
      const r = ex[name](...args);
      if (typeof r !== 'bigint') return r;
      const u = BigInt.asUintN(64, r);
      return decode(new Uint8Array(mem.buffer, Number(u & 0xffffffffn), Number(u >> 32n)).slice());
    } catch (e) {
      h.stale = true;
      if (e instanceof Fail) return { failed: e.message };
      throw e;
    }
  };
  // h.run: h.call, with a fresh instance after a failure, as the host does.
  const call = h.call;
  h.run = async (...a) => { if (h.stale) { await fresh(); h.stale = false; } return call(...a); };
  h.pages = () => mem.buffer.byteLength / 65536;
  return h;
}

let checks = 0;
const check = (name, f) => Promise.resolve(f()).then(() => { checks++; console.log('ok  ' + name); });

// ---- The probe --------------------------------------------------------------------------
const A = { $actor: 'AAAAAAAAAAAAAAAAAAAAB' };
const REPLY = { $actor: '__reply_address_00001' };

await check('values round-trip through a handler', async () => {
  const p = await load(probePath);
  const msg = { op: 'echo', ints: [0, 23, 24, -1, -25, 2n ** 63n - 1n, -(2n ** 63n)], f: [1.5, 0.1, { $float: -0 }, { $float: 1e300 }, { $float: 3 }],
    s: 'ü€😀', nested: [[[{}]], []], ref: A, n: null, t: true };
  const back = (await p.run('reef_handle', 0, null, msg));
  assert.deepEqual(back.ints, msg.ints.map((x) => (typeof x === 'bigint' ? x : x)));
  assert.deepEqual(back.f.map(flt), [1.5, 0.1, -0, 1e300, 3]);
  assert.ok(Object.is(flt(back.f[2]), -0));
  assert.deepEqual([back.s, back.nested, back.ref, back.n, back.t], [msg.s, msg.nested, A, null, true]);
});

await check('panics, errors and bad states fail the call with a reason', async () => {
  const p = await load(probePath);
  assert.equal((await p.run('reef_handle', 0, null, { op: 'panic', n: 7 })).failed, 'panic: probe panic 7 (at src/lib.rs:19)');
  assert.match((await p.run('reef_handle', 0, null, { op: 'unwrap' })).failed, /^panic: called `Option::unwrap\(\)` on a `None` value/);
  assert.match((await p.run('reef_handle', 0, null, { op: 'index', i: 5 })).failed, /^panic: index out of bounds: the len is 3 but the index is 5/);
  assert.equal((await p.run('reef_handle', 0, null, { op: 'err' })).failed, 'probe error');
  assert.equal((await p.run('reef_handle', 0, null, { op: 'zz' })).failed, "probe: unknown op 'zz'");
  assert.equal((await p.run('reef_handle', 0, null, { op: 'nan' })).failed, 'reef: the new state is not a value: a NaN or infinite float is not a value');
  assert.equal((await p.run('reef_handle', 0, null, 5)).failed, 'expected record, got int');
});

await check('malformed host input fails cleanly, never traps', async () => {
  const p = await load(probePath);
  const cases = [[0x5f], [0x1c], [0xf7], [0x62, 0xc3, 0x28], [0x01, 0x01], [], [0x9b, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]];
  for (const raw of cases) {
    const r = (await p.run('reef_handle', Uint8Array.from(raw), null, { op: 'echo' }));
    assert.match(r.failed, /^reef: malformed state from the host: invalid CBOR at byte offset \d+: /, JSON.stringify(raw));
  }
  assert.equal((await p.run('reef_handle', 0, 5, { op: 'echo' })).failed, 'reef: the sender is neither null nor an actor ref but int');
  // What the host passes is read with the depth bound alone (the host may allow more than the
  // default 32): 40 levels are read, 80 are refused.
  const deep = (depth) => ({ $raw: Array(depth).fill(0x81).concat([0]) });
  assert.equal((await p.run('reef_handle', 0, null, deep(40))).failed, 'expected record, got list');
  assert.equal((await p.run('reef_handle', 0, null, deep(80))).failed, 'reef: malformed message from the host: value depth exceeds limit max_depth=72');
});

await check('more handlers, the shutdown hook, self', async () => {
  const p = await load(probePath);
  assert.deepEqual((await p.run('probe_other', 0, null, 'x')), { other: 'x' });
  assert.deepEqual((await p.run('reef_on_shutdown', 41)), { shut: 41 });
  assert.deepEqual((await p.run('reef_handle', 0, null, { op: 'self' })), { $actor: 'devActorRef000000000A' });
});

await check('send_from and reply', async () => {
  const p = await load(probePath);
  assert.equal((await p.run('reef_handle', 0, REPLY, { op: 'send_from', target: A })), true);
  assert.deepEqual(p.sends, [{ from: REPLY, target: A, message: 'hi' }, { from: 'self', target: REPLY, message: 'replied' }]);
  p.sends.length = 0;
  assert.equal((await p.run('reef_handle', 0, null, { op: 'send_from', target: A })), false); // no one to reply to
  assert.deepEqual(p.sends, [{ from: null, target: A, message: 'hi' }]);
});

await check('call and call_reply', async () => {
  const p = await load(probePath);
  p.onCall = (target, message, timeout) => (message === 'big' ? { pad: 'x'.repeat(70000) } : { target, message, timeout });
  assert.deepEqual((await p.run('reef_handle', 0, null, { op: 'call', target: A, message: [1], timeout_ms: 250 })),
    { reply: { target: A, message: [1], timeout: 250 } });
  assert.equal((await p.run('reef_handle', 0, null, { op: 'call', target: A, message: 'big' })).reply.pad.length, 70000);
  const kinds = { '-1': 'Invalid', '-2': 'Limit', '-3': 'Unavailable', '-4': 'Timeout', '-5': 'NoReply', '-6': 'Cycle' };
  for (const [code, kind] of Object.entries(kinds)) {
    p.onCall = () => Number(code);
    assert.equal((await p.run('reef_handle', 0, null, { op: 'call', target: A, message: null })).error, kind);
  }
  assert.equal((await p.run('reef_handle', 0, null, { op: 'call', target: A, message: null, timeout_ms: 0 })).error, 'Invalid');
});

await check('logs, cut at 512 bytes on a character boundary', async () => {
  const p = await load(probePath);
  assert.equal((await p.run('reef_handle', 0, null, { op: 'log', text: 'hello', level: 4 })), false);
  assert.equal((await p.run('reef_handle', 0, null, { op: 'log', text: 'é'.repeat(300), level: 3 })), true);
  assert.deepEqual(p.logs[0], [4, 'hello']);
  assert.equal(p.logs[1][0], 3);
  assert.equal(p.logs[1][1], 'é'.repeat(244) + ' [cut: 600 bytes in all]');
});

await check('a reused actor instance does not grow', async () => {
  const p = await load(probePath);
  (await p.run('reef_handle', 0, null, { op: 'grow', bytes: 3_000_000 }));
  const msg = { op: 'echo', pad: 'y'.repeat(20000), list: Array(500).fill({ k: 'v' }) };
  for (let i = 0; i < 200; i++) (await p.run('reef_handle', i, null, msg));
  const pages = p.pages();
  for (let i = 0; i < 3000; i++) assert.equal((await p.run('reef_handle', i, null, msg)).pad.length, 20000);
  assert.equal(p.pages(), pages);
  // The deepest message an actor gets (depth 32) goes in and out again.
  let deep = 'bottom';
  for (let i = 0; i < 31; i++) deep = [deep];
  assert.deepEqual((await p.run('reef_handle', 0, null, { op: 'echo', deep })).deep, deep);
});

// ---- The examples -----------------------------------------------------------------------
const ex = (name) => path.join(examplesDir, name + '.wasm');
const event = (position, type, data, tags) => ({ position, id: '0190a6c8-7f3e-4c3a-9d2e-' + String(position).padStart(12, '0'),
  type, tags: tags ?? ['account:' + (data?.account_id ?? 'x')], data, timestamp_ms: 1764547200000 + position });

await check('counter: add, send, get and its failures', async () => {
  const c = await load(ex('counter'));
  assert.equal((await c.run('reef_handle', 1, null, { op: 'add', value: 2 })), 3);
  assert.equal((await c.run('reef_handle', 1, null, { op: 'send', value: 5, target: A })), 2);
  assert.deepEqual(c.sends, [{ from: 'self', target: A, message: { op: 'add', value: 5 } }]);
  assert.equal((await c.run('reef_handle', 9, REPLY, { op: 'get' })), 9);
  assert.deepEqual(c.sends[1], { from: 'self', target: REPLY, message: 9 });
  assert.equal((await c.run('reef_handle', 9, null, { op: 'get' })), 9);
  assert.equal(c.sends.length, 2);
  const fails = [
    [1, { op: 'add' }, "counter: op 'add' needs an integer field 'value' (field not found)"],
    [1, { op: 'add', value: 1.5 }, "counter: op 'add' needs an integer field 'value' (wrong kind of value)"],
    [2n ** 63n - 1n, { op: 'add', value: 1 }, 'counter: 9223372036854775807 + 1 overflows int64'],
    [2n ** 63n - 1n, { op: 'send', value: 1, target: A }, 'counter: 9223372036854775807 + 1 overflows int64'],
    [1, { op: 'send', value: 1 }, "counter: op 'send' needs an actor ref field 'target'"],
    [1, { op: 'send', target: A }, "counter: op 'send' needs an integer field 'value' (field not found)"],
    [1, { op: 'mul' }, "counter: unknown op 'mul'; expected add, send or get"],
    [1, { op: 5 }, "counter: message must be a record with a text field 'op' (add, send or get)"],
    [1, 'add', "counter: message must be a record with a text field 'op' (add, send or get)"],
    ['x', { op: 'get' }, 'counter: state must be an integer, got text'],
  ];
  for (const [state, msg, why] of fails) assert.equal((await c.run('reef_handle', state, null, msg)).failed, why);
});

await check('projector balances: 20,000 events on one instance, memory constant', async () => {
  const b = await load(ex('bank_balances'));
  assert.deepEqual((await b.run('reef_query')), [{ types: ['AccountOpened', 'MoneyDeposited', 'MoneyWithdrawn'] }]);
  assert.match(b.sql[0][0], /^CREATE TABLE IF NOT EXISTS accounts/);
  let pages = 0;
  for (let i = 1; i <= 20000; i++) {
    const id = 'acct-' + (i % 50);
    b.rows = [{ balance: i }];
    const e = i % 10 === 1 ? event(i, 'AccountOpened', { account_id: id, owner: 'Ada'.repeat(i % 7) })
      : event(i, i % 3 ? 'MoneyDeposited' : 'MoneyWithdrawn', { account_id: id, amount: i });
    assert.equal((await b.run('reef_project', e)), 0);
    if (i === 1000) pages = b.pages();
    b.sql.length = 0;
  }
  assert.equal(b.pages(), pages);
  // The deepest event a module gets (depth 72: the event, its data, 70 more lists) decodes
  // within the 64 KiB stack the examples are linked with.
  let deep = 0;
  for (let i = 0; i < 70; i++) deep = [deep];
  assert.equal((await b.run('reef_project', event(7, 'MoneyDeposited', { account_id: 'a', deep }))).failed,
    'balances: money event without an integer amount');
  b.rows = [{ balance: 2n ** 63n - 1n }];
  assert.equal((await b.run('reef_project', event(5, 'MoneyDeposited', { account_id: 'a', amount: 1 }))).failed,
    'balances: event 5 (MoneyDeposited of 1) overflows the balance of account a');
  assert.equal((await b.run('reef_project', event(6, 'AccountOpened', null, ['account:shredded']))), 0);
  assert.deepEqual(b.sql.at(-1)[1], ['shredded', null]);
});

await check('effect withdrawal-alert: 20,000 events on one instance, memory constant', async () => {
  const w = await load(ex('bank_withdrawal_alert'));
  assert.deepEqual((await w.run('reef_query')), [{ types: ['MoneyWithdrawn'] }]);
  assert.equal((await w.run('reef_partition_key', event(1, 'MoneyWithdrawn', { account_id: 'a1', amount: 5 }))), 'a1');
  assert.equal((await w.run('reef_partition_key', event(1, 'MoneyWithdrawn', null))), null);
  let pages = 0;
  for (let i = 1; i <= 20000; i++) {
    assert.equal((await w.run('reef_effect', event(i, 'MoneyWithdrawn', { account_id: 'a' + (i % 9), amount: i % 2000 }))), 0);
    if (i === 1000) pages = w.pages();
  }
  assert.equal(w.pages(), pages);
  assert.equal(w.appended.length, 10000);
  assert.deepEqual(w.appended[0], { type: 'LargeWithdrawalNoticed', tags: ['account:a1', 'alert'], data: { account_id: 'a1', amount: 1000, withdrawal_position: 1000 } });
  w.env.LARGE_AMOUNT = '12a';
  assert.equal((await w.run('reef_effect', event(3, 'MoneyWithdrawn', { account_id: 'a', amount: 5 }))).failed, 'LARGE_AMOUNT must be a whole number below 2^63, not "12a"');
  w.env.LARGE_AMOUNT = '9223372036854775808';
  assert.match((await w.run('reef_effect', event(3, 'MoneyWithdrawn', { account_id: 'a', amount: 5 }))).failed, /below 2\^63/);
  w.env.LARGE_AMOUNT = '9223372036854775807';
  assert.equal((await w.run('reef_effect', event(3, 'MoneyWithdrawn', { account_id: 'a', amount: 5 }))), 0);
});

await check('command deposit: init, pages of 256 events, decide; memory constant', async () => {
  const d = await load(ex('bank_deposit'));
  const input = { account_id: 'a1', amount: 5 };
  assert.deepEqual((await d.run('reef_command_init', input)), { query: [{ tags: ['account:a1'] }], state: { open: false, balance: 0 } });
  assert.deepEqual((await d.run('reef_command_init', { amount: 5 })), { query: null, state: { open: false, balance: 0 } });
  const page = [event(1, 'AccountOpened', null, ['account:a1'])];
  for (let i = 2; i <= 256; i++) page.push(event(i, 'MoneyDeposited', { account_id: 'a1', amount: 10 }));
  let state = { open: false, balance: 0 };
  let pages = 0;
  for (let round = 0; round < 300; round++) {
    state = (await d.run('reef_command_fold', state, input, round === 0 ? page : page.slice(1)));
    if (round === 20) pages = d.pages();
  }
  assert.equal(d.pages(), pages);
  assert.deepEqual(state, { open: true, balance: 255 * 10 * 300 });
  assert.deepEqual((await d.run('reef_command_decide', state, input)),
    { events: [{ type: 'MoneyDeposited', tags: ['account:a1'], data: { account_id: 'a1', amount: 5 } }] });
  assert.deepEqual((await d.run('reef_command_decide', { open: true, balance: 2n ** 63n - 2n }, input)),
    { error: 'deposit of 5 would overflow the balance 9223372036854775806 of account a1' });
  assert.equal((await d.run('reef_command_decide', { open: 1 }, input)).failed, 'bank: malformed state');
});

console.log(`${checks} checks passed`);
