// One module (#/modules/{kind}/{name}): status, versions with activate and deactivate, replay,
// environment variables; a projector's read-only SQL query with its rows in a table; a
// command's execution from a JSON form with the events it appended. Every action is the HTTP
// route the CLI and curl use (docs/http-api.md "Modules"), confirmed first when it changes
// something.
import { getJson, send } from './api.js';
import { confirmAction } from './dialog.js';
import { el, facts, keepFocus, number, pill, toast } from './format.js';
import { lags } from './modules.js';

// Rows (objects) as a table with one column per key of the first rows.
export function rowsTable(label, rows) {
  if (rows.length === 0) return el('p', { class: 'muted' }, 'No rows.');
  const columns = [...new Set(rows.slice(0, 50).flatMap((r) => Object.keys(r)))];
  return el('table', { 'aria-label': label },
    el('thead', {}, el('tr', {}, columns.map((c) => el('th', { scope: 'col' }, c)))),
    el('tbody', {}, rows.map((r) => el('tr', {}, columns.map((c) =>
      el('td', { class: 'mono' }, r[c] === null || r[c] === undefined ? 'null' :
        typeof r[c] === 'object' ? JSON.stringify(r[c]) : String(r[c])))))));
}

export function render(main, [kind, name]) {
  // The server's module names (docs/http-api.md "Modules"): no "." or ".." that a URL would fold.
  if (!['commands', 'projectors', 'effects'].includes(kind) || !/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(name || '')) {
    main.append(el('p', { class: 'error', role: 'alert' }, `No such module page: ${kind}/${name || ''}`));
    return () => {};
  }
  const base = `/${kind}/${encodeURIComponent(name)}`;
  const singular = kind.slice(0, -1);
  const status = el('div');
  const versions = el('div');
  const env = el('div');
  const actions = el('div', { class: 'toolbar' });
  main.append(el('p', {}, el('a', { href: '#/modules' }, '← Modules')),
    el('h1', {}, `${singular} ${name}`), status, actions,
    el('h2', {}, 'Versions'), versions, el('h2', {}, 'Environment variables'), env);
  let stopped = false;
  let timer = 0;

  // Runs `route` after a confirmation; shows the outcome; refreshes.
  const act = async (title, detail, label, method, route, body) => {
    if (!await confirmAction(title, detail, label)) return;
    try {
      await send(method, route, body);
      toast(`${singular} ${name}: ${label.toLowerCase()} done`);
    } catch (e) {
      toast(e.message, true);
    }
    refresh(false);
  };

  const show = (m, lag) => {
    const s = m.status;
    status.replaceChildren(facts([
      ['State', s ? pill(s.state) : pill('inactive')],
      ['Active version', m.active_version || 'none'],
      ['Position', s && s.position !== undefined ? number(s.position) : undefined],
      ['Lag', s && kind !== 'commands' ? number(lag.get(`${kind}/${name}`) ?? 0) : undefined],
      ['Failures', s ? number(s.failures) : undefined],
      ['Restarts', s ? number(s.restarts) : undefined],
      ['Backoff', s && s.backoff_seconds ? `retrying in ${number(s.backoff_seconds, 1)} s` : undefined],
      ['Engine tier', s ? s.tier : undefined],
      ['Last error', s && s.error ? el('span', { class: 'error-text' }, s.error) : undefined],
    ]));
    const buttons = [];
    if (m.active_version) {
      buttons.push(el('button', { type: 'button', onclick: () => act(`Deactivate ${singular} ${name}?`,
        kind === 'commands' ? 'Executions are refused until a version is active again.'
          : 'Its runner stops; its position is kept.', 'Deactivate', 'DELETE', `${base}/active`) }, 'Deactivate'));
    }
    if (kind !== 'commands' && m.active_version) {
      buttons.push(el('button', { type: 'button', onclick: () => act(`Replay ${singular} ${name}?`,
        kind === 'projectors' ? 'Its database is rebuilt from position 0.' :
          'It handles every matching event again from position 0.', 'Replay', 'POST', `${base}/replay`) }, 'Replay'));
    }
    actions.replaceChildren(...buttons);
    versions.replaceChildren(el('table', { 'aria-label': 'Versions' },
      el('thead', {}, el('tr', {}, ['Version', 'Uploaded', 'Size', 'SHA-256', ''].map((h) => el('th', { scope: 'col' }, h)))),
      el('tbody', {}, m.versions.slice().reverse().map((v) => el('tr', {},
        el('td', {}, v.version, v.version === m.active_version ? el('span', {}, ' ', pill('active')) : ''),
        el('td', {}, new Date(v.created_at_ms).toLocaleString()),
        el('td', {}, `${number(v.size_bytes)} bytes`),
        el('td', { class: 'mono' }, v.sha256.slice(0, 16) + '…'),
        el('td', {}, v.version === m.active_version ? '' : el('button', {
          type: 'button', 'aria-label': `Activate version ${v.version}`,
          onclick: () => act(`Activate ${singular} ${name} ${v.version}?`,
            'It replaces the active version (a rolling upgrade).', 'Activate', 'PUT', `${base}/active`,
            { version: v.version }),
        }, 'Activate')))))));
    const keyInput = el('input', { id: 'env-key', placeholder: 'KEY' });
    const valueInput = el('input', { id: 'env-value' });
    const form = el('form', { class: 'toolbar' },
      el('div', {}, el('label', { for: 'env-key' }, 'Variable'), keyInput),
      el('div', {}, el('label', { for: 'env-value' }, 'Value'), valueInput),
      el('div', {}, el('button', { type: 'submit' }, 'Set variable')));
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      if (!/^[A-Za-z_][A-Za-z0-9_]{0,127}$/.test(keyInput.value)) {
        toast('A variable name is a letter or _ followed by up to 127 letters, digits or _', true);
        return;
      }
      act(`Set ${keyInput.value} on ${singular} ${name}?`,
        kind === 'commands' ? 'The next execution sees it.' : 'A running runner restarts to see it.',
        'Set variable', 'PUT', `${base}/env/${encodeURIComponent(keyInput.value)}`, { value: valueInput.value });
    });
    const keys = Object.keys(m.env);
    env.replaceChildren(keys.length === 0 ? el('p', { class: 'muted' }, 'None set.') :
      el('table', { 'aria-label': 'Environment variables' },
        el('tbody', {}, keys.map((k) => el('tr', {}, el('td', { class: 'mono' }, k),
          el('td', { class: 'mono' }, m.env[k]),
          el('td', {}, el('button', { type: 'button', class: 'danger', 'aria-label': `Delete ${k}`,
            onclick: () => act(`Delete ${k} from ${singular} ${name}?`, 'The module no longer sees it.',
              'Delete', 'DELETE', `${base}/env/${encodeURIComponent(k)}`) }, 'Delete')))))),
      form);
  };

  const refresh = async (again = true) => {
    try {
      const [m, lag] = await Promise.all([getJson(base), lags()]);
      if (stopped) return;
      // Rebuilding the forms while someone types in them would lose the typing.
      if (!main.contains(document.activeElement) || document.activeElement === document.body ||
          !document.activeElement.matches('input, textarea')) keepFocus(main, () => show(m, lag));
    } catch (e) {
      if (!stopped) status.replaceChildren(el('p', { class: 'error', role: 'alert' }, e.message));
    }
    if (again && !stopped) timer = setTimeout(refresh, 2000);
  };

  if (kind === 'projectors') main.append(queryForm(name));
  if (kind === 'commands') main.append(executeForm(name));
  refresh();
  return () => { stopped = true; clearTimeout(timer); };
}

