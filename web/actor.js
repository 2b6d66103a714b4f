// One actor (#/actors/REF): its snapshot (protocol op `inspect`), refreshed when an operation
// touches it; the lifecycle buttons and the state repair, each confirmed first; its logs,
// followed live (subscription "logs" for this actor).
import { call, callIfOpen, on } from './protocol.js';
import { el, facts as factList, number, pill, toast } from './format.js';
import { confirmAction } from './dialog.js';

// What each lifecycle button does, for its confirmation.
// op, button, what it does, the statuses it applies to (docs/runtime.md "Lifecycle").
const LIVE = ['idle', 'running', 'awaiting'];
const ENDED = ['stopped', 'failed'];
const ACTIONS = [
  ['pause', 'Pause', 'It is not scheduled until you resume it; its invocation waits where it is.', LIVE],
  ['resume', 'Resume', 'It is scheduled again.', ['paused']],
  ['stop', 'Stop', 'It stops gracefully: on_shutdown runs at the next ticks.', [...LIVE, 'paused']],
  ['kill', 'Kill', 'It stops at once: its active invocation is dropped, the message stays reserved.',
    [...LIVE, 'paused']],
  ['restart', 'Restart', 'A stopped or failed actor starts again with the same ref, as its next incarnation.', ENDED],
  ['rm', 'Remove', 'It is removed for good with its mailbox; its ref becomes unknown.', ENDED],
];
// Statuses in which the state may be replaced.
const REPAIRABLE = ['paused', ...ENDED];

function pretty(value) {
  return el('pre', { class: 'json' }, JSON.stringify(value, null, 2));
}

