// Events: the event store newest first (POST /events/read backwards), filtered by type and
// tag, 50 to a page; an event's data, metadata and position; new events followed live while
// the newest page is shown (protocol op events-subscribe).
import { send } from './api.js';
import { call, callIfOpen, on } from './protocol.js';
import { brief, el, keepFocus, number } from './format.js';

const PAGE = 50;
const KEPT = 500;  // rows kept while following

// The query of the filter fields: types (any of, comma-separated) and tags (all of).
function queryOf(types, tags) {
  const split = (text) => text.split(',').map((s) => s.trim()).filter(Boolean);
  const item = {};
  if (split(types).length) item.types = split(types);
  if (split(tags).length) item.tags = split(tags);
  return Object.keys(item).length ? { items: [item] } : undefined;
}

export function render(main) {
  const types = el('input', { id: 'event-types', placeholder: 'MoneyDeposited, AccountOpened' });
  const tags = el('input', { id: 'event-tags', placeholder: 'account:a1' });
  const follow = el('input', { id: 'follow-events', type: 'checkbox', checked: true });
  const newer = el('button', { type: 'button' }, '← Newer');
  const older = el('button', { type: 'button' }, 'Older →');
  const summary = el('p', { class: 'muted', role: 'status' });
  const body = el('tbody');
  const form = el('form', { class: 'toolbar', role: 'search' },
    el('div', {}, el('label', { for: 'event-types' }, 'Types (any of)'), types),
    el('div', {}, el('label', { for: 'event-tags' }, 'Tags (all of)'), tags),
    el('div', {}, el('button', { type: 'submit', class: 'primary' }, 'Filter')),
    el('div', {}, follow, ' ', el('label', { for: 'follow-events', class: 'inline' }, 'Follow new events')),
    el('div', { class: 'end' }, newer, ' ', older));
  main.append(el('h1', {}, 'Events'), form, summary,
    el('table', { 'aria-label': 'Events' },
      el('thead', {}, el('tr', {}, ['Position', 'Type', 'Tags', 'Time', 'Data'].map((h) =>
        el('th', { scope: 'col', class: h === 'Position' ? 'num' : null }, h)))), body));

  let stopped = false;
  let query;
  let rows = [];        // events shown, newest first
  let newest = true;    // the page shown is the newest one
  let subscription = null;
  let head = 0;
  let drawing = false;
  let subscribing = false;
  let truncated = false;
  const expanded = new Set();  // positions whose details are open, kept across redraws  // an events-subscribe is on its way: keep what arrives (early)
  let early = [];

  const row = (event) => {
    const open = expanded.has(event.position);
    const details = el('tr', { class: 'details', hidden: !open }, el('td', { colspan: 5 },
      el('dl', { class: 'facts' },
        el('div', {}, el('dt', {}, 'Position'), el('dd', {}, number(event.position))),
        el('div', {}, el('dt', {}, 'Id'), el('dd', { class: 'mono' }, event.id))),
      el('h3', {}, 'Data'), el('pre', { class: 'json' },
        event.data !== undefined ? JSON.stringify(event.data, null, 2) : `base64: ${event.data_base64}`),
      el('h3', {}, 'Metadata'), el('pre', { class: 'json' }, JSON.stringify(event.metadata || {}, null, 2))));
    const toggle = el('button', { type: 'button', class: 'quiet mono', 'aria-expanded': String(open),
      'aria-label': `Event ${event.position}: show data and metadata` }, number(event.position));
    toggle.addEventListener('click', () => {
      details.hidden = !details.hidden;
      toggle.setAttribute('aria-expanded', String(!details.hidden));
      if (details.hidden) expanded.delete(event.position); else expanded.add(event.position);
    });
    const time = event.metadata && event.metadata.timestamp_ms;
    return [el('tr', {}, el('td', { class: 'num' }, toggle), el('td', {}, event.type),
      el('td', { class: 'mono' }, (event.tags || []).join(' ')),
      el('td', {}, time ? new Date(time).toLocaleString() : '–'),
      el('td', { class: 'mono' }, event.data !== undefined ? brief(event.data) : '(binary)')), details];
  };
  const draw = (head) => {
    keepFocus(body, () => body.replaceChildren(...rows.flatMap(row)));
    if (rows.length === 0) body.append(el('tr', {}, el('td', { colspan: 5, class: 'muted' }, 'No events match.')));
    summary.textContent = `Head ${number(head)}` + (rows.length ?
      ` · positions ${number(rows[rows.length - 1].position)} to ${number(rows[0].position)}` : '') +
      (subscription !== null ? ' · following' : '');
    newer.disabled = newest;
    older.disabled = rows.length === 0 || (rows.length < PAGE && !truncated) ||
      rows[rows.length - 1].position <= 1;
  };
  const showPushed = (event) => {
    rows.unshift(event);
    if (rows.length > KEPT) rows.length = KEPT;
    head = event.position;
    if (!drawing) {  // one redraw per frame, however fast events arrive
      drawing = true;
      requestAnimationFrame(() => { drawing = false; if (!stopped) draw(head); });
    }
  };
  const unsubscribe = async () => {
    if (subscription === null) return;
    const id = subscription;
    subscription = null;
    await callIfOpen('events-unsubscribe', { subscription: id });
  };
  // Each read counts: the subscription of a read that a newer one overtook is ended at once.
  let reads = 0;
  const subscribe = async (after, read) => {
    await unsubscribe();
    if (!follow.checked || !newest || stopped || read !== reads) return;
    subscribing = true;
    try {
      const answer = await call('events-subscribe', { query, after });
      if (stopped || read !== reads) {
        return callIfOpen('events-unsubscribe', { subscription: answer.subscription });
      }
      await unsubscribe();  // one another read made meanwhile
      subscription = answer.subscription;
      // The first events may come before the answer that names their subscription.
      for (const data of early) if (data.subscription === subscription) showPushed(data.event);
    } catch (e) {
      summary.textContent = e.message;
    } finally {
      subscribing = false;
      early = [];
    }
  };
  // Reads the page whose newest position is at most `from` (null: the head) going back.
  const readBack = async (from) => {
    const read = ++reads;
    try {
      const answer = await send('POST', '/events/read',
        { query, backwards: true, limit: PAGE, ...(from === null ? {} : { from }) });
      if (stopped || read !== reads) return;
      rows = answer.events;
      truncated = answer.truncated;  // the read's byte cap cut it short: older ones remain
      newest = from === null;
      draw(answer.head);
      await subscribe(answer.head, read);
    } catch (e) {
      if (!stopped) summary.textContent = e.message;
    }
  };
  const readNewer = async () => {
    const read = ++reads;
    try {
      const answer = await send('POST', '/events/read',
        { query, limit: PAGE + 1, from: rows.length ? rows[0].position + 1 : 1 });
      if (stopped || read !== reads) return;
      if (answer.events.length <= PAGE && !answer.truncated) return readBack(null);
      rows = answer.events.slice(0, PAGE).reverse();
      newest = false;
      draw(answer.head);
    } catch (e) {
      if (!stopped) summary.textContent = e.message;
    }
  };
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    query = queryOf(types.value, tags.value);
    readBack(null);
  });
  follow.addEventListener('change', () => (follow.checked ? readBack(null) : unsubscribe().then(() => draw(rows[0]?.position || 0))));
  older.addEventListener('click', () => readBack(rows[rows.length - 1].position - 1));
  newer.addEventListener('click', () => readNewer());
  const off = [
    on('event', (data) => {
      if (subscribing) early.push(data);
      if (data.subscription === subscription) showPushed(data.event);
    }),
    on('subscription-failed', (data) => {
      if (data.subscription === subscription) { subscription = null; readBack(null); }
    }),
    // The connection dropped, and the subscription with it: read again and follow anew.
    on('closed', () => { subscription = null; }),
    on('reopened', () => { if (!stopped && newest && follow.checked) readBack(null); }),
  ];
  readBack(null);
  return () => { stopped = true; off.forEach((f) => f()); unsubscribe(); };
}
