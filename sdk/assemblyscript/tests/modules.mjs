// The guest modules the tests build: the SDK's test probes and the examples, each built with
// build.mjs (the flags users get) into tests/build/<dir>/NAME.wasm.
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from '../build.mjs';

export const sdkDir = join(dirname(fileURLToPath(import.meta.url)), '..');
export const repoDir = join(sdkDir, '..', '..');
/** Reef's build folder (REEF_BUILD_DIR, which ctest sets; else the repository's build/): its
 * `reef` and the C guests the tests compare with. */
export const buildDir = process.env.REEF_BUILD_DIR ?? join(repoDir, 'build');
const examples = join(repoDir, 'examples', 'assemblyscript');

/** name -> [entry file, runtime]. */
export const MODULES = {
  probe: [join(sdkDir, 'tests', 'probe.ts'), 'stub'],
  command_probe: [join(sdkDir, 'tests', 'command_probe.ts'), 'stub'],
  projector_probe: [join(sdkDir, 'tests', 'projector_probe.ts'), 'stub'],
  projector_probe_minimal: [join(sdkDir, 'tests', 'projector_probe.ts'), 'minimal'],
  counter: [join(examples, 'counter.ts'), 'stub'],
  program_counter: [join(examples, 'program', 'counter.ts'), 'stub'],
  open_account: [join(examples, 'bank', 'open_account.ts'), 'stub'],
  deposit: [join(examples, 'bank', 'deposit.ts'), 'stub'],
  withdraw: [join(examples, 'bank', 'withdraw.ts'), 'stub'],
  balances: [join(examples, 'bank', 'balances.ts'), 'stub'],
  withdrawal_alert: [join(examples, 'bank', 'withdrawal_alert.ts'), 'stub'],
};

/** The newest modification time (ms) of the SDK's sources and its build script: a module built
 * after it, from an entry older than it, is up to date. */
function sdkTime() {
  let newest = statSync(join(sdkDir, 'build.mjs')).mtimeMs;
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else newest = Math.max(newest, statSync(path).mtimeMs);
    }
  };
  walk(join(sdkDir, 'assembly'));
  return newest;
}

/** Builds `names` (default: all) into <build folder>/sdk-assemblyscript-tests/<dir> (when
 * REEF_BUILD_DIR is set) or tests/build/<dir>; returns name -> wasm path. A module already
 * built there after its entry, the files beside it and the SDK changed is kept (the test files
 * share one folder). Throws when a build fails. */
export async function buildModules(dir, names = Object.keys(MODULES)) {
  const out = process.env.REEF_BUILD_DIR
    ? join(process.env.REEF_BUILD_DIR, 'sdk-assemblyscript-tests', dir)
    : join(sdkDir, 'tests', 'build', dir);
  mkdirSync(out, { recursive: true });
  const sdk = sdkTime();
  const paths = {};
  for (const name of names) {
    const [entry, runtime] = MODULES[name];
    paths[name] = join(out, `${name}.wasm`);
    const sources = readdirSync(dirname(entry)).filter((f) => f.endsWith('.ts'))
      .map((f) => statSync(join(dirname(entry), f)).mtimeMs);
    const built = existsSync(paths[name]) ? statSync(paths[name]).mtimeMs : 0;
    if (built > Math.max(sdk, ...sources)) continue;
    const rc = await build(entry, paths[name], { runtime });
    if (rc !== 0) throw new Error(`building ${name} failed`);
  }
  return paths;
}
