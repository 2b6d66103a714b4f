// Event-sourced modules: commands, projectors and effects (GET /{kind}) with their active
// version, state, position, lag (reef_module_lag_positions), failures, backoff and last error,
// refreshed every 2 s; one module's page is module.js.
import { getJson, getText, parseMetrics } from './api.js';
import { el, keepFocus, number, pill } from './format.js';

export const KINDS = [['commands', 'Commands'], ['projectors', 'Projectors'], ['effects', 'Effects']];

// Lag by "kind/name" from GET /metrics.
export async function lags() {
  const metrics = parseMetrics(await getText('/metrics'));
  return new Map((metrics.get('reef_module_lag_positions') || [])
    .map((s) => [`${s.labels.kind}s/${s.labels.name}`, s.value]));
}

function table(kind, title, modules, lag) {
  const log = kind !== 'commands';
  const headers = ['Name', 'Active version', 'Versions', 'State', ...(log ? ['Position', 'Lag'] : []),
    'Failures', ...(kind === 'effects' ? ['Backoff'] : []), 'Last error'];
  const numeric = new Set(['Versions', 'Position', 'Lag', 'Failures', 'Backoff']);
  return el('table', { 'aria-label': title },
    el('thead', {}, el('tr', {}, headers.map((h) => el('th', { scope: 'col', class: numeric.has(h) ? 'num' : null }, h)))),
    el('tbody', {}, modules.length === 0 ? el('tr', {}, el('td', { colspan: headers.length, class: 'muted' }, 'None uploaded.')) :
      modules.map((m) => {
        const s = m.status || {};
        return el('tr', {},
          el('td', {}, el('a', { href: `#/modules/${kind}/${encodeURIComponent(m.name)}` }, m.name)),
          el('td', {}, m.active_version || el('span', { class: 'muted' }, 'none')),
          el('td', { class: 'num' }, number(m.versions.length)),
          el('td', {}, m.status ? pill(s.state) : pill('inactive')),
          ...(log ? [el('td', { class: 'num' }, m.status ? number(s.position) : '–'),
            el('td', { class: 'num' }, m.status ? number(lag.get(`${kind}/${m.name}`)) : '–')] : []),
          el('td', { class: 'num' }, m.status ? number(s.failures) : '–'),
          ...(kind === 'effects' ? [el('td', { class: 'num' }, s.backoff_seconds ? `${number(s.backoff_seconds, 1)} s` : '–')] : []),
          el('td', { class: 'error-text' }, s.error || ''));
      })));
}

export function render(main) {
  const sections = el('div');
  const problem = el('p', { class: 'error', role: 'alert' });
  main.append(el('h1', {}, 'Event-sourced modules'), problem, sections);
  let stopped = false;
  let timer = 0;
  const refresh = async () => {
    try {
      const [lists, lag] = await Promise.all([
        Promise.all(KINDS.map(([kind]) => getJson('/' + kind))), lags()]);
      if (stopped) return;
      problem.textContent = '';
      keepFocus(sections, () => sections.replaceChildren(...KINDS.flatMap(([kind, title], i) =>
        [el('h2', {}, title), table(kind, title, lists[i].modules, lag)])));
    } catch (e) {
      if (!stopped) problem.textContent = e.message;
    }
    if (!stopped) timer = setTimeout(refresh, 2000);
  };
  refresh();
  return () => { stopped = true; clearTimeout(timer); };
}
