// The dashboard's shell: the login form, the page router (#/overview, ...), the header line.
// Each page module exports render(main, params) -> dispose(), which stops its timers.
import { ApiError, getJson, send, setUnauthenticatedHandler } from './api.js';
import { close as closeProtocol } from './protocol.js';
import { el } from './format.js';
import * as actor from './actor.js';
import * as actors from './actors.js';
import * as events from './events.js';
import * as module from './module.js';
import * as modules from './modules.js';
import * as overview from './overview.js';
import * as programs from './programs.js';

// Page name -> module; a name with parameters ("#/actors/REF") may have its own module.
const pages = { overview, actors, modules, events, programs };
const detailPages = { actors: actor, modules: module };
let dispose = () => {};
let loggedOut = false;

function main() { return document.getElementById('main'); }

// The page the location's hash names ("#/overview" -> overview, with params after it).
function route() {
  const [name, ...parts] = location.hash.replace(/^#\/?/, '').split('/');
  const params = [];
  for (const part of parts.filter(Boolean)) {
    try { params.push(decodeURIComponent(part)); } catch { params.push(part); }
  }
  return { name: Object.hasOwn(pages, name) ? name : 'overview', params };
}

let shown = 0;  // counts navigations: a slower, older one must not render over a newer one

async function show() {
  const navigation = ++shown;
  dispose();
  dispose = () => {};
  const { name, params } = route();
  for (const link of document.querySelectorAll('nav a')) {
    if (link.dataset.page === name) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  const container = main();
  container.replaceChildren();
  try {
    const status = await getJson('/status');
    if (navigation !== shown) return;
    loggedOut = false;
    document.getElementById('server-line').textContent =
      `${location.host} · version ${status.version}`;
    document.getElementById('logout').hidden = !status.auth_token;
    const page = params.length > 0 && Object.hasOwn(detailPages, name) ? detailPages[name] : pages[name];
    dispose = page.render(container, params) || (() => {});
  } catch (e) {
    if (navigation !== shown) return;
    if (e instanceof ApiError && e.status === 401) {
      loggedOut = false;  // this navigation cleared the form: show it again
      showLogin();
    } else {
      container.replaceChildren(el('p', { class: 'error' }, e.message));
    }
  }
}

function showLogin(message) {
  if (loggedOut) return;  // one form, however many requests were refused
  loggedOut = true;
  dispose();
  dispose = () => {};
  closeProtocol();
  document.getElementById('logout').hidden = true;
  const error = el('p', { class: 'error', role: 'alert' }, message || '');
  const input = el('input', {
    id: 'token', name: 'token', type: 'password', autocomplete: 'current-password', required: true,
  });
  const form = el('form', { class: 'login', 'aria-labelledby': 'login-title' },
    el('h1', { id: 'login-title' }, 'Log in to Reef'),
    el('p', { class: 'muted' },
      'This server needs its auth token (the one reef serve was given). It is kept in a ' +
      'cookie that page scripts cannot read, until the browser closes.'),
    el('label', { for: 'token' }, 'Auth token'), input, error,
    el('p', {}, el('button', { type: 'submit', class: 'primary' }, 'Log in')));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      await send('POST', '/login', { token: input.value });
      loggedOut = false;
      show();
    } catch (e) {
      loggedOut = true;
      error.textContent = e.message;
      input.focus();
    }
  });
  main().replaceChildren(form);
  input.focus();
}

setUnauthenticatedHandler(() => showLogin());
document.getElementById('logout').addEventListener('click', async () => {
  await send('POST', '/logout');
  showLogin('Logged out.');
});
window.addEventListener('hashchange', () => { show(); main().focus(); });
// The skip link moves the focus to the page's content (its #main would be read as a page).
document.querySelector('.skip').addEventListener('click', (event) => {
  event.preventDefault();
  main().focus();
});
show();
