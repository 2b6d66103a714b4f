// The SDK against the real Reef (build/reef; REEF_BIN overrides): `reef wasm inspect` on every
// module, the counter through `reef wasm handle`, the program unit through `reef deploy` and
// `reef invoke`, and the AssemblyScript bank side by side with the C bank (build/guests/bank_*)
// on two servers fed the same requests: the same answers, events and rows. Skipped when the
// binary is missing.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, copyFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startReef } from '../../../tests/support/reef_server.mjs';
import { buildDir, buildModules, repoDir } from './modules.mjs';

const reef = process.env.REEF_BIN ?? join(buildDir, 'reef');
const cGuests = join(buildDir, 'guests');
const skip = existsSync(reef) ? false : `no reef binary at ${reef}`;
const REF_A = 'V1StGXR8_Z5jdHi6B-myT';

let wasm;
const servers = [];
before(async () => { if (!skip) wasm = await buildModules('modules'); }, { timeout: 300000 });
after(async () => { for (const s of servers) await s.stop(); });

const run = (...args) => {
  try { return { code: 0, out: execFileSync(reef, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }) }; }
  catch (e) { return { code: e.status, out: `${e.stdout}${e.stderr}` }; }
};

test('reef wasm inspect: every module is of its kind, with no problem', { skip }, () => {
  const kinds = { counter: 'actor; program unit handler: reef_handle', program_counter: 'program unit handler: counter_handle',
    open_account: 'command', deposit: 'command', withdraw: 'command', balances: 'projector', withdrawal_alert: 'effect',
    probe: 'actor; program unit handlers: probe_unit, reef_handle', command_probe: 'command', projector_probe: 'projector' };
  for (const [name, kind] of Object.entries(kinds)) {
    const { code, out } = run('wasm', 'inspect', wasm[name]);
    assert.equal(code, 0, out);
    assert.match(out, new RegExp(`^kind +${kind.replace(/[()]/g, '\\$&')}$`, 'm'), `${name}:\n${out}`);
    assert.match(out, /^abi +reef v1 \(reef_abi_version\(\) = 1\)$/m, name);
    assert.doesNotMatch(out, /^ +not a reef v1/m, name);
  }
});

