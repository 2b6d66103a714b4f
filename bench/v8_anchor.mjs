// v8_anchor: the V8 column of `make bench` (see docs/benchmarks.md).
//
// Runs the very .wasm file Reef runs (bench_kernels.wasm) in Node's V8 with the same inputs:
// fib(FIB_N), loop(LOOP_N), mem(MEM_N), and CALLS calls of nop(i) from JavaScript. Each measurement runs
// once untimed at full size (warm-up, so V8 tiers the function up to its optimising compiler,
// and calibration); then each of REPEATS samples repeats it back to back for at least
// MIN_SAMPLE_MS and reports the time of one run (process.hrtime.bigint()). The median counts.
//
// Usage: node v8_anchor.mjs KERNELS.wasm FIB_N LOOP_N MEM_N CALLS REPEATS
// Prints lines in the same format as reef_bench (parsed by scripts/bench.sh).
import { readFileSync } from 'node:fs';

const usage = 'usage: node v8_anchor.mjs KERNELS.wasm FIB_N LOOP_N MEM_N CALLS REPEATS';
if (process.argv.length !== 8) {
  console.error(usage);
  process.exit(1);
}
const [wasmPath, ...sizes] = process.argv.slice(2);
const [fibN, loopN, memN, calls, repeats] = sizes.map((text) => {
  const v = Number(text);
  if (!Number.isInteger(v) || v < 1 || v > 2 ** 31 - 1) {
    console.error(`v8_anchor: bad size ${text}; ${usage}`);
    process.exit(1);
  }
  return v;
});

const { instance } = await WebAssembly.instantiate(readFileSync(wasmPath), {});
const { fib, loop, mem, nop } = instance.exports;

const MIN_SAMPLE_MS = 100;

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

// Runs `body` (returning a BigInt-convertible result) untimed, then `repeats` samples; each
// figure is milliseconds per run * `scale`.
function measure(body, scale = 1) {
  let start = process.hrtime.bigint();
  const expected = BigInt(body());
  const warmMs = Number(process.hrtime.bigint() - start) / 1e6;
  const reps = Math.min(1e6, Math.max(1, Math.ceil(MIN_SAMPLE_MS / warmMs)));
  const runs = [];
  for (let r = 0; r < repeats; ++r) {
    start = process.hrtime.bigint();
    for (let i = 0; i < reps; ++i) {
      if (BigInt(body()) !== expected) {
        console.error('v8_anchor: result changed between runs');
        process.exit(1);
      }
    }
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    runs.push((ms / reps) * scale);
  }
  return { result: expected, runs, reps };
}

function print(kernel, n, unit, { result, runs, reps }) {
  const fixed = runs.map((v) => v.toFixed(3));
  console.log(
    `bench engine=v8 kernel=${kernel} mode=call n=${n} result=${result} unit=${unit} ` +
      `median=${median(runs).toFixed(3)} runs=${fixed.join(',')} reps=${reps}`,
  );
}

print('fib', fibN, 'ms', measure(() => fib(fibN)));
// loop returns an i64, which JavaScript receives as a BigInt; print it signed like the others.
print('loop', loopN, 'ms', measure(() => BigInt.asIntN(64, loop(loopN))));
print('mem', memN, 'ms', measure(() => BigInt.asIntN(64, mem(memN))));
function callNops() {
  let sum = 0;
  for (let i = 0; i < calls; ++i) sum += nop(i);
  return sum;
}
print('nop', calls, 'ns', measure(callNops, 1e6 / calls));