export function render(main, [ref]) {
  const heading = el('h1', { class: 'mono title-ref' }, '@' + ref);
  const facts = el('div');
  const buttons = el('div', { class: 'toolbar', role: 'group', 'aria-label': 'Lifecycle' });
  const state = el('div');
  const mailbox = el('div');
  const telemetry = el('div');
  const stateInput = el('textarea', { id: 'new-state', rows: 4, spellcheck: 'false', class: 'mono' });
  const setState = el('button', { type: 'button' }, 'Set state');
  const follow = el('input', { id: 'follow-logs', type: 'checkbox', checked: true });
  const logs = el('ol', { class: 'logs mono', 'aria-label': 'Log entries', 'aria-live': 'off' });
  main.append(el('p', {}, el('a', { href: '#/actors' }, '← Actors')), heading, facts, buttons,
    el('h2', {}, 'State'), state,
    el('h2', {}, 'Repair'),
    el('p', { class: 'muted' }, 'Replace the state of a paused, stopped or failed actor.'),
    el('label', { for: 'new-state' }, 'New state (JSON)'), stateInput, el('p', {}, setState),
    el('h2', {}, 'Mailbox'), mailbox,
    el('h2', {}, 'Telemetry'), telemetry,
    el('h2', {}, 'Logs'),
    el('p', {}, follow, ' ', el('label', { for: 'follow-logs', class: 'inline' }, 'Follow new entries')),
    logs);

  let stopped = false;
  let gone = false;
  const show = (snapshot) => {
    facts.replaceChildren(factList([
      ['Status', pill(snapshot.status)],
      ['Incarnation', number(snapshot.incarnation)],
      ['Implementation', snapshot.implementation.label],
      ['Reactor', `#${snapshot.reactor}`],
      ['Engine tier', snapshot.tier],
      ['Log level', snapshot.log_level],
      ['Mailbox', `${number(snapshot.queued.length)} queued of ${number(snapshot.mailbox_capacity)}` +
        (snapshot.reserved ? ', 1 reserved' : '')],
      ['Failure', snapshot.failure || undefined],
      ['Stopping', snapshot.stopping ? 'yes (on_shutdown runs at the next ticks)' : undefined],
      ['Awaiting', snapshot.awaiting ? `a call to @${snapshot.awaiting.call} for ` +
        `${number(snapshot.awaiting.waited_ms)} ms` : undefined],
    ]));
    for (const [statuses, button] of actionButtons) button.disabled = !statuses.includes(snapshot.status);
    setState.disabled = !REPAIRABLE.includes(snapshot.status);
    state.replaceChildren(pretty(snapshot.state));
    if (document.activeElement !== stateInput && !stateInput.dataset.edited) {
      stateInput.value = JSON.stringify(snapshot.state);
    }
    const rows = [];
    if (snapshot.reserved) rows.push(['reserved', snapshot.reserved]);
    for (const m of snapshot.queued) rows.push(['queued', m]);
    mailbox.replaceChildren(rows.length === 0 ? el('p', { class: 'muted' }, 'Empty.') :
      el('table', { 'aria-label': 'Mailbox' },
        el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, '#'), el('th', { scope: 'col' }, 'Place'),
          el('th', { scope: 'col' }, 'Sender'), el('th', { scope: 'col' }, 'Message'))),
        el('tbody', {}, rows.map(([place, m], i) => el('tr', {}, el('td', {}, i + 1), el('td', {}, place),
          el('td', { class: 'mono' }, m.sender ? '@' + m.sender : 'host'),
          el('td', { class: 'mono' }, JSON.stringify(m.message)))))));
    telemetry.replaceChildren(snapshot.telemetry ? factList([
      ['Instructions', number(snapshot.telemetry.instructions)],
      ['Call depth', number(snapshot.telemetry.call_depth)],
      ['Function', String(snapshot.telemetry.function)],
      ['Offset', String(snapshot.telemetry.offset)],
    ]) : el('p', { class: 'muted' }, 'No invocation is active.'));
  };
  const load = async () => {
    try {
      const snapshot = await call('inspect', { actor: ref });
      if (!stopped) show(snapshot);
    } catch (e) {
      if (stopped) return;
      if (e.code === 'not_found') gone = true;
      facts.replaceChildren(el('p', { class: 'error', role: 'alert' }, e.message));
    }
  };

  const actionButtons = [];
  for (const [op, label, effect, statuses] of ACTIONS) {
    actionButtons.push([statuses, buttons.appendChild(el('button', {
      type: 'button', class: op === 'kill' || op === 'rm' ? 'danger' : null,
      onclick: async () => {
        if (!await confirmAction(`${label} @${ref}?`, effect, label)) return;
        try {
          const result = await call(op, { actor: ref });
          toast(op === 'rm' ? `@${ref} removed (${result.dropped_messages} message(s) dropped)` :
            `@${ref} is ${result.status}`);
          if (op === 'rm') location.hash = '#/actors';
        } catch (e) {
          toast(e.message, true);
        }
      },
    }, label))]);
  }
  for (const [, button] of actionButtons) button.disabled = true;  // until the snapshot says
  setState.disabled = true;
  stateInput.addEventListener('input', () => { stateInput.dataset.edited = '1'; });
  setState.addEventListener('click', async () => {
    let value;
    try { value = JSON.parse(stateInput.value); } catch (e) {
      toast(`The new state is not JSON: ${e.message}`, true);
      return;
    }
    if (!await confirmAction(`Set the state of @${ref}?`, `Its state becomes ${stateInput.value}.`,
      'Set state')) return;
    try {
      await call('set-state', { actor: ref, state: value });
      delete stateInput.dataset.edited;
      toast(`@${ref}: state set`);
    } catch (e) {
      toast(e.message, true);
    }
  });

  // Follow: subscribe first, then read what was retained before; entries pushed meanwhile
  // wait, so the list stays in seq order with nothing missed and nothing twice.
  let lastSeq = 0;
  let catchingUp = false;
  let pushed = [];
  const addLog = (entry) => {
    if (entry.seq <= lastSeq) return;
    lastSeq = entry.seq;
    logs.append(el('li', { class: `level-${entry.level}` },
      // A newline inside a message shows as ⏎: one entry is one line, an actor cannot forge more.
      `${new Date(entry.unix_ms).toLocaleTimeString()} ${entry.level.padEnd(5)} #${entry.incarnation} ` +
      entry.message.replace(/\r?\n/g, ' ⏎ ')));
    while (logs.children.length > 1000) logs.firstChild.remove();
  };
  let starts = 0;  // a newer start (Follow ticked again) supersedes an older one
  const startLogs = async () => {
    const start = ++starts;
    catchingUp = true;
    pushed = [];
    lastSeq = 0;
    logs.replaceChildren();
    try {
      if (follow.checked) await call('subscribe', { topic: 'logs', actors: [ref] });
      let after = 0;
      for (let pages = 0; pages < 10; ++pages) {  // 1,000 entries per actor are retained
        const page = await call('logs', { actors: [ref], after, limit: 1000 });
        if (stopped || start !== starts) return;
        page.entries.forEach(addLog);
        after = page.next_after;
        if (!page.more) break;
      }
      pushed.sort((a, b) => a.seq - b.seq).forEach(addLog);
    } catch (e) {
      if (!stopped && !gone) logs.replaceChildren(el('li', { class: 'error' }, e.message));
    } finally {
      if (start === starts) {
        catchingUp = false;
        pushed = [];
      }
    }
  };
  follow.addEventListener('change', () => {
    if (follow.checked) startLogs();
    else callIfOpen('unsubscribe', { topic: 'logs' });
  });
  const off = [
    on('changed', (data) => { if (data.actors === null || data.actors.includes(ref)) load(); }),
    on('log', (entry) => {
      if (entry.actor !== ref || !follow.checked) return;
      if (catchingUp) pushed.push(entry);
      else addLog(entry);
    }),
    // The connection dropped with its subscriptions: say so; once it is back, subscribe again
    // and catch up.
    on('closed', () => {
      facts.replaceChildren(el('p', { class: 'error', role: 'alert' }, 'The connection to Reef dropped; reconnecting…'));
      for (const [, button] of actionButtons) button.disabled = true;
    }),
    on('reopened', () => {
      call('subscribe', { topic: 'changes' }).then(load, () => {});
      if (follow.checked) startLogs();
    }),
    on('subscription-failed', (data) => {
      if (data.topic === 'logs') logs.append(el('li', { class: 'error' }, `${data.message} (untick and tick Follow to go on)`));
    }),
  ];
  call('subscribe', { topic: 'changes' }).catch(() => {});
  load();
  startLogs();
  return () => {
    stopped = true;
    off.forEach((f) => f());
    callIfOpen('unsubscribe', { topic: 'logs' });
    callIfOpen('unsubscribe', { topic: 'changes' });
  };
}
