// The guest modules the tests build: the SDK's test probes and the examples, each built with
// build.mjs (the flags users get) into tests/build/<dir>/NAME.wasm.
import { mkdirSync } from 'node:fs';
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

/** Builds `names` (default: all) into <build folder>/sdk-assemblyscript-tests/<dir> (when
 * REEF_BUILD_DIR is set) or tests/build/<dir>; returns name -> wasm path. Throws when a build
 * fails. */
export async function buildModules(dir, names = Object.keys(MODULES)) {
  const out = process.env.REEF_BUILD_DIR
    ? join(process.env.REEF_BUILD_DIR, 'sdk-assemblyscript-tests', dir)
    : join(sdkDir, 'tests', 'build', dir);
  mkdirSync(out, { recursive: true });
  const paths = {};
  for (const name of names) {
    const [entry, runtime] = MODULES[name];
    paths[name] = join(out, `${name}.wasm`);
    const rc = await build(entry, paths[name], { runtime });
    if (rc !== 0) throw new Error(`building ${name} failed`);
  }
  return paths;
}
