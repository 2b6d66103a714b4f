#!/usr/bin/env bash
# Runs Reef's benchmarks against an existing build and prints two tables (docs/benchmarks.md):
# the engine kernels against V8 and native code, then the actor workloads against Erlang/OTP.
#
#   bash scripts/bench.sh BUILD_DIR          (what `make bench` runs after building)
#   REEF_BENCH_ACTORS=0 bash scripts/bench.sh BUILD_DIR    (the engine table only)
#
# Engine table. In one run, the same kernels (bench/kernels/kernels.c) go through three runners:
#   Reef interp  BUILD_DIR/bench/reef_bench on BUILD_DIR/guests/bench_kernels.wasm
#   V8           node bench/v8_anchor.mjs on that same .wasm file (the anchor)
#   native       BUILD_DIR/bench/bench_native, the C compiled with -O2 (the limit)
# Each prints machine-readable `bench ...` lines (echoed here first); every runner must compute
# the same result for each kernel, or this script exits 1. A Reef sample is one run of the
# kernel; V8 and native samples repeat the kernel for at least 100 ms and report one run's time.
#
# Sizes (environment): REEF_BENCH_FIB_N (30), REEF_BENCH_LOOP_N (10000000 iterations),
# REEF_BENCH_CALLS (2000000 calls per run of the call-overhead loop), REEF_BENCH_REPEATS (3
# rounds of all three runners; the median is reported).
#
# Actor table. BUILD_DIR/bench/actor_bench runs ping-pong, fan-out/fan-in and spawn on wasm
# actors with one reactor thread (mode=one_thread) and with two (two_threads), then idle memory
# per actor in REEF_BENCH_ACTOR_REPEATS (3) fresh processes; its `bench engine=reef` lines go to
# scripts/bench_anchors.sh, which runs the same workloads on Erlang/OTP and prints both side by
# side with the cost ratio. Sizes: see bench/actor_bench.cc and bench/anchors/actors.escript.
set -euo pipefail

build=${1:?usage: bash scripts/bench.sh BUILD_DIR}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
fib_n=${REEF_BENCH_FIB_N:-30}
loop_n=${REEF_BENCH_LOOP_N:-10000000}
calls=${REEF_BENCH_CALLS:-2000000}
repeats=${REEF_BENCH_REPEATS:-3}

wasm=$build/guests/bench_kernels.wasm
actors=${REEF_BENCH_ACTORS:-1}
actor_bench=$build/bench/actor_bench
needed=("$wasm" "$build/bench/reef_bench" "$build/bench/bench_native")
if [[ $actors != 0 ]]; then
  needed+=("$actor_bench" "$build/guests/pingpong.wasm" "$build/guests/fanout.wasm"
    "$build/guests/counter.wasm")
fi
for f in "${needed[@]}"; do
  if [[ ! -e $f ]]; then
    echo "bench: $f is missing; build first (make bench, or cmake --build $build)" >&2
    exit 1
  fi
done
node=$(command -v node || true)
if [[ -z $node ]]; then
  echo "bench: node is missing (the V8 anchor); run bash scripts/setup.sh" >&2
  exit 1
fi

echo "bench: fib($fib_n), loop($loop_n), $calls nop calls; median of $repeats rounds;" \
  "node $("$node" --version); load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
lines=$(mktemp)
reef_actor_lines=$(mktemp)
trap 'rm -f "$lines" "$reef_actor_lines"' EXIT
# Rounds interleave the three runners (one sample each per round), so load from anything else
# on the machine falls on all columns alike rather than on whichever runner happens to be last.
sizes=("$fib_n" "$loop_n" "$calls" 1)
for ((round = 1; round <= repeats; ++round)); do
  "$build/bench/bench_native" "${sizes[@]}" | tee -a "$lines"
  "$node" "$root/bench/v8_anchor.mjs" "$wasm" "${sizes[@]}" | tee -a "$lines"
  "$build/bench/reef_bench" "$wasm" "${sizes[@]}" | tee -a "$lines"
done
echo

