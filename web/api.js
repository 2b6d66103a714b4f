// The dashboard's only way to Reef: the HTTP routes of docs/http-api.md, the same ones the
// CLI uses. The token travels in the HttpOnly cookie POST /login set (never in a URL, never
// readable here); a 401 sends the page back to the login form.

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;  // HTTP status, 0 when the server could not be reached
    this.code = code;      // the error shape's code ("not_found", "unauthenticated", ...)
  }
}

// Called with no arguments when a request is refused for want of the token.
let onUnauthenticated = () => {};
export function setUnauthenticatedHandler(handler) { onUnauthenticated = handler; }

async function request(method, path, body, accept) {
  const init = { method, credentials: 'same-origin', headers: { Accept: accept } };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, 'unavailable', `cannot reach the Reef server (${e.message})`);
  }
  if (response.ok) return response;
  let code = 'http_' + response.status;
  let message = `${method} ${path}: HTTP ${response.status}`;
  try {
    const error = (await response.json()).error;
    if (error) { code = error.code; message = error.message; }
  } catch { /* not the error shape */ }
  if (response.status === 401) onUnauthenticated();
  throw new ApiError(response.status, code, message);
}

// GET `path`, the body as JSON.
export async function getJson(path) {
  return (await request('GET', path, undefined, 'application/json')).json();
}

// GET `path`, the body as text (GET /metrics).
export async function getText(path) {
  return (await request('GET', path, undefined, 'text/plain')).text();
}

// `method` (POST, PUT, DELETE) with `body` as JSON (undefined: none); the answer as JSON.
export async function send(method, path, body) {
  const response = await request(method, path, body, 'application/json');
  const text = await response.text();
  return text ? JSON.parse(text) : {};
}

// GET `path` as JSON, or `fallback` when the route answers 404 (no program deployed yet).
export async function getJsonOr404(path, fallback) {
  try {
    return await getJson(path);
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return fallback;
    throw e;
  }
}

// The Prometheus text of GET /metrics as a Map: metric name -> [{labels, value}].
export function parseMetrics(text) {
  const families = new Map();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/.exec(line);
    if (!match) continue;
    const labels = {};
    if (match[3]) {
      for (const m of match[3].matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
        labels[m[1]] = m[2].replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
      }
    }
    if (!families.has(match[1])) families.set(match[1], []);
    families.get(match[1]).push({ labels, value: Number(match[4]) });
  }
  return families;
}

// The sum of a metric's samples (those whose labels pass `keep`), 0 when it has none.
export function metricSum(families, name, keep = () => true) {
  return (families.get(name) || []).filter((s) => keep(s.labels)).reduce((a, s) => a + s.value, 0);
}
