// Dashboard render times (issue 17: every page renders in under 1 s with 10,000 actors and
// 1 M events). Starts Reef as `make run` does (scripts/run.sh: the bundled examples and the
// example program), fills it with REEF_BENCH_DASHBOARD_EVENTS events (1,000,000, appended
// 1,000 per request) and REEF_BENCH_DASHBOARD_ACTORS counters (10,000, spawned over 16
// protocol connections), then opens each page in Debian's chromium (playwright-core) and
// measures the time until the page shows its data, the median of 3: `load_ms` opening the page
// in a fresh tab (a renderer started, every asset loaded), `render_ms` going to it from
// another page of the open dashboard (a click in its page list). Next to each, the time of the
// page's main API request alone (the anchor: what the server takes to answer it). Prints
// `bench dashboard ...` lines.
//
//   REEF_SOURCE_DIR=. REEF_BUILD_DIR=build node bench/dashboard_bench.mjs
import { performance } from 'node:perf_hooks';

import { launchBrowser, startReef } from '../tests/browser/harness.mjs';

const EVENTS = Number(process.env.REEF_BENCH_DASHBOARD_EVENTS || 1_000_000);
const ACTORS = Number(process.env.REEF_BENCH_DASHBOARD_ACTORS || 10_000);
const ROUNDS = 3;

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