test('reef wasm handle: the counter adds, sends, replies and fails like the C counter', { skip }, () => {
  const handle = (file, ...args) => run('wasm', 'handle', file, ...args);
  const same = (args, want) => {
    const c = handle(join(cGuests, 'counter.wasm'), ...args), as = handle(wasm.counter, ...args);
    const lines = (out) => out.split('\n').filter((l) => /^(send|commit|fail|failed)/.test(l)).map((l) => l.replace(/ \(charged.*/, ''));
    assert.equal(as.code, c.code, as.out);
    assert.deepEqual(lines(as.out).map((l) => l.replace(/ \([^()]*counter\.ts:\d+:\d+\)$/, '')), lines(c.out), as.out);
    assert.deepEqual(lines(as.out).filter((l) => !l.startsWith('fail ')), want.filter((l) => !l.startsWith('fail ')));
  };
  same(['0', '{"op":"add","value":5}'], ['commit   new state 5']);
  same(['10', '{"op":"add","value":-3}'], ['commit   new state 7']);
  same(['0', `{"op":"send","value":5,"target":{"$actor":"${REF_A}"}}`], [`send to @${REF_A}: {"op":"add","value":5}`, 'commit   new state 1']);
  same(['5', '{"op":"get"}', '--sender', REF_A], [`send to @${REF_A}: 5`, 'commit   new state 5']);
  same(['5', '{"op":"get"}'], ['commit   new state 5']);
  for (const [state, message] of [['0', '{"op":"mul"}'], ['0', '7'], ['0', '{"op":"add"}'], ['0', '{"op":"add","value":1.5}'],
    ['0', '{"op":"send","value":1}'], ['"zero"', '{"op":"add","value":1}'], ['9223372036854775807', '{"op":"add","value":1}']]) {
    same([state, message], ['failed   state stays ' + state + '; no send is delivered']);
  }
});

// ---- Servers -------------------------------------------------------------------------------

// A fresh `reef serve` (tests/support/reef_server.mjs), with short effect retries.
async function startServer() {
  const server = await startReef({
    bare: true, args: ['--ephemeral', '--effect-backoff-initial-ms', '50', '--effect-backoff-max-ms', '200'],
  });
  servers.push(server);
  return server;
}

async function http(server, method, path, body, headers = {}) {
  const sent = typeof body === 'string' ? new TextEncoder().encode(body) : body;
  const { status, body: json } = await server.request(method, path, sent, headers);
  return { status, json };
}

async function upload(server, kind, name, file) {
  const up = await http(server, 'POST', `/${kind}/${name}/versions/1.0.0`, (await import('node:fs')).readFileSync(file));
  assert.ok(up.status === 201 || up.status === 200, JSON.stringify(up.json));
  const act = await http(server, 'PUT', `/${kind}/${name}/active`, { version: '1.0.0' });
  assert.equal(act.status, 200, JSON.stringify(act.json));
}

async function until(what, fn, ms = 20000) {
  what = `${currentVariant}: ${what}`;
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

let currentVariant = '';
const BANK = {
  c: { 'open-account': 'bank_open_account', deposit: 'bank_deposit', withdraw: 'bank_withdraw', balances: 'bank_balances', 'withdrawal-alert': 'bank_withdrawal_alert' },
  as: { 'open-account': 'open_account', deposit: 'deposit', withdraw: 'withdraw', balances: 'balances', 'withdrawal-alert': 'withdrawal_alert' },
};

/** The requests both banks get, in order: [command, input]. */
function requests() {
  const big = 'é'.repeat(124); // 248 bytes: the longest account id
  return [
    ['open-account', { account_id: 'a1', owner: 'Ada' }],
    ['open-account', { account_id: 'a1', owner: 'Ada' }],
    ['open-account', { account_id: 'a2' }],
    ['open-account', { account_id: 'a2', owner: '' }],
    ['open-account', { account_id: 'a2', owner: 5 }],
    ['open-account', [1]],
    ['open-account', 42],
    ['open-account', { account_id: '', owner: 'B' }],
    ['open-account', { account_id: 7, owner: 'B' }],
    ['open-account', { account_id: 'a\u0001b', owner: 'B' }],
    ['open-account', { account_id: 'é'.repeat(125), owner: 'B' }],
    ['open-account', { account_id: big, owner: 'Bé' }],
    ['open-account', { account_id: 'a2', owner: 'Bob', amount: 'ignored' }],
    ['deposit', { account_id: 'a1', amount: 100 }],
    ['deposit', { account_id: 'nope', amount: 5 }],
    ['deposit', { account_id: 'a1', amount: 0 }],
    ['deposit', { account_id: 'a1', amount: -5 }],
    ['deposit', { account_id: 'a1', amount: 1.5 }],
    ['deposit', { account_id: 'a1', amount: '5' }],
    ['deposit', { account_id: 'a1', amount: 1000000000001 }],
    ['deposit', { account_id: 'a1' }],
    ['deposit', { account_id: 'a1', amount: 5, owner: 6 }],
    ['deposit', { account_id: big, amount: 1000000000000 }],
    ['withdraw', { account_id: 'a1', amount: 500 }],
    ['withdraw', { account_id: 'nope', amount: 5 }],
    ['withdraw', { account_id: 'a1', amount: 0 }],
    ['deposit', { account_id: 'a1', amount: 5000 }],
    ['withdraw', { account_id: 'a1', amount: 1500 }],
    ['withdraw', { account_id: 'a1', amount: 999 }],
    ['withdraw', { account_id: 'a1', amount: 1000 }],
    ['withdraw', { account_id: 'a1', amount: 1602 }],
    ['withdraw', { account_id: big, amount: 600 }],
    ['deposit', { account_id: 'a2', amount: 50 }],
    ['withdraw', { account_id: 'a2', amount: 50 }],
  ];
}

test('the AssemblyScript bank gives the C bank\'s answers, events and rows', { skip, timeout: 120000 }, async () => {
  const results = {};
  for (const variant of ['c', 'as']) {
    currentVariant = variant;
    const server = await startServer();
    const file = (name) => (variant === 'c' ? join(cGuests, `${BANK.c[name]}.wasm`) : wasm[BANK.as[name]]);
    for (const name of ['open-account', 'deposit', 'withdraw']) await upload(server, 'commands', name, file(name));
    await upload(server, 'projectors', 'balances', file('balances'));
    const answers = [];
    let k = 0;
    for (const [command, input] of requests()) {
      answers.push(await http(server, 'POST', `/commands/${command}/execute`, input, { 'Idempotency-Key': `key-${k++}` }));
    }
    // Events appended by hand: a deposit that leaves no room for the command's, then one that
    // overflows the fold (the command fails) and the projector (it stops).
    const hand = (amount) => http(server, 'POST', '/events/append', // amount: digits, beyond JS numbers
      `{"events": [{"type": "MoneyDeposited", "tags": ["account:huge"], "data": {"account_id": "huge", "amount": ${amount}}}]}`);
    await http(server, 'POST', '/commands/open-account/execute', { account_id: 'huge', owner: 'H' }, { 'Idempotency-Key': 'huge' });
    await hand(9223372036854775000n.toString());
    answers.push(await http(server, 'POST', '/commands/deposit/execute', { account_id: 'huge', amount: 1000 }, { 'Idempotency-Key': 'huge-1' }));
    // The effect, activated now, handles every withdrawal so far; with LARGE_AMOUNT unset (1000).
    await upload(server, 'effects', 'withdrawal-alert', file('withdrawal-alert'));
    const notices = async (n) => until(`${n} notices`, async () => {
      const r = await http(server, 'POST', '/events/read', { query: { items: [{ types: ['LargeWithdrawalNoticed'] }] } });
      return r.json.events.length >= n ? r.json.events : null;
    });
    await notices(2);
    // LARGE_AMOUNT: a bad value fails the effect (retried), a good one heals it.
    await http(server, 'PUT', '/effects/withdrawal-alert/env/LARGE_AMOUNT', { value: '12x' });
    answers.push(await http(server, 'POST', '/commands/withdraw/execute', { account_id: 'a1', amount: 700 }, { 'Idempotency-Key': 'w700' }));
    const failing = await until('the effect to fail on LARGE_AMOUNT', async () => {
      const s = (await http(server, 'GET', '/effects/withdrawal-alert')).json.status;
      return s && s.error.includes('LARGE_AMOUNT') ? s.error : null;
    });
    await http(server, 'PUT', '/effects/withdrawal-alert/env/LARGE_AMOUNT', { value: '600' });
    const noticed = await notices(3);
    const last = (await http(server, 'POST', '/events/read', { query: { items: [{ types: ['AccountOpened', 'MoneyDeposited', 'MoneyWithdrawn'] }] }, backwards: true, limit: 1 })).json.events[0].position;
    await until('the projector to catch up', async () => (await http(server, 'GET', '/projectors/balances')).json.status.position >= last);
    const rows = (await http(server, 'POST', '/projectors/balances/query', { sql: 'SELECT * FROM accounts ORDER BY account_id' })).json.rows;
    // Crypto-shredding: the owner reads as null after a replay.
    await http(server, 'DELETE', '/crypto-keys/account:a1');
    await http(server, 'POST', '/projectors/balances/replay');
    const shredded = await until('the replayed projector', async () => {
      const r = await http(server, 'POST', '/projectors/balances/query', { sql: "SELECT * FROM accounts WHERE account_id = 'a1'" });
      return r.status === 200 && r.json.rows?.[0]?.owner === null && r.json.rows[0].balance !== 0 ? r.json.rows : null;
    });
    // Overflow: the fold fails the command (500), the projector stops at the event.
    await hand('1000');
    await hand('9223372036854775000');
    answers.push(await http(server, 'POST', '/commands/deposit/execute', { account_id: 'huge', amount: 1 }));
    const stopped = await until('the projector to stop', async () => {
      const s = (await http(server, 'GET', '/projectors/balances')).json.status;
      return s.state === 'failed' ? s : null;
    });
    const events = (await http(server, 'POST', '/events/read', {})).json.events;
    results[variant] = { answers, rows, shredded, events, noticed, failing, stopped };
  }
  const { c, as } = results;
  if (process.env.VERBOSE) {
    for (const [i, a] of as.answers.entries()) console.log(a.status, JSON.stringify(i < requests().length ? requests()[i] : 'extra'), JSON.stringify(a.json.error?.message ?? a.json.events?.map((e) => [e.type, e.data])));
    console.log(JSON.stringify({ rows: as.rows, shredded: as.shredded, failing: as.failing, stopped: as.stopped.error, c_stopped: c.stopped.error }, null, 1));
  }
  const where = / \([^()]*\.ts:\d+:\d+\)/;
  // Answers: status and body, ids included (Idempotency-Key makes them derive from the key).
  assert.equal(as.answers.length, c.answers.length);
  for (let i = 0; i < c.answers.length; i++) {
    const label = i < requests().length ? JSON.stringify(requests()[i]) : `extra ${i}`;
    if (c.answers[i].status === 500) {
      assert.equal(as.answers[i].status, 500, label);
      assert.equal(as.answers[i].json.error.message.replace(where, ''), c.answers[i].json.error.message, label);
    } else {
      assert.deepEqual(as.answers[i], c.answers[i], label);
    }
  }
  // Events: everything but the timestamps, the ciphertexts, and the random ids of events
  // appended by hand (those of commands derive from the Idempotency-Key).
  const norm = (e) => {
    const { metadata, data_base64: b64, ...rest } = e;
    const { timestamp_ms: ts, ...meta } = metadata ?? {};
    if (meta.idempotency_key === undefined) delete rest.id;
    return { ...rest, metadata: meta, encrypted: b64 !== undefined };
  };
  const byWithdrawal = (a, b) => a.data.withdrawal_position - b.data.withdrawal_position;
  const plain = (r) => r.events.filter((e) => e.type !== 'LargeWithdrawalNoticed').map(norm);
  assert.deepEqual(plain(as), plain(c));
  // Effects are at-least-once: a restart (an env change) may notice a withdrawal twice.
  const notice = (r) => {
    const seen = new Map();
    for (const e of r.events.filter((x) => x.type === 'LargeWithdrawalNoticed').sort(byWithdrawal)) {
      const { position, id, ...rest } = norm(e);
      seen.set(e.data.withdrawal_position, rest);
    }
    return [...seen.values()];
  };
  assert.deepEqual(notice(as), notice(c));
  assert.equal(notice(as).length, 3);
  assert.deepEqual(as.rows, c.rows);
  assert.deepEqual(as.shredded, c.shredded);
  assert.equal(as.failing.replace(where, ''), c.failing);
  assert.equal(as.stopped.error.replace(where, ''), c.stopped.error);
  assert.equal(as.stopped.position, c.stopped.position);
});

test('reef deploy + reef invoke: the AssemblyScript program unit', { skip, timeout: 60000 }, async () => {
  const server = await startServer();
  const dir = mkdtempSync(join(tmpdir(), 'reef-as-program-'));
  copyFileSync(join(repoDir, 'examples', 'assemblyscript', 'program', 'program.json'), join(dir, 'program.json'));
  copyFileSync(wasm.program_counter, join(dir, 'counter.wasm'));
  const cli = (...args) => run('--connect', server.address, ...args);
  const deployed = cli('deploy', dir);
  assert.equal(deployed.code, 0, deployed.out);
  assert.deepEqual(JSON.parse(cli('invoke', 'counter', '{"op": "add"}').out), { count: 1 });
  assert.deepEqual(JSON.parse(cli('invoke', 'counter', '{"op": "add"}').out), { count: 2 });
  assert.deepEqual(JSON.parse(cli('invoke', 'counter', '{"op": "mul"}').out), { error: 'counter: unknown op "mul"; expected add, get or fail' });
  assert.deepEqual(JSON.parse(cli('invoke', 'counter', '{"op": "get"}').out), { count: 2 });
  rmSync(dir, { recursive: true, force: true });
});
