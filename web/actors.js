// Actors: the live image's actors (protocol op `ps`), searchable, refreshed when the image
// changes (subscription "changes"); the ticks that run them; and one actor's page
// (actor.js). The list shows at most SHOWN rows: search narrows it.
import { call, callIfOpen, on } from './protocol.js';
import { brief, el, number, pill, toast } from './format.js';

const SHOWN = 500;
const STATUSES = ['idle', 'running', 'awaiting', 'paused', 'stopped', 'failed'];

export function render(main) {
  const search = el('input', { id: 'actor-search', type: 'search', placeholder: 'ref, implementation or state' });
  const status = el('select', { id: 'actor-status' }, el('option', { value: '' }, 'any'),
    STATUSES.map((s) => el('option', { value: s }, s)));
  const count = el('input', { id: 'tick-count', type: 'number', min: 1, max: 100000, value: 1 });
  const tickButton = el('button', { type: 'button' }, 'Tick');
  const summary = el('p', { class: 'muted', role: 'status' });
  const table = el('div');
  main.append(el('h1', {}, 'Actors'),
    el('div', { class: 'toolbar' },
      el('div', {}, el('label', { for: 'actor-search' }, 'Search'), search),
      el('div', {}, el('label', { for: 'actor-status' }, 'Status'), status),
      el('div', {}, el('label', { for: 'tick-count' }, 'Ticks'), count),
      el('div', { class: 'end' }, tickButton)),
    summary, table);

  let actors = [];
  let stopped = false;
  const draw = () => {
    const words = search.value.trim().toLowerCase();
    const wanted = status.value;
    const matching = actors.filter((a) => (!wanted || a.status === wanted) &&
      (!words || `${a.actor} ${a.implementation.label} ${a.status} ${JSON.stringify(a.state)}`
        .toLowerCase().includes(words)));
    const shown = matching.slice(0, SHOWN);
    summary.textContent = `${number(actors.length)} actors` +
      (matching.length !== actors.length ? `, ${number(matching.length)} match` : '') +
      (shown.length < matching.length ? `; the first ${number(shown.length)} are shown` : '');
    table.replaceChildren(el('table', { 'aria-label': 'Actors' },
      el('thead', {}, el('tr', {}, ['Actor', 'Implementation', 'Status', 'Incarnation', 'Mailbox',
        'Reactor', 'State'].map((h) => el('th', {
        scope: 'col', class: ['Incarnation', 'Mailbox', 'Reactor'].includes(h) ? 'num' : null,
      }, h)))),
      el('tbody', {}, shown.map((a) => el('tr', {},
        el('td', { class: 'mono' }, el('a', { href: `#/actors/${a.actor}` }, '@' + a.actor)),
        el('td', {}, a.implementation.label),
        el('td', {}, pill(a.status)),
        el('td', { class: 'num' }, number(a.incarnation)),
        el('td', { class: 'num' }, number(a.queued)),
        el('td', { class: 'num' }, `#${a.reactor}`),
        el('td', { class: 'mono' }, brief(a.state)))))));
  };
  let loading = false;
  let again = false;
  const load = async () => {
    if (loading) { again = true; return; }
    loading = true;
    try {
      const result = await call('ps');
      if (stopped) return;
      actors = result.actors;
      draw();
    } catch (e) {
      if (!stopped) summary.textContent = e.message;
    } finally {
      loading = false;
      if (again && !stopped) { again = false; setTimeout(load, 300); }
    }
  };
  search.addEventListener('input', draw);
  status.addEventListener('change', draw);
  tickButton.addEventListener('click', async () => {
    try {
      const result = await call('tick', { count: Number(count.value) || 1 });
      toast(`${number(result.slices)} slices, ${number(result.commits)} commits, ` +
        `${number(result.failures)} failures`);
    } catch (e) {
      toast(e.message, true);
    }
  });
  const off = [
    on('changed', () => load()),
    on('closed', () => { summary.textContent = 'The connection to Reef dropped; reconnecting…'; }),
    on('reopened', () => resubscribe()),
  ];
  const resubscribe = () => call('subscribe', { topic: 'changes' }).then(load, (e) => {
    summary.textContent = e.message;
  });
  resubscribe();
  return () => {
    stopped = true;
    off.forEach((f) => f());
    callIfOpen('unsubscribe', { topic: 'changes' });
  };
}