const reef = await startReef();
const browser = await launchBrowser();
try {
  let started = performance.now();
  const batch = 1000;
  for (let done = 0; done < EVENTS; done += batch) {
    const events = [];
    for (let i = done; i < Math.min(EVENTS, done + batch); ++i) {
      events.push({ type: i % 2 ? 'Ticked' : 'Tocked', tags: [`clock:${i % 1000}`, `n:${i}`], data: { i } });
    }
    await reef.call('POST', '/events/append', { events });
  }
  const appendSeconds = (performance.now() - started) / 1000;

  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  await page.goto(reef.base + '/#/overview');
  started = performance.now();
  const refs = await page.evaluate(async (count) => {
    const sockets = await Promise.all(Array.from({ length: 16 }, () => new Promise((resolve, reject) => {
      const ws = new WebSocket(`ws://${location.host}/`, 'reef.v1');
      ws.onopen = () => resolve(ws);
      ws.onerror = () => reject(new Error('WebSocket failed'));
    })));
    const call = (ws, id, op, args) => new Promise((resolve, reject) => {
      const onMessage = (message) => {
        const answer = JSON.parse(message.data);
        if (answer.id !== id) return;
        ws.removeEventListener('message', onMessage);
        if (answer.ok) resolve(answer.result); else reject(new Error(answer.error.message));
      };
      ws.addEventListener('message', onMessage);
      ws.send(JSON.stringify({ v: 1, id, op, args }));
    });
    const made = [];
    let next = 0;
    await Promise.all(sockets.map(async (ws) => {
      for (let i = next++; i < count; i = next++) {
        made.push((await call(ws, i, 'spawn', { path: 'actors/counter', state: i })).actor);
      }
    }));
    sockets.forEach((ws) => ws.close());
    return made;
  }, ACTORS);
  const spawnSeconds = (performance.now() - started) / 1000;
  // The time of one protocol op answered over an open connection, measured in the browser.
  const protocolMs = (op, args) => page.evaluate(async ([op, args]) => {
    const ws = await new Promise((resolve, reject) => {
      const socket = new WebSocket(`ws://${location.host}/`, 'reef.v1');
      socket.onopen = () => resolve(socket);
      socket.onerror = () => reject(new Error('WebSocket failed'));
    });
    const t = performance.now();
    await new Promise((resolve) => {
      ws.onmessage = () => resolve();
      ws.send(JSON.stringify({ v: 1, id: 1, op, args }));
    });
    const ms = performance.now() - t;
    ws.close();
    return ms;
  }, [op, args]);
  console.log(`bench dashboard setup events=${EVENTS} append_s=${appendSeconds.toFixed(1)} ` +
    `actors=${refs.length} spawn_s=${spawnSeconds.toFixed(1)}`);

  // page, hash, what shows that its data is there, the page's main request (the anchor).
  const headText = EVENTS.toLocaleString('en-US');
  const pages = [
    ['overview', '#/overview', (p) => p.getByLabel('Node summary').locator('dd', { hasText: new RegExp(`^${headText}`) }),
      () => fetch(reef.base + '/metrics').then((r) => r.text())],
    ['actors', '#/actors', (p) => p.getByRole('status').getByText(`${ACTORS.toLocaleString('en-US')} actors`),
      () => protocolMs('ps', {})],
    ['actor', `#/actors/${refs[refs.length - 1]}`, (p) => p.locator('pre.json'),
      () => protocolMs('inspect', { actor: refs[refs.length - 1] })],
    ['modules', '#/modules', (p) => p.getByRole('table', { name: 'Projectors' }).getByRole('link', { name: 'balances', exact: true }),
      () => reef.call('GET', '/projectors')],
    ['module', '#/modules/projectors/balances', (p) => p.getByRole('table', { name: 'Versions' }),
      () => reef.call('GET', '/projectors/balances')],
    ['events', '#/events', (p) => p.getByText(`Head ${headText}`),
      () => reef.call('POST', '/events/read', { backwards: true, limit: 50 })],
    ['events_by_tag', null, null,
      () => reef.call('POST', '/events/read', { backwards: true, limit: 50, query: { items: [{ tags: ['n:7'] }] } })],
    ['programs', '#/programs', (p) => p.getByRole('table', { name: 'Units' }).getByText('counter', { exact: true }),
      () => reef.call('GET', '/units')],
  ];
  for (const [name, hash, ready, request] of pages) {
    const renders = [];
    const loads = [];
    const requests = [];
    for (let round = 0; round < ROUNDS; ++round) {
      if (request) {
        const t = performance.now();
        const inBrowser = await request();
        requests.push(typeof inBrowser === 'number' ? inBrowser : performance.now() - t);
      }
      if (hash === null) {
        // The events page filtered by one tag: its form, then the one match.
        const p = await browser.newPage({ viewport: { width: 1280, height: 900 } });
        await p.goto(reef.base + '/#/events');
        await p.getByText(`Head ${headText}`).waitFor({ timeout: 60_000 });
        const t = performance.now();
        await p.getByLabel('Tags (all of)').fill('n:7');
        await p.getByRole('button', { name: 'Filter' }).click();
        await p.getByText('positions 8 to 8').waitFor({ timeout: 60_000 });
        renders.push(performance.now() - t);
        await p.close();
        continue;
      }
      // A fresh tab opened on the page (the browser starts a renderer, loads every asset).
      const p = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      let t = performance.now();
      await p.goto(reef.base + '/' + hash);
      await ready(p).first().waitFor({ timeout: 60_000 });
      loads.push(performance.now() - t);
      // From another page of the open dashboard, as a click in its page list does.
      await p.evaluate((away) => { location.hash = away; }, hash === '#/programs' ? '#/events' : '#/programs');
      await p.getByRole('heading', { level: 1 }).first().waitFor();
      await p.waitForTimeout(200);
      t = performance.now();
      await p.evaluate((to) => { location.hash = to; }, hash);
      await ready(p).first().waitFor({ timeout: 60_000 });
      renders.push(performance.now() - t);
      await p.close();
    }
    console.log(`bench dashboard page=${name} load_ms=${loads.length ? median(loads).toFixed(0) : 'na'} ` +
      `render_ms=${median(renders).toFixed(0)} ` +
      `request_ms=${requests.length ? median(requests).toFixed(1) : 'na'}`);
  }
  await context.close();
} finally {
  await browser.close();
  await reef.stop();
}
