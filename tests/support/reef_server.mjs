// A real `reef serve` for the Node tests (the dashboard's browser tests, the SDK tests): started
// on a free loopback port with a fresh data directory, driven over HTTP and the reef CLI.
//
// Environment (the tests' CMakeLists.txt set it): REEF_SOURCE_DIR, REEF_BUILD_DIR; by default
// this repository and its build/.
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const sourceDir = process.env.REEF_SOURCE_DIR ??
  path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const buildDir = process.env.REEF_BUILD_DIR ?? path.join(sourceDir, 'build');

// Starts Reef as `make run` does (scripts/run.sh: examples uploaded, the example program
// deployed) on a free loopback port and a fresh data directory; resolves once it prints the
// address it serves on. `env`: extra environment (REEF_AUTH_TOKEN). `bare`: `reef serve`
// alone, without the examples (faster, for the login tests), with `args` added to it.
export async function startReef({ env = {}, bare = false, args = [] } = {}) {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'reef-test-'));
  const environment = { ...process.env, REEF_LISTEN: '127.0.0.1:0', REEF_DATA_DIR: dataDir, ...env };
  const child = bare
    ? spawn(path.join(buildDir, 'reef'), ['serve', ...args], { env: environment, detached: true })
    : spawn('bash', [path.join(sourceDir, 'scripts', 'run.sh'), buildDir],
      { cwd: sourceDir, env: environment, detached: true });
  let log = '';
  const address = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`reef did not start within 120 s:\n${log}`)), 120_000);
    const ready = bare ? /serving on ws:\/\/(\S+)/ : /is serving on (\S+) \(data dir/;
    const onData = (chunk) => {
      log += chunk;
      const match = ready.exec(log);
      if (match) { clearTimeout(timer); resolve(match[1]); }
    };
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', onData);
    child.stdout.resume();
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`reef exited (${code}):\n${log}`)); });
  });
  child.removeAllListeners('exit');
  const base = `http://${address}`;
  return {
    address,
    base,
    dataDir,
    log: () => log,
    // HTTP as a client (curl, the CLI) would: JSON in, JSON out; throws on a non-2xx answer.
    async call(method, route, body, headers = {}) {
      const response = await fetch(base + route, {
        method, headers: { 'Content-Type': 'application/json', ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await response.text();
      if (!response.ok) throw new Error(`${method} ${route}: HTTP ${response.status} ${text}`);
      return text ? JSON.parse(text) : {};
    },
    // Any answer, 2xx or not: {status, body} (body parsed as JSON when it is JSON). `body` is
    // sent as JSON unless it is a Buffer or Uint8Array (sent as it is: a module's bytes).
    async request(method, route, body, headers = {}) {
      const raw = body instanceof Uint8Array;
      const response = await fetch(base + route, {
        method,
        headers: { 'Content-Type': raw ? 'application/octet-stream' : 'application/json', ...headers },
        body: body === undefined ? undefined : raw ? body : JSON.stringify(body),
      });
      const text = await response.text();
      let parsed = text;
      try { parsed = text ? JSON.parse(text) : {}; } catch { /* not JSON: kept as text */ }
      return { status: response.status, body: parsed };
    },
    // The reef CLI against this server, as a user would run it; its --json answer.
    cli(...args) {
      return new Promise((resolve, reject) => {
        execFile(path.join(buildDir, 'reef'), ['--connect', address, '--json', ...args],
          { env: { ...environment } }, (error, stdout, stderr) => {
            if (error) reject(new Error(`reef ${args.join(' ')}: ${stderr || error.message}`));
            else resolve(stdout.trim() ? JSON.parse(stdout) : {});
          });
      });
    },
    async stop() {
      await new Promise((resolve) => {
        child.on('exit', resolve);
        try { process.kill(-child.pid, 'SIGINT'); } catch { resolve(); }
        setTimeout(() => { try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ } }, 10_000);
      });
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
