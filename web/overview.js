// Overview: the node at a glance, refreshed every 2 s from GET /status, /reactors, /units,
// /programs/current, /events/head, the module lists and /metrics; rates and the charts come
// from the differences between two refreshes, kept for the last 5 minutes.
import { getJson, getJsonOr404, getText, metricSum, parseMetrics } from './api.js';
import { duration, el, number, pill } from './format.js';

const REFRESH_MS = 2000;
const WINDOW_S = 300;
// Counters whose increase is an error a user should look at: metric, labels kept, what it is.
const ERROR_COUNTERS = [
  ['reef_module_failures_total', () => true, (l) => `${l.kind} ${l.name}: failure`],
  ['reef_unit_rejected_total', () => true, (l) => `unit ${l.unit}: invocation refused (inbox full)`],
  ['reef_unit_poisoned', () => true, (l) => `unit ${l.unit}: instance poisoned`],
  ['reef_native_compile_failures_total', () => true, () => 'native compile failed'],
  ['reef_http_responses_total', (l) => l.code >= '500', (l) => `HTTP ${l.code} answers`],
];

export function render(main) {
  const cards = el('dl', { class: 'cards', 'aria-label': 'Node summary' });
  const charts = el('div', { class: 'charts' });
  const reactors = el('div');
  const attention = el('div');
  const errors = el('div');
  main.append(
    el('h1', {}, 'Overview'), cards,
    el('h2', {}, 'Last 5 minutes'), charts,
    el('h2', {}, 'Reactors'), reactors,
    el('h2', {}, 'Modules that need attention'), attention,
    el('h2', {}, 'Errors in the last 5 minutes'), errors);

  const series = {
    throughput: makeChart(charts, 'Throughput (per second)',
      ['events appended', 'unit invocations', 'command executions']),
    latency: makeChart(charts, 'Latency of HTTP writes (ms)', ['p50', 'p99']),
    lag: makeChart(charts, 'Projector and effect lag (events)', ['largest lag']),
  };
  const history = [];   // {t, head, counters...} per refresh
  const errorLog = [];  // {t, text, count}
  let previous = null;
  let stopped = false;
  let timer = 0;

  async function refresh() {
    try {
      const [status, reactorList, units, program, head, modules, metricsText] = await Promise.all([
        getJson('/status'), getJson('/reactors'), getJsonOr404('/units', { units: [] }),
        getJsonOr404('/programs/current', null), getJson('/events/head'),
        Promise.all(['commands', 'projectors', 'effects'].map((k) => getJson('/' + k))),
        getText('/metrics'),
      ]);
      if (stopped) return;
      const metrics = parseMetrics(metricsText);
      const now = Date.now() / 1000;
      const sample = {
        t: now, head: head.head,
        invocations: metricSum(metrics, 'reef_unit_invocations_total'),
        executions: metricSum(metrics, 'reef_command_executions_total'),
        buckets: latencyBuckets(metrics),
        lag: Math.max(0, ...(metrics.get('reef_module_lag_positions') || []).map((s) => s.value)),
        errors: errorCounts(metrics),
      };
      const all = modules.flatMap((m) => m.modules);
      renderCards(cards, status, reactorList.reactors, units, program, head.head, all,
        rate(previous, sample, 'head'), errorLog);
      renderReactors(reactors, reactorList.reactors, previous, sample, metrics);
      renderAttention(attention, all);
      if (previous) {
        noteErrors(errorLog, previous.errors, sample.errors, now);
        history.push({
          t: now,
          throughput: [rate(previous, sample, 'head'), rate(previous, sample, 'invocations'),
            rate(previous, sample, 'executions')],
          latency: quantiles(previous.buckets, sample.buckets),
          lag: [sample.lag],
        });
        while (history.length && history[0].t < now - WINDOW_S) history.shift();
        while (errorLog.length && errorLog[0].t < now - WINDOW_S) errorLog.shift();
        for (const [name, chart] of Object.entries(series)) chart.update(history, name);
      }
      renderErrors(errors, errorLog);
      previous = sample;
    } catch (e) {
      if (!stopped && e.status !== 401) {
        cards.replaceChildren(el('p', { class: 'error', role: 'alert' }, e.message));
      }
    }
    if (!stopped) timer = setTimeout(refresh, REFRESH_MS);
  }
  refresh();
  return () => {
    stopped = true;
    clearTimeout(timer);
    for (const chart of Object.values(series)) chart.destroy();
  };
}

