// The reef.v1 WebSocket protocol (docs/protocol.md), as the CLI and the REPL speak it: the
// dashboard's way to the live image's actors. One connection per page load, opened on first
// use and again after it drops; the browser sends the token cookie with the upgrade.
import { ApiError, getJson } from './api.js';

let connection = null;  // Promise<Connection>
const listeners = new Map();  // event kind -> Set of handlers (data) => void

class Connection {
  constructor(socket) {
    this.socket = socket;
    this.next = 1;
    this.pending = new Map();  // id -> {resolve, reject}
    socket.addEventListener('message', (message) => this.onMessage(message));
    socket.addEventListener('close', () => this.onClose());
  }

  onMessage(message) {
    let envelope;
    try { envelope = JSON.parse(message.data); } catch { return; }
    if (envelope.event) {
      for (const handler of listeners.get(envelope.event) || []) handler(envelope.data);
      return;
    }
    // An error the server could not tie to a request (it could not read the id: a message
    // over its size limit) answers the oldest one still waiting: answers come in order.
    const id = envelope.id === null && !envelope.ok ? this.pending.keys().next().value : envelope.id;
    const waiting = this.pending.get(id);
    if (!waiting) return;
    this.pending.delete(id);
    if (envelope.ok) waiting.resolve(envelope.result);
    else waiting.reject(new ApiError(200, envelope.error.code, envelope.error.message));
  }

  onClose() {
    connection = null;
    for (const waiting of this.pending.values()) {
      waiting.reject(new ApiError(0, 'unavailable', 'the connection to Reef closed'));
    }
    this.pending.clear();
    for (const handler of listeners.get('closed') || []) handler({});
    if (!closing) reconnect(1000);
  }

  call(op, args) {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.socket.send(JSON.stringify({ v: 1, id, op, args: args || {} }));
    });
  }
}

// After a drop: tries again with a growing delay (at most 10 s) until the server answers,
// then tells the pages ("reopened"), which subscribe again and reload.
let closing = false;
let reconnecting = false;
function reconnect(delay) {
  if (reconnecting) return;
  reconnecting = true;
  setTimeout(async () => {
    reconnecting = false;
    if (connection || closing) return;
    connection = open();
    try {
      await connection;
      for (const handler of listeners.get('reopened') || []) handler({});
    } catch {
      connection = null;
      reconnect(Math.min(delay * 2, 10000));
    }
  }, delay);
}

function open() {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(`${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/`,
      'reef.v1');
    socket.addEventListener('open', () => resolve(new Connection(socket)), { once: true });
    socket.addEventListener('error', async () => {
      connection = null;
      // The browser does not say why an upgrade failed: ask over HTTP (a 401 shows the login).
      try {
        await getJson('/status');
        reject(new ApiError(0, 'unavailable', 'cannot open the WebSocket protocol to Reef'));
      } catch (e) {
        reject(e);
      }
    }, { once: true });
  });
}

// Runs the protocol op `op` with `args`; resolves with its result, rejects with an ApiError
// carrying the op's error code and message.
export async function call(op, args) {
  if (!connection) connection = open();
  let c;
  try {
    c = await connection;
  } catch (e) {
    connection = null;
    throw e;
  }
  return c.call(op, args);
}

// Calls `handler(data)` for every pushed event of `kind` ("changed", "log",
// "subscription-failed", "closed" when the connection drops, "reopened" once it is back);
// returns the unsubscriber.
export function on(kind, handler) {
  if (!listeners.has(kind)) listeners.set(kind, new Set());
  listeners.get(kind).add(handler);
  return () => listeners.get(kind).delete(handler);
}

// Runs `op` only over a connection that is open already (an unsubscribe has nothing to end
// on a connection that dropped); resolves undefined otherwise.
export async function callIfOpen(op, args) {
  if (!connection) return undefined;
  return call(op, args).catch(() => undefined);
}

// Closes the connection (logout): its subscriptions end with it.
export async function close() {
  const open = connection;
  connection = null;
  if (!open) return;
  closing = true;
  try { (await open).socket.close(); } catch { /* it never opened */ }
  setTimeout(() => { closing = false; }, 0);
}