# One row per Reef figure; V8 and native are the same kernel's `call` figures. Each figure is
# the median over the rounds.
awk -v fib_n="$fib_n" -v loop_n="$loop_n" '
  function field(name,   i, kv) {
    for (i = 2; i <= NF; ++i) {
      split($i, kv, "=")
      if (kv[1] == name) return substr($i, length(name) + 2)
    }
    return ""
  }
  function median(key,   n, i, j, v, tmp) {
    n = count[key]
    for (i = 1; i <= n; ++i) v[i] = sample[key, i] + 0
    for (i = 2; i <= n; ++i) {
      tmp = v[i]
      for (j = i - 1; j >= 1 && v[j] > tmp; --j) v[j + 1] = v[j]
      v[j + 1] = tmp
    }
    return v[int(n / 2) + 1]
  }
  function ratio(a, b) { return (b > 0) ? sprintf("%.1fx", a / b) : "-" }
  $1 == "bench" {
    engine = field("engine"); kernel = field("kernel"); mode = field("mode")
    key = engine "/" kernel "/" mode
    sample[key, ++count[key]] = field("median")
    budget[key] = field("budget"); slices[key] = field("slices")
    if (kernel in result && result[kernel] != field("result")) {
      printf "bench: MISMATCH: %s computed %s; the first runner computed %s\n", key, field("result"),
             result[kernel] > "/dev/stderr"
      bad = 1
    }
    if (!(kernel in result)) result[kernel] = field("result")
  }
  function row(label, unit, kernel, mode,   r, v, n) {
    if (!count["reef/" kernel "/" mode] || !count["v8/" kernel "/call"] ||
        !count["native/" kernel "/call"]) {
      print "bench: missing figure for " kernel "/" mode > "/dev/stderr"
      bad = 1
      return
    }
    r = median("reef/" kernel "/" mode); v = median("v8/" kernel "/call")
    n = median("native/" kernel "/call")
    printf "| %-38s | %-7s | %11.3f | %9.3f | %9.3f | %8s | %11s |\n", label, unit, r, v, n,
           ratio(r, v), ratio(r, n)
  }
  function rate(key) {  # M engine instructions per second of a sliced run (exact to one slice)
    return sprintf("%.1f", slices[key] * budget[key] / (median(key) / 1e3) / 1e6)
  }
  END {
    printf "| %-38s | %-7s | %11s | %9s | %9s | %8s | %11s |\n", "kernel", "unit", "Reef interp",
           "V8", "native", "Reef/V8", "Reef/native"
    printf "|%s|%s|%s|%s|%s|%s|%s|\n", "----------------------------------------", "---------",
           "-------------", "-----------", "-----------", "----------", "-------------"
    row("fib(" fib_n ")", "ms/run", "fib", "call")
    row("fib(" fib_n "), 10k-instr slices", "ms/run", "fib", "sliced")
    row("loop(" loop_n ")", "ms/run", "loop", "call")
    row("loop(" loop_n "), 10k-instr slices", "ms/run", "loop", "sliced")
    row("call nop: Instance::Call", "ns/call", "nop", "call")
    row("call nop: Start + Run, reused instance", "ns/call", "nop", "start_run")
    if (bad) exit 1
    printf "\nresults: fib=%s loop=%s nop-sum=%s (identical in every runner and round)\n",
           result["fib"], result["loop"], result["nop"]
    printf "Reef budgets: Instance::Call with %s instructions per Run; sliced rows Run(%s) until" \
           " finished\n", budget["reef/fib/call"], budget["reef/fib/sliced"]
    printf "Reef speed: %s M instr/s on fib, %s M instr/s on loop (sliced runs)\n",
           rate("reef/fib/sliced"), rate("reef/loop/sliced")
    printf "V8 and native call overhead: JS->wasm call of nop; indirect call through a volatile" \
           " function pointer\n"
  }
' "$lines"

if [[ $actors == 0 ]]; then
  exit 0
fi

# ---- actor workloads: Reef here, then Erlang/OTP and the joined table in bench_anchors.sh ----
echo
echo "bench: actor workloads, Reef (wasm actors in a free-running runtime); median of" \
  "${REEF_BENCH_ACTOR_REPEATS:-3} runs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
"$actor_bench" "$build/guests" 1 pingpong fanout spawn | tee -a "$reef_actor_lines"
"$actor_bench" "$build/guests" 2 pingpong fanout spawn | tee -a "$reef_actor_lines"
# Memory per idle actor: one fresh process per run, like the Erlang side's fresh VMs.
for ((run = 1; run <= ${REEF_BENCH_ACTOR_REPEATS:-3}; ++run)); do
  "$actor_bench" "$build/guests" 2 memory | tee -a "$reef_actor_lines"
done
echo
bash "$root/scripts/bench_anchors.sh" "$reef_actor_lines"