function rate(previous, sample, key) {
  if (!previous || sample.t <= previous.t) return 0;
  return Math.max(0, sample[key] - previous[key]) / (sample.t - previous.t);
}

function card(term, value, detail) {
  return el('div', { class: 'card' }, el('dt', {}, term),
    el('dd', {}, value, detail ? el('small', {}, ' ', detail) : null));
}

function renderCards(cards, status, reactors, units, program, head, modules, appendRate, errorLog) {
  const up = reactors.filter((r) => r.liveness === 'up').length;
  const active = modules.filter((m) => m.active_version).length;
  const instances = units.units.reduce((a, u) => a + u.instances, 0);
  const errors = errorLog.reduce((a, e) => a + e.count, 0);
  cards.replaceChildren(
    card('Uptime', duration(status.uptime_seconds)),
    card('Version', status.version),
    card('Engine tier', status.engine),
    card('Storage', status.durable ? 'durable' : 'ephemeral', status.durable ? '' : 'in memory only'),
    card('Reactors', `${up} / ${reactors.length} up`),
    card('Event store head', number(head), `${number(appendRate, 1)} events/s`),
    card('Modules', `${active} active`, `of ${modules.length}`),
    card('Program', program ? program.program : 'none',
      program ? `generation ${program.generation}` : ''),
    card('Units', number(units.units.length), `${number(instances)} instances`),
    card('Errors', number(errors), 'last 5 minutes'));
}

function renderReactors(container, reactors, previous, sample, metrics) {
  const ran = new Map((metrics.get('reef_reactor_tasks_run_total') || [])
    .map((s) => [s.labels.reactor, s.value]));
  const before = previous ? previous.reactorTasks : null;
  sample.reactorTasks = ran;
  const seconds = previous ? sample.t - previous.t : 0;
  container.replaceChildren(el('table', { 'aria-label': 'Reactors' },
    el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, 'Reactor'),
      el('th', { scope: 'col' }, 'State'), el('th', { scope: 'col', class: 'num' }, 'Actors'),
      el('th', { scope: 'col', class: 'num' }, 'Queue depth'),
      el('th', { scope: 'col', class: 'num' }, 'Tasks/s'))),
    el('tbody', {}, reactors.map((r) => {
      const id = String(r.id);
      const tasks = before && before.has(id) && seconds > 0
        ? Math.max(0, ran.get(id) - before.get(id)) / seconds : null;
      return el('tr', {}, el('td', {}, `#${r.id}`), el('td', {}, pill(r.liveness)),
        el('td', { class: 'num' }, number(r.actors)),
        el('td', { class: 'num' }, number(r.tasks_waiting)),
        el('td', { class: 'num' }, tasks === null ? '–' : number(tasks, 1)));
    }))));
}

function renderAttention(container, modules) {
  const troubled = modules.filter((m) => m.active_version && m.status &&
    (!m.status.up || m.status.error || m.status.backoff_seconds > 0));
  if (troubled.length === 0) {
    container.replaceChildren(el('p', { class: 'muted' }, 'None: every active module is up.'));
    return;
  }
  container.replaceChildren(el('ul', { class: 'errors' }, troubled.map((m) => el('li', {},
    el('a', { href: `#/modules/${m.kind}s/${encodeURIComponent(m.name)}` }, `${m.kind} ${m.name}`), ' ',
    pill(m.status.state), ' ',
    m.status.backoff_seconds > 0 ? `retrying in ${number(m.status.backoff_seconds, 1)} s · ` : '',
    m.status.error || ''))));
}

