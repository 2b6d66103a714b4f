// Programs and units: the deployed program and its generation, its units with placement,
// instances, inbox, invocations, refusals, poisonings and evictions (GET /units), a unit's
// instances (GET /units/{unit}/instances) with their kill action, and the reactors with their
// drain action. Refreshed every 2 s.
import { getJson, getJsonOr404, send } from './api.js';
import { confirmAction } from './dialog.js';
import { el, keepFocus, number, pill, toast } from './format.js';

function header(columns) {
  const numeric = new Set(['Instances', 'Inbox', 'Invocations', 'Refused', 'Poisoned', 'Evicted',
    'Queued', 'Incarnation', 'Idle', 'Actors', 'Queue depth']);
  return el('thead', {}, el('tr', {}, columns.map((c) => el('th', { scope: 'col', class: numeric.has(c) ? 'num' : null }, c))));
}

export function render(main) {
  const program = el('div');
  const units = el('div');
  const instances = el('div');
  const reactors = el('div');
  main.append(el('h1', {}, 'Programs and units'), program, el('h2', {}, 'Units'), units, instances,
    el('h2', {}, 'Reactors'), reactors);
  let stopped = false;
  let timer = 0;
  let selected = null;  // the unit whose instances are shown

  const act = async (title, detail, label, route) => {
    if (!await confirmAction(title, detail, label)) return;
    try {
      await send('POST', route);
      toast(`${label}: done`);
    } catch (e) {
      toast(e.message, true);
    }
    refresh(false);
  };

  // `answer`: GET /units/{selected}/instances's answer, or the error it gave.
  const showInstances = (answer) => {
    if (!selected) { instances.replaceChildren(); return; }
    const unit = selected;
    if (answer instanceof Error) {
      instances.replaceChildren(el('p', { class: 'error' }, answer.message));
      return;
    }
    instances.replaceChildren(el('h3', {}, `Instances of ${unit}`),
      answer.instances.length === 0 ? el('p', { class: 'muted' }, 'None live (one starts at the next invocation).') :
        el('table', { 'aria-label': `Instances of ${unit}` },
          header(['Instance', 'Status', 'Reactor', 'Incarnation', 'Queued', 'Invocations', 'Idle', 'Tier', 'Last failure', '']),
          el('tbody', {}, answer.instances.map((i) => el('tr', {},
            el('td', {}, `#${i.instance}`, i.retired ? el('span', {}, ' ', pill('retired')) : ''),
            el('td', {}, pill(i.status)), el('td', {}, `#${i.reactor}`),
            el('td', { class: 'num' }, number(i.incarnation)), el('td', { class: 'num' }, number(i.queued)),
            el('td', { class: 'num' }, number(i.invocations)),
            el('td', { class: 'num' }, `${number(i.idle_ms / 1000, 1)} s`), el('td', {}, i.tier),
            el('td', { class: 'error-text' }, i.failure || ''),
            el('td', {}, i.status === 'running' || i.status === 'awaiting' ? el('button', {
              type: 'button', class: 'danger', 'aria-label': `Kill instance ${i.instance} of ${unit}`,
              onclick: () => act(`Kill instance #${i.instance} of ${unit}?`,
                'Its invocation ends at once and the instance is poisoned: its state goes back to the unit\'s initial state.',
                'Kill', `/units/${encodeURIComponent(unit)}/instances/${i.instance}/kill`),
            }, 'Kill') : ''))))));
  };

  const refresh = async (again = true) => {
    try {
      const [current, unitList, reactorList] = await Promise.all([
        getJsonOr404('/programs/current', null), getJsonOr404('/units', { units: [] }), getJson('/reactors')]);
      if (stopped) return;
      const answer = selected ? await getJson(`/units/${encodeURIComponent(selected)}/instances`).catch((e) => e) : null;
      if (stopped) return;
      keepFocus(main, () => draw(current, unitList, reactorList, answer));
    } catch (e) {
      if (!stopped) program.replaceChildren(el('p', { class: 'error', role: 'alert' }, e.message));
    }
    if (again && !stopped) timer = setTimeout(refresh, 2000);
  };

  const draw = (current, unitList, reactorList, instanceAnswer) => {
    program.replaceChildren(current ? el('dl', { class: 'facts' },
      el('div', {}, el('dt', {}, 'Program'), el('dd', {}, current.program)),
      el('div', {}, el('dt', {}, 'Generation'), el('dd', {}, number(current.generation))),
      el('div', {}, el('dt', {}, 'Deployed'), el('dd', {}, new Date(current.deployed_at_ms).toLocaleString())),
      el('div', {}, el('dt', {}, 'Modules'), el('dd', {}, Object.keys(current.modules).join(', '))))
      : el('p', { class: 'muted' }, 'No program is deployed (reef deploy DIR deploys one).'));
    units.replaceChildren(el('table', { 'aria-label': 'Units' },
      header(['Unit', 'Module', 'Placement', 'Instances', 'Inbox', 'Invocations', 'Refused', 'Poisoned', 'Evicted']),
      el('tbody', {}, unitList.units.map((u) => el('tr', {},
        el('td', {}, el('button', { type: 'button', class: 'quiet', 'aria-pressed': String(u.unit === selected),
          onclick: () => { selected = selected === u.unit ? null : u.unit; refresh(false); } }, u.unit)),
        el('td', {}, u.module), el('td', {}, `${u.placement} (up to ${number(u.instance_limit)})`),
        el('td', { class: 'num' }, number(u.instances)), el('td', { class: 'num' }, number(u.inbox_capacity)),
        el('td', { class: 'num' }, number(u.invocations)), el('td', { class: 'num' }, number(u.rejected)),
        el('td', { class: 'num' }, number(u.poisoned)), el('td', { class: 'num' }, number(u.evicted)))))));
    const up = reactorList.reactors.filter((r) => r.liveness === 'up').length;
    reactors.replaceChildren(el('table', { 'aria-label': 'Reactors' },
      header(['Reactor', 'State', 'Actors', 'Queue depth', '']),
      el('tbody', {}, reactorList.reactors.map((r) => el('tr', {},
        el('td', {}, `#${r.id}`), el('td', {}, pill(r.liveness)),
        el('td', { class: 'num' }, number(r.actors)), el('td', { class: 'num' }, number(r.tasks_waiting)),
        el('td', {}, r.liveness === 'up' && up > 1 ? el('button', {
          type: 'button', 'aria-label': `Drain reactor ${r.id}`,
          onclick: () => act(`Drain reactor #${r.id}?`,
            'No new work is placed on it, and its unit instances move to the other reactors. It stays down until Reef restarts.',
            'Drain', `/reactors/${r.id}/drain`),
        }, 'Drain') : ''))))));
    showInstances(instanceAnswer);
  };
  refresh();
  return () => { stopped = true; clearTimeout(timer); };
}
