// Small helpers for building the pages: elements, numbers, durations.

// An element: el('td', {class: 'num'}, '42'); children are nodes or text.
export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? '' : value);
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

// The value as one line of JSON, cut to `max` characters.
export function brief(value, max = 80) {
  const text = JSON.stringify(value);
  return text.length > max ? text.slice(0, max - 1) + '…' : text;
}

// A list of facts (term, value) as a <dl class="facts">; a value undefined or '' is left out.
export function facts(pairs) {
  return el('dl', { class: 'facts' }, pairs.filter(([, v]) => v !== undefined && v !== '')
    .map(([k, v]) => el('div', {}, el('dt', {}, k), el('dd', {}, v))));
}

// One formatter per number of decimals: toLocaleString with options builds a new one on
// every call, which costs a table of 10,000 rows a good part of a second.
const formatters = new Map();

// 1234567 -> "1,234,567"; fractions keep `digits` decimals.
export function number(value, digits = 0) {
  if (value === undefined || value === null || Number.isNaN(value)) return '–';
  if (!formatters.has(digits)) {
    formatters.set(digits, new Intl.NumberFormat('en-US', { maximumFractionDigits: digits, minimumFractionDigits: 0 }));
  }
  return formatters.get(digits).format(value);
}

// Seconds as "3d 4h", "2h 5m", "4m 10s", "12s".
export function duration(seconds) {
  const s = Math.floor(seconds);
  const d = Math.floor(s / 86400), h = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60), r = s % 60;
  if (d > 0) return `${d}d ${h}h`;
  if (h > 0) return `${h}h ${m}m`;
  if (m > 0) return `${m}m ${r}s`;
  return `${r}s`;
}

// A status word as a coloured pill: good for up/running/active, bad for down/failed.
export function pill(text) {
  const word = String(text).toLowerCase();
  let tone = 'warn';
  if (['up', 'running', 'active', 'ok', 'idle', 'ready'].includes(word)) tone = 'good';
  if (['down', 'failed', 'stopped', 'poisoned', 'error'].includes(word)) tone = 'bad';
  return el('span', { class: `pill ${tone}` }, text);
}

// Shows `message` for a few seconds in the corner (an aria-live region reads it out).
export function toast(message, bad = false) {
  const box = el('div', { class: bad ? 'toast bad' : 'toast' }, message);
  document.getElementById('toasts').append(box);
  setTimeout(() => box.remove(), bad ? 8000 : 4000);
}

// What tells a focusable element apart from its replacement after a redraw.
function focusKey(element) {
  return [element.tagName, element.id, element.getAttribute('aria-label') || '', element.textContent].join('|');
}

// Runs `rebuild` (which replaces what `container` holds) and gives the focus back to the new
// twin of the element that had it, so a page that refreshes every few seconds does not take
// the keyboard's place away.
export function keepFocus(container, rebuild) {
  const active = document.activeElement;
  const key = active && active !== container && container.contains(active) ? focusKey(active) : null;
  rebuild();
  if (key === null) return;
  const twin = [...container.querySelectorAll(active.tagName)].find((e) => focusKey(e) === key);
  if (twin) twin.focus();
}