function errorCounts(metrics) {
  const counts = new Map();
  for (const [name, keep, describe] of ERROR_COUNTERS) {
    for (const s of metrics.get(name) || []) {
      if (keep(s.labels)) counts.set(describe(s.labels), (counts.get(describe(s.labels)) || 0) + s.value);
    }
  }
  return counts;
}

function noteErrors(log, before, after, t) {
  for (const [text, value] of after) {
    const increase = value - (before.get(text) || 0);
    if (increase > 0) log.push({ t, text, count: increase });
  }
}

function renderErrors(container, log) {
  if (log.length === 0) {
    container.replaceChildren(el('p', { class: 'muted' }, 'None.'));
    return;
  }
  container.replaceChildren(el('ul', { class: 'errors' }, log.slice().reverse().map((e) =>
    el('li', {}, el('span', { class: 'mono' }, new Date(e.t * 1000).toLocaleTimeString()), ' ',
      e.text, e.count > 1 ? ` (×${number(e.count)})` : ''))));
}

// reef_http_request_duration_seconds summed over the routes that change something (commands,
// invocations, appends: not GET, which this page's own refreshes are, nor requests no route
// took): Map le -> count.
function latencyBuckets(metrics) {
  const buckets = new Map();
  for (const s of metrics.get('reef_http_request_duration_seconds_bucket') || []) {
    if (s.labels.route.startsWith('GET ') || s.labels.route === 'none') continue;
    buckets.set(s.labels.le, (buckets.get(s.labels.le) || 0) + s.value);
  }
  return buckets;
}

// p50 and p99 in ms of the requests between two scrapes (upper bucket bounds); null for none.
function quantiles(before, after) {
  const bounds = [...after.keys()].filter((le) => le !== '+Inf').map(Number).sort((a, b) => a - b);
  const delta = (le) => (after.get(le) || 0) - (before.get(le) || 0);
  const total = delta('+Inf');
  if (!(total > 0)) return [null, null];
  const at = (q) => {
    for (const b of bounds) {
      if (delta(String(b)) >= q * total) return b * 1000;
    }
    return bounds.length ? bounds[bounds.length - 1] * 1000 : null;
  };
  return [at(0.5), at(0.99)];
}

// A uPlot time-series chart in `parent`; update(history, key) plots history[i][key].
function makeChart(parent, title, labels) {
  const box = el('figure', { class: 'chart', 'aria-label': title });
  const heading = el('h3', {}, title);
  box.append(heading);
  parent.append(box);
  const colors = ['#0b6bcb', '#1a7f37', '#cf222e'];
  const options = {
    width: Math.max(300, box.clientWidth - 16), height: 160, legend: { show: true },
    scales: {
      // The last 5 minutes, whatever the points; counts from 0.
      x: { time: true, range: () => [Date.now() / 1000 - WINDOW_S, Date.now() / 1000] },
      y: { range: (u, min, max) => [0, Math.max(1, max || 0) * 1.1] },
    },
    series: [{}, ...labels.map((label, i) => ({ label, stroke: colors[i], width: 1.5 }))],
    axes: [{ stroke: '#888' }, { stroke: '#888', size: 50 }],
  };
  const plot = new window.uPlot(options, [[], ...labels.map(() => [])], box);
  const resize = () => plot.setSize({ width: Math.max(300, box.clientWidth - 16), height: 160 });
  window.addEventListener('resize', resize);
  return {
    update(history, key) {
      plot.setData([history.map((h) => h.t), ...labels.map((_, i) => history.map((h) => h[key][i]))]);
    },
    destroy() { window.removeEventListener('resize', resize); plot.destroy(); },
  };
}
