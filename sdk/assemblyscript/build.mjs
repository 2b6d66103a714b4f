#!/usr/bin/env node
// Reef AssemblyScript SDK: builds one guest module with asc and the flags Reef needs, then
// checks that it imports only from module "reef".
//
//   node build.mjs ENTRY.ts OUT.wasm [--runtime stub|minimal|incremental] [--wat OUT.wat]
//                  [--verbose] [-- more asc flags]
//   npx reef-asc ENTRY.ts OUT.wasm ...   (the same, in a project that installed the SDK)
//
// The asc command it runs (printed with --verbose):
//   asc ENTRY.ts -o OUT.wasm --optimizeLevel 3 --shrinkLevel 1 --noAssert --runtime stub
//       --use abort=reef_abort --disable nontrapping-f2i
// --optimizeLevel 3 --shrinkLevel 1 (asc's -O3s): the host charges per instruction; on the
//   counter this is 2% more instructions than -O3 for a module 14% smaller (-Oz: 3% more,
//   no smaller). --noAssert drops the standard library's internal assertions (the SDK checks
//   what comes from outside itself).
// --runtime stub: a bump allocator the SDK resets at every call (assembly/runtime.ts says why).
// --use abort=reef_abort: `throw` and runtime errors fail the call through reef.fail instead
//   of importing env.abort, which the host refuses.
// --disable nontrapping-f2i: ABI v1 is core wasm 1.0 plus bulk memory, sign extension, mutable
//   globals and multi-value; asc enables the saturating conversions by default.
// asc is taken from the current directory's node_modules, else from the SDK's own.
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { dirname, join } from 'node:path';

const here = dirname(new URL(import.meta.url).pathname);

/** The flags every Reef guest gets; `runtime` is stub unless told otherwise. */
export function ascFlags(runtime = 'stub') {
  return ['--optimizeLevel', '3', '--shrinkLevel', '1', '--noAssert', '--runtime', runtime,
    '--use', 'abort=reef_abort', '--disable', 'nontrapping-f2i'];
}

/** The imports of a wasm binary: [{module, name}]. */
export function wasmImports(bytes) {
  let i = 8;
  const u = () => { let r = 0, s = 0, b; do { b = bytes[i++]; r |= (b & 0x7f) << s; s += 7; } while (b & 0x80); return r >>> 0; };
  const name = () => { const n = u(); const s = new TextDecoder().decode(bytes.subarray(i, i + n)); i += n; return s; };
  const out = [];
  while (i < bytes.length) {
    const id = bytes[i++], size = u(), end = i + size;
    if (id === 2) {
      for (let n = u(); n > 0; n--) {
        const module = name(), field = name(), kind = bytes[i++];
        out.push({ module, name: field, kind });
        if (kind === 0) u(); else break; // only functions are expected; stop reading otherwise
      }
    }
    i = end;
  }
  return out;
}

const REEF_IMPORTS = new Set(['send', 'send_from', 'call', 'call_reply', 'log', 'self', 'fail',
  'now_ms', 'random', 'env', 'sql_exec', 'sql_query', 'append']);
const HINTS = {
  'env.abort': 'a throw without --use abort=reef_abort',
  'env.seed': 'Math.random(): use random() or randomU64() from the SDK (commands, projectors and effects; an actor gets no randomness: pass a seed in the message)',
  'env.trace': 'trace(): use log.debug() from the SDK',
  'env.Date.now': 'Date.now(): use nowMs() from the SDK (commands, projectors and effects; an actor gets no clock: pass the time in the message)',
  'env.console.log': 'console.log(): use log.info() from the SDK',
};

/** Problems with the imports of `bytes` (empty when all come from module "reef"). */
export function importProblems(bytes) {
  return wasmImports(bytes)
    .filter((imp) => imp.module !== 'reef' || imp.kind !== 0 || !REEF_IMPORTS.has(imp.name))
    .map((imp) => {
      const key = `${imp.module}.${imp.name}`;
      return `import ${key} is not one of module "reef"` + (HINTS[key] ? ` (${HINTS[key]})` : '');
    });
}

/** Loads asc's main(): from the node_modules nearest the current directory, else the SDK's. */
async function loadAsc() {
  for (let dir of [process.cwd(), here]) {
    for (;;) {
      const asc = join(dir, 'node_modules', 'assemblyscript', 'dist', 'asc.js');
      if (existsSync(asc)) return import(pathToFileURL(asc).href);
      if (dirname(dir) === dir) break;
      dir = dirname(dir);
    }
  }
  throw new Error('assemblyscript is not installed: run npm install');
}

/** Builds `entry` into `out`. Returns the exit code (0 on success). */
export async function build(entry, out, { runtime = 'stub', wat = null, extra = [], verbose = false } = {}) {
  const args = [entry, '-o', out, ...(wat ? ['-t', wat] : []), ...ascFlags(runtime), ...extra];
  if (verbose) console.error(`asc ${args.join(' ')}`);
  const asc = await loadAsc();
  const { error } = await asc.main(args, { stderr: process.stderr, stdout: process.stdout });
  if (error) {
    console.error(`reef-asc: ${entry}: ${error.message}`);
    return 1;
  }
  const problems = importProblems(readFileSync(out));
  for (const p of problems) console.error(`reef-asc: ${out}: ${p}; the host refuses it`);
  return problems.length ? 1 : 0;
}

if (process.argv[1] && realpathSync(new URL(import.meta.url).pathname) === realpathSync(process.argv[1])) {
  const argv = process.argv.slice(2);
  const opts = { extra: [] };
  const pos = [];
  for (let k = 0; k < argv.length; k++) {
    if (argv[k] === '--runtime') opts.runtime = argv[++k];
    else if (argv[k] === '--wat') opts.wat = argv[++k];
    else if (argv[k] === '--verbose') opts.verbose = true;
    else if (argv[k] === '--') { opts.extra = argv.slice(k + 1); break; }
    else pos.push(argv[k]);
  }
  if (pos.length !== 2) {
    console.error('usage: node build.mjs ENTRY.ts OUT.wasm [--runtime stub|minimal|incremental] [--wat OUT.wat] [--verbose] [-- asc flags]');
    process.exit(2);
  }
  process.exit(await build(pos[0], pos[1], opts));
}
