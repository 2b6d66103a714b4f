// Actors written in C, AssemblyScript and Rust in one live image (issue 18): Reef started as
// `make run` starts it (scripts/run.sh), which writes the AssemblyScript and Rust counters
// (kind wasm) next to the bundled C one and uploads every language's bank modules. The three
// counters pass messages around a ring, the C asker calls each of them and gets its count, and
// a message a counter does not understand fails it with its own reason. Then a program of three
// units, the example program's counter in each language (handlers exported under their own
// name), answers the same replies to the same invocations.
//
// Environment: REEF_SOURCE_DIR, REEF_BUILD_DIR (tests/sdk/CMakeLists.txt).
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

import { buildDir, startReef } from '../support/reef_server.mjs';

const COUNTERS = { c: 'actors/counter', assemblyscript: 'actors/counter-as', rust: 'actors/counter-rs' };

test('counters in three languages exchange messages and answer calls', async () => {
  const reef = await startReef();
  try {
    // make run wrote the wasm counters and uploaded the banks of all three languages.
    const sources = (await reef.cli('sources')).sources;
    for (const [language, path] of Object.entries(COUNTERS)) {
      const source = sources.find((s) => s.path === path);
      assert.ok(source, `${path} missing in ${JSON.stringify(sources)}`);
      assert.equal(source.kind, language === 'c' ? 'c' : 'wasm');
    }
    for (const suffix of ['', '-as', '-rs']) {
      for (const route of [`/commands/deposit${suffix}`, `/projectors/balances${suffix}`,
        `/effects/withdrawal-alert${suffix}`]) {
        const module = await reef.call('GET', route);
        assert.equal(module.versions.length, 1, `${route}: ${JSON.stringify(module)}`);
      }
    }

    // A ring: C sends 1 to AssemblyScript, AssemblyScript 2 to Rust, Rust 3 to C; each sender
    // adds 1 for the send itself.
    // Refs as the CLI takes them, with their '@' (a bare NanoID may begin with '-').
    const spawn = async (path, state) => `@${(await reef.cli('spawn', path, state)).actor}`;
    const c = await spawn(COUNTERS.c, '0');
    const as = await spawn(COUNTERS.assemblyscript, '10');
    const rs = await spawn(COUNTERS.rust, '100');
    const send = (from, value, to) => reef.cli('send', from,
      JSON.stringify({ op: 'send', value, target: { $actor: to.slice(1) } }));
    await send(c, 1, as);
    await send(as, 2, rs);
    await send(rs, 3, c);
    await reef.cli('tick', '20', '1000000');
    const state = async (ref) => (await reef.cli('inspect', ref)).state;
    assert.equal(await state(c), 0 + 1 + 3);
    assert.equal(await state(as), 10 + 1 + 1);
    assert.equal(await state(rs), 100 + 1 + 2);

    // The C asker calls each counter ({"op": "get"}) and keeps the reply as its state; the
    // counters in all three languages answer a caller.
    for (const counter of [c, as, rs]) {
      const asker = await spawn('actors/asker', '0');
      await reef.cli('send', asker, JSON.stringify({ op: 'ask', target: { $actor: counter.slice(1) } }));
      let answer;
      for (let i = 0; i < 50 && answer === undefined; ++i) {
        await reef.cli('tick', '5', '1000000');
        const snapshot = await reef.cli('inspect', asker);
        if (snapshot.status === 'idle' && snapshot.state !== 0) answer = snapshot.state;
      }
      assert.equal(answer, await state(counter), `the asker's answer from ${counter}`);
    }

    // A message no counter understands fails it, with the counter's own reason, and changes
    // nothing.
    for (const [language, ref] of [['assemblyscript', as], ['rust', rs]]) {
      await reef.cli('send', ref, JSON.stringify({ op: 'jump' }));
      await reef.cli('tick', '5', '1000000');
      const snapshot = await reef.cli('inspect', ref);
      assert.equal(snapshot.status, 'failed', `${language}: ${JSON.stringify(snapshot)}`);
      assert.match(JSON.stringify(snapshot.failure), /unknown op/, `${language}: ${JSON.stringify(snapshot.failure)}`);
    }
    assert.equal(await state(as), 12);
    assert.equal(await state(rs), 103);
  } finally {
    await reef.stop();
  }
});

test('program units in three languages give the same replies', async () => {
  const reef = await startReef({ bare: true });
  const dir = mkdtempSync(path.join(tmpdir(), 'reef-program-'));
  try {
    const modules = {};
    const units = {};
    for (const [language, file] of [['c', 'program_counter'], ['as', 'program_counter_as'],
      ['rs', 'program_counter_rs']]) {
      copyFileSync(path.join(buildDir, 'guests', `${file}.wasm`), path.join(dir, `${language}.wasm`));
      modules[language] = `${language}.wasm`;
      units[`counter-${language}`] = { module: language, handler: 'counter_handle',
        placement: 'singleton', initial_state: 0 };
    }
    writeFileSync(path.join(dir, 'program.json'),
      JSON.stringify({ program: 'languages', modules, units }));
    await reef.cli('deploy', dir);
    const replies = {};
    for (const language of ['c', 'as', 'rs']) {
      replies[language] = [];
      for (const message of [{ op: 'add' }, { op: 'add' }, { op: 'get' }, { op: 'jump' }, 'x']) {
        const answer = await reef.cli('invoke', `counter-${language}`, JSON.stringify(message));
        replies[language].push(answer);
      }
    }
    assert.deepEqual(replies.c.slice(0, 3).map((a) => a.result), [{ count: 1 }, { count: 2 }, { count: 2 }],
      JSON.stringify(replies.c));
    assert.match(JSON.stringify(replies.c[3]), /error/);
    assert.deepEqual(replies.as, replies.c, 'AssemblyScript');
    assert.deepEqual(replies.rs, replies.c, 'Rust');
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await reef.stop();
  }
});