function queryForm(name) {
  const sql = el('textarea', { id: 'query-sql', rows: 3, class: 'mono', spellcheck: 'false' },
    'SELECT name FROM sqlite_master WHERE type = \'table\'');
  const result = el('div', { 'aria-live': 'polite' });
  const form = el('form', {}, el('h2', {}, 'Query'),
    el('p', { class: 'muted' }, 'A read-only SQL query on the projector\'s database (at most 10,000 rows).'),
    el('label', { for: 'query-sql' }, 'SQL'), sql, el('p', {}, el('button', { type: 'submit', class: 'primary' }, 'Run query')),
    result);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      const answer = await send('POST', `/projectors/${encodeURIComponent(name)}/query`, { sql: sql.value });
      result.replaceChildren(el('p', { class: 'muted' }, `${number(answer.rows.length)} row(s)`),
        rowsTable('Query result', answer.rows));
    } catch (e) {
      result.replaceChildren(el('p', { class: 'error', role: 'alert' }, e.message));
    }
  });
  return form;
}

function executeForm(name) {
  const input = el('textarea', { id: 'command-input', rows: 4, class: 'mono', spellcheck: 'false' }, '{}');
  const result = el('div', { 'aria-live': 'polite' });
  const form = el('form', {}, el('h2', {}, 'Execute'),
    el('p', { class: 'muted' }, 'Runs the command on a JSON input, as POST /commands/{name}/execute does.'),
    el('label', { for: 'command-input' }, 'Input (JSON)'), input,
    el('p', {}, el('button', { type: 'submit', class: 'primary' }, 'Execute')), result);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    let body;
    try { body = JSON.parse(input.value); } catch (e) {
      result.replaceChildren(el('p', { class: 'error', role: 'alert' }, `The input is not JSON: ${e.message}`));
      return;
    }
    if (!await confirmAction(`Execute ${name}?`, 'The events it decides on are appended to the store.', 'Execute')) return;
    try {
      const answer = await send('POST', `/commands/${encodeURIComponent(name)}/execute`, body);
      result.replaceChildren(el('p', {}, `Appended ${number(answer.events.length)} event(s) at position ` +
        `${number(answer.position)} (execution ${answer.execution_id}).`),
        rowsTable('Appended events', answer.events.map((e) => ({
          position: e.position, type: e.type, tags: e.tags.join(' '), data: e.data }))));
    } catch (e) {
      result.replaceChildren(el('p', { class: 'error', role: 'alert' }, e.message));
    }
  });
  return form;
}
