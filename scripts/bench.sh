#!/usr/bin/env bash
# Runs Reef's benchmarks against an existing build and prints six tables (docs/benchmarks.md):
# the engine kernels against V8 and native code, the actor workloads against Erlang/OTP, the
# event store against this disk's fdatasync and plain SQLite inserts, the durable image against
# the event store's conditional append and the disk's fdatasync, the event-sourced
# modules against the store's own HTTP append and plain SQLite inserts, and program unit
# invocations over HTTP against a native Boost.Beast handler.
#
#   bash scripts/bench.sh BUILD_DIR          (what `make bench` runs after building)
#   REEF_BENCH_ACTORS=0 REEF_BENCH_EVENTS=0 REEF_BENCH_APPS=0 bash scripts/bench.sh BUILD_DIR
#                                            (the engine table)
#   REEF_BENCH_ENGINE=0 REEF_BENCH_ACTORS=0 REEF_BENCH_APPS=0 bash scripts/bench.sh BUILD_DIR
#                                            (event store only)
#   REEF_BENCH_ENGINE=0 REEF_BENCH_ACTORS=0 REEF_BENCH_EVENTS=0 bash scripts/bench.sh BUILD_DIR
#                                            (event-sourced modules only)
#
#   REEF_BENCH_ENGINE=0 REEF_BENCH_ACTORS=0 REEF_BENCH_EVENTS=0 REEF_BENCH_APPS=0 \
#     bash scripts/bench.sh BUILD_DIR        (programs and units only)
#
# Each table can be skipped: REEF_BENCH_ENGINE=0, REEF_BENCH_ACTORS=0, REEF_BENCH_EVENTS=0,
# REEF_BENCH_APPS=0, REEF_BENCH_PROGRAMS=0, REEF_BENCH_DASHBOARD=0.
#
# Engine table. In one run, the same kernels (bench/kernels/kernels.c) go through four runners:
#   Reef interp  BUILD_DIR/bench/reef_bench on BUILD_DIR/guests/bench_kernels.wasm
#   Reef native  the same with `native` (the native tier; its compile is not timed)
#   V8           node bench/v8_anchor.mjs on that same .wasm file (the anchor)
#   native       BUILD_DIR/bench/bench_native, the C compiled with -O2 (the limit)
# Each prints machine-readable `bench ...` lines (echoed here first); every runner must compute
# the same result for each kernel, or this script exits 1. A Reef sample is one run of the
# kernel; V8 and native samples repeat the kernel for at least 100 ms and report one run's time.
#
# Sizes (environment): REEF_BENCH_FIB_N (30), REEF_BENCH_LOOP_N (10000000 iterations),
# REEF_BENCH_MEM_N (300 passes over the 64 KiB buffer),
# REEF_BENCH_CALLS (2000000 calls per run of the call-overhead loop), REEF_BENCH_REPEATS (3
# rounds of all three runners; the median is reported).
#
# Actor table. BUILD_DIR/bench/actor_bench runs ping-pong, fan-out/fan-in and spawn on wasm
# actors with one reactor thread (mode=one_thread) and with two (two_threads), then idle memory
# per actor in REEF_BENCH_ACTOR_REPEATS (3) fresh processes; its `bench engine=reef` lines go to
# scripts/bench_anchors.sh, which runs the same workloads on Erlang/OTP and prints both side by
# side with the cost ratio. Sizes: see bench/actor_bench.cc and bench/anchors/actors.escript.
#
# Event-store table. In one run, back to back on the same disk (in REEF_BENCH_EVENTS_DIR, default
# $TMPDIR or /tmp): BUILD_DIR/bench/storage_candidates, shortened, gives the anchors (the disk's
# fdatasync p50/p99; sqlite_wal_plain append_1 and append_100: plain SQLite inserts of the same
# rows, synchronous=FULL), then BUILD_DIR/bench/events_bench measures Reef's store
# (conditional appends with 1, 16 and 64 writers at 1 and 100 events per append, the same
# without a condition, full scan, tag queries). The table puts each Reef figure next to its
# anchor and checks issue 5's goals against this run's figures (PASS/MISS; never fails the
# script): 1 writer >= 0.8 / fdatasync p50; 64 writers >= 20x 1 writer; condition overhead
# <= 10%; >= 1 M events/s at 100 events per append (64 writers); full scan >= 5 M events/s.
# Sizes: REEF_BENCH_EVENTS_MILLIS (2000 ms per append case), REEF_BENCH_EVENTS_SCAN (1000000
# events scanned, both programs). About 70 s where fdatasync takes ~4 ms.
#
# Event-sourced modules table. BUILD_DIR/bench/apps_bench (in REEF_BENCH_APPS_DIR, default
# $TMPDIR or /tmp) runs a server on loopback in-process, wired like `reef serve`, and measures
# the bank example's deposit command over HTTP (1 and 64 keep-alive clients, each on its own
# accounts; 64 clients on one shared account, with the conflict retries) against the anchor
# POST /events/append of one conditional event with the same clients; deposit latency on
# accounts of 10, 100 and 1000 events; and the projector test_projector_v1 catching up on a
# store of REEF_BENCH_APPS_EVENTS (1000000) Tick events against plain SQLite inserting as many
# rows in transactions of 512 (WAL, synchronous=NORMAL). Issue 6 sets no numeric goal, so the
# table has no PASS/MISS. Sizes: REEF_BENCH_APPS_MILLIS (3000 ms per append anchor),
# REEF_BENCH_APPS_EVENTS. About 2.5 minutes on 2 cores, nearly all of it the catch-up
# (REEF_BENCH_APPS_EVENTS=200000: about 1 minute).
#
# Programs and units table. BUILD_DIR/bench/program_bench starts the real `reef serve`, deploys
# the example program (examples/program, v1) and measures POST /units/worker/invoke?mode=wait
# (the replicated worker unit) with 1 and 64 keep-alive clients, then the same load against a
# native Boost.Beast handler in the bench process answering a fixed reply of the same size
# (the limit). Issue 7 sets no numeric goal, so no PASS/MISS. Size: REEF_BENCH_PROGRAM_SECONDS
# (3 s per row); about 15 s.
#
# Dashboard table. bench/dashboard_bench.mjs starts Reef as `make run` does, fills it with
# REEF_BENCH_DASHBOARD_EVENTS (1000000) events and REEF_BENCH_DASHBOARD_ACTORS (10000) actors,
# and times every page in Debian's chromium: opened in a fresh tab, and reached from another
# page; next to each, its main API request alone. Issue 17's goal: every page shows its data
# in under 1 s (PASS/MISS on the fresh-tab figure). About 2 minutes, most of it filling.
#
# Guest languages table. The bank's deposit command and the counter actor in C, AssemblyScript
# and Rust (issue 18): module sizes, engine instructions of each guest call of one deposit
# (BUILD_DIR/bench/guest_languages_bench: init, fold over 100 events of the account, decide;
# each on a fresh instance, on the interpreter) and of one counter `add` (`reef wasm handle
# --profile`), and the deposit's median wall time. Measured, not a goal (no PASS/MISS); the C
# row is the anchor. Skip with REEF_BENCH_LANGUAGES=0. A few seconds.
#
# PostgreSQL table (issue 19). BUILD_DIR/bench/pg_bench starts a throwaway PostgreSQL cluster
# with its durable defaults (scripts/pg_cluster.sh, state in REEF_BENCH_PG_DIR, default
# $TMPDIR/reef-bench-pg) and measures, in one run: conditional appends with 1 and 10 writers
# against plain single-row INSERTs of the same rows, 100-event appends against COPY of the same
# rows, subscriber lag under 10 writers (on the writers' node and on a second store, another
# node's), and bank deposits over HTTP with 16 clients on the embedded store, on PostgreSQL, and
# on two nodes sharing the database. Goals: >= 0.5x the anchor for the appends; lag p99 <= 50
# ms (PASS/MISS); the bank row is reported. Sizes: REEF_BENCH_PG_MILLIS (2000 ms per case).
# Skip with REEF_BENCH_PG=0. About 30 s.
set -euo pipefail

build=${1:?usage: bash scripts/bench.sh BUILD_DIR}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bench_awk=$(cat "$root/scripts/bench_lib.awk")  # field(), median() and get()
fib_n=${REEF_BENCH_FIB_N:-30}
loop_n=${REEF_BENCH_LOOP_N:-10000000}
mem_n=${REEF_BENCH_MEM_N:-300}
calls=${REEF_BENCH_CALLS:-2000000}
repeats=${REEF_BENCH_REPEATS:-3}

wasm=$build/guests/bench_kernels.wasm
engine=${REEF_BENCH_ENGINE:-1}
actors=${REEF_BENCH_ACTORS:-1}
events=${REEF_BENCH_EVENTS:-1}
apps=${REEF_BENCH_APPS:-1}
programs=${REEF_BENCH_PROGRAMS:-1}
dashboard=${REEF_BENCH_DASHBOARD:-1}
languages=${REEF_BENCH_LANGUAGES:-1}
pgbench=${REEF_BENCH_PG:-1}
actor_bench=$build/bench/actor_bench
needed=()
if [[ $engine != 0 ]]; then
  needed+=("$wasm" "$build/bench/reef_bench" "$build/bench/bench_native"
    "$build/bench/native_tier_bench")
fi
if [[ $actors != 0 ]]; then
  needed+=("$actor_bench" "$build/guests/pingpong.wasm" "$build/guests/fanout.wasm"
    "$build/guests/caller.wasm" "$build/guests/counter.wasm")
fi
if [[ $events != 0 ]]; then
  needed+=("$build/bench/storage_candidates" "$build/bench/events_bench"
    "$build/bench/durable_bench" "$build/reef")
fi
if [[ $apps != 0 ]]; then
  needed+=("$build/bench/apps_bench" "$build/guests/bank_open_account.wasm"
    "$build/guests/bank_deposit.wasm" "$build/guests/test_projector_v1.wasm")
fi
if [[ $programs != 0 ]]; then
  needed+=("$build/bench/program_bench" "$build/reef" "$build/examples/program/v1/program.json")
fi
if [[ $dashboard != 0 ]]; then
  needed+=("$build/reef" "$build/examples/program/v1/program.json" "$root/web/node_modules/playwright-core"
    "${REEF_CHROMIUM:-/usr/bin/chromium}")
fi
if [[ $pgbench != 0 ]]; then
  needed+=("$build/bench/pg_bench" "$build/reef")
fi
if [[ $languages != 0 ]]; then
  for suffix in "" _as _rs; do
    needed+=("$build/guests/bank_deposit$suffix.wasm" "$build/guests/counter$suffix.wasm")
  done
  needed+=("$build/bench/guest_languages_bench" "$build/reef")
fi
for f in "${needed[@]}"; do
  if [[ ! -e $f ]]; then
    echo "bench: $f is missing; build first (make bench, or cmake --build $build)" >&2
    exit 1
  fi
done
node=$(command -v node || true)
if [[ $engine != 0 && -z $node ]]; then
  echo "bench: node is missing (the V8 anchor); run bash scripts/setup.sh" >&2
  exit 1
fi

lines=$(mktemp)
reef_actor_lines=$(mktemp)
event_lines=$(mktemp)
app_lines=$(mktemp)
program_lines=$(mktemp)
trap 'rm -f "$lines" "$reef_actor_lines" "$event_lines" "$app_lines" "$program_lines"' EXIT

if [[ $engine != 0 ]]; then
  echo "bench: fib($fib_n), loop($loop_n), mem($mem_n), $calls nop calls; median of $repeats rounds;" \
    "node $("$node" --version); load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
  # Rounds interleave the four runners (one sample each per round), so load from anything else
  # on the machine falls on all columns alike rather than on whichever runner happens to be last.
  sizes=("$fib_n" "$loop_n" "$mem_n" "$calls" 1)
  for ((round = 1; round <= repeats; ++round)); do
    "$build/bench/bench_native" "${sizes[@]}" | tee -a "$lines"
    "$node" "$root/bench/v8_anchor.mjs" "$wasm" "${sizes[@]}" | tee -a "$lines"
    "$build/bench/reef_bench" "$wasm" "${sizes[@]}" | tee -a "$lines"
    "$build/bench/reef_bench" "$wasm" "${sizes[@]}" native | tee -a "$lines"
  done
  echo

  # One row per Reef figure; V8 and native are the same kernel's `call` figures. Each figure is
  # the median over the rounds.
  awk -v fib_n="$fib_n" -v loop_n="$loop_n" -v mem_n="$mem_n" "$bench_awk"'
    function ratio(a, b) { return (b > 0) ? sprintf("%.1fx", a / b) : "-" }
    $1 == "bench" {
      engine = field("engine"); kernel = field("kernel"); mode = field("mode")
      key = engine "/" kernel "/" mode
      sample[key, ++count[key]] = field("median")
      budget[key] = field("budget"); slices[key] = field("slices")
      if (kernel in result && result[kernel] != field("result")) {
        printf "bench: MISMATCH: %s computed %s; the first runner computed %s\n", key,
               field("result"), result[kernel] > "/dev/stderr"
        bad = 1
      }
      if (!(kernel in result)) result[kernel] = field("result")
    }
    # goal: "1.3" (Reef native at most that many times native C), "20ns" (at most 20 ns), "".
    function row(label, unit, kernel, mode, goal,   r, rn, v, n, verdict) {
      if (!count["reef/" kernel "/" mode] || !count["reef-native/" kernel "/" mode] ||
          !count["v8/" kernel "/call"] || !count["native/" kernel "/call"]) {
        print "bench: missing figure for " kernel "/" mode > "/dev/stderr"
        bad = 1
        return
      }
      r = median("reef/" kernel "/" mode); rn = median("reef-native/" kernel "/" mode)
      v = median("v8/" kernel "/call"); n = median("native/" kernel "/call")
      verdict = ""
      if (goal ~ /ns$/) {
        verdict = sprintf("<= %s: %s", goal, (rn <= goal + 0) ? "PASS" : "MISS")
      } else if (goal != "") {
        verdict = sprintf("<= %sx: %s", goal, (n > 0 && rn / n <= goal + 0) ? "PASS" : "MISS")
      }
      printf "| %-38s | %-7s | %11.3f | %11.3f | %9.3f | %9.3f | %8s | %11s | %12s | %-14s |\n",
             label, unit, r, rn, v, n, ratio(r, v), ratio(r, n), ratio(rn, n), verdict
    }
    function rate(key) {  # M engine instructions per second of a sliced run (exact to one slice)
      return sprintf("%.1f", slices[key] * budget[key] / (median(key) / 1e3) / 1e6)
    }
    END {
      printf "| %-38s | %-7s | %11s | %11s | %9s | %9s | %8s | %11s | %12s | %-14s |\n",
             "kernel", "unit", "Reef interp", "Reef native", "V8", "native", "interp/V8",
             "interp/C", "Reef native/C", "goal (native)"
      printf "|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n", "----------------------------------------",
             "---------", "-------------", "-------------", "-----------", "-----------",
             "----------", "-------------", "--------------", "----------------"
      row("fib(" fib_n ")", "ms/run", "fib", "call", "1.3")
      row("fib(" fib_n "), 10k-instr slices", "ms/run", "fib", "sliced", "1.4")
      row("loop(" loop_n ")", "ms/run", "loop", "call", "1.3")
      row("loop(" loop_n "), 10k-instr slices", "ms/run", "loop", "sliced", "1.4")
      row("mem(" mem_n ")", "ms/run", "mem", "call", "1.3")
      row("mem(" mem_n "), 10k-instr slices", "ms/run", "mem", "sliced", "1.4")
      row("call nop: Instance::Call", "ns/call", "nop", "call", "20ns")
      row("call nop: Start + Run, reused instance", "ns/call", "nop", "start_run", "20ns")
      if (bad) exit 1
      printf "\nresults: fib=%s loop=%s mem=%s nop-sum=%s (identical in every runner and round)\n",
             result["fib"], result["loop"], result["mem"], result["nop"]
      printf "Reef budgets: Instance::Call with %s instructions per Run; sliced rows Run(%s)" \
             " until finished\n", budget["reef/fib/call"], budget["reef/fib/sliced"]
      printf "Reef speed: interp %s M instr/s on fib, %s on loop; native %s on fib, %s on loop" \
             " (sliced runs)\n", rate("reef/fib/sliced"), rate("reef/loop/sliced"),
             rate("reef-native/fib/sliced"), rate("reef-native/loop/sliced")
      printf "V8 and native call overhead: JS->wasm call of nop; indirect call through a volatile" \
             " function pointer\n"
    }
  ' "$lines"

  # ---- the native tier's own costs: compile, cache hit, instantiate (native_tier_bench) ----
  echo
  echo "bench: native tier costs (bank example modules): a compile-cache miss (CPU of C"
  echo "generation and the compiler, -O1), a hit in a new process, instantiation and Reset"
  cache_dir=$(mktemp -d)
  bank=("$build"/guests/bank_{open_account,deposit,withdraw,balances,withdrawal_alert}.wasm)
  "$build/bench/native_tier_bench" cache "$cache_dir" "${bank[@]}" | tee "$cache_dir/lines"
  "$build/bench/native_tier_bench" instantiate "$build"/guests/bank_{open_account,deposit}.wasm |
    tee -a "$cache_dir/lines"
  awk "$bench_awk"'
    function verdict(value, goal) {
      return sprintf("<= %s: %s", goal, value + 0 <= goal + 0 ? "PASS" : "MISS")
    }
    function row(file, what, value, goal) {
      printf "| %-26s | %-30s | %9s | %-14s |\n", file, what, value, goal
    }
    BEGIN {
      row("module", "figure", "value", "goal")
      printf "|%s|%s|%s|%s|\n", "----------------------------", "--------------------------------",
             "-----------", "----------------"
    }
    $1 == "cache_miss" {
      row(field("file"), "compile (cache miss), CPU s", field("cpu_s"), verdict(field("cpu_s"), 1))
    }
    $1 == "cache_hit" {
      row(field("file"), "cache hit, new process, ms", field("total_ms"),
          verdict(field("total_ms"), 5))
    }
    $1 == "instantiate" {
      native = field("tier") == "native"
      row(field("file"), "instantiate, " field("tier") ", us", field("instantiate_us"),
          native ? verdict(field("instantiate_us"), 10) : "(anchor)")
      row(field("file"), "  first 200 of a process, us", field("cold_us"), "(reported)")
      row(field("file"), "Reset (pooled), " field("tier") ", us", field("reset_us"),
          native ? verdict(field("reset_us"), 10) : "(anchor)")
    }
  ' "$cache_dir/lines"
  rm -rf "$cache_dir"
fi

if [[ $actors != 0 ]]; then
  # ---- actor workloads: Reef here, then Erlang/OTP and the joined table in bench_anchors.sh ----
  echo
  echo "bench: actor workloads, Reef (wasm actors in a free-running runtime); median of" \
    "${REEF_BENCH_ACTOR_REPEATS:-3} runs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
  "$actor_bench" "$build/guests" 1 pingpong fanout call spawn | tee -a "$reef_actor_lines"
  "$actor_bench" "$build/guests" 2 pingpong fanout call spawn | tee -a "$reef_actor_lines"
  # The same workloads with the actors' code on the native tier (engine=reef-native lines: the
  # joined table below is the interpreter's; issue 15's goals are checked on these).
  REEF_ENGINE=native "$actor_bench" "$build/guests" 1 pingpong fanout call spawn |
    tee -a "$reef_actor_lines"
  REEF_ENGINE=native "$actor_bench" "$build/guests" 2 pingpong fanout call spawn |
    tee -a "$reef_actor_lines"
  # Memory per idle actor: one fresh process per run, like the Erlang side's fresh VMs.
  for ((run = 1; run <= ${REEF_BENCH_ACTOR_REPEATS:-3}; ++run)); do
    "$actor_bench" "$build/guests" 2 memory | tee -a "$reef_actor_lines"
  done
  echo
  bash "$root/scripts/bench_anchors.sh" "$reef_actor_lines"
  # Tick cost against stopped actors (issue 16): a tick costs in proportion to the runnable
  # actors, so 20,000 stopped ones beside a ping-pong pair should not slow it.
  echo
  echo "bench: tick 100 of a ping-pong pair in a manual runtime, without and with 20,000" \
    "stopped actors"
  tick_lines=$(mktemp)
  "$actor_bench" "$build/guests" 1 tick | tee "$tick_lines"
  awk "$bench_awk"'
    $1 == "bench" {
      for (i = 2; i <= NF; ++i) { split($i, kv, "="); f[kv[1]] = kv[2] }
      rate[f["stopped"]] = f["median"]
      if (f["stopped"] != 0) stopped = f["stopped"]
    }
    END {
      if (!(0 in rate) || stopped == "") { print "tick: no lines"; exit 1 }
      ratio = rate[stopped] / rate[0]
      printf "tick 100 with %s stopped actors: %.0f ticks/s vs %.0f without: %.2fx (goal >= 0.8x) %s\n",
        stopped, rate[stopped], rate[0], ratio, (ratio >= 0.8 ? "PASS" : "MISS")
    }' "$tick_lines"
  rm -f "$tick_lines"
fi

if [[ $events != 0 ]]; then
  # ---- event store: the anchors (storage_candidates), then Reef's store (events_bench) ----
  ev_dir=${REEF_BENCH_EVENTS_DIR:-${TMPDIR:-/tmp}}
  ev_millis=${REEF_BENCH_EVENTS_MILLIS:-2000}
  ev_scan=${REEF_BENCH_EVENTS_SCAN:-1000000}
  echo
  echo "bench: event store in $ev_dir; storage_candidates (the anchors), then events_bench" \
    "($ev_millis ms per append case, $ev_scan events scanned); load average" \
    "$(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
  # Shortened anchors: the fdatasync probe and SQLite's 1- and 100-event commits need a few
  # hundred samples; the other candidates run too (storage_candidates has no filter).
  "$build/bench/storage_candidates" --dir "$ev_dir" --syncs 500 --commits 300 \
    --batch-commits 100 --scan-events "$ev_scan" |
    grep -E '^(bench |storage_candidates:|warning:)' | tee -a "$event_lines"
  "$build/bench/events_bench" --dir "$ev_dir" --millis "$ev_millis" --scan-events "$ev_scan" |
    tee -a "$event_lines"
  echo

  # One row per Reef figure, its anchor from the same run, and the goal (issue 5) it is held to.
  awk "$bench_awk"'
    $1 == "bench" {
      key = ""
      for (i = 2; i <= NF; ++i) {
        split($i, kv, "=")
        f[kv[1]] = substr($i, length(kv[1]) + 2)
      }
      if ("storage" in f) key = "sc/" f["storage"] "/" f["case"]
      else if ("events" in f) {
        key = "ev/" f["events"]
        if ("case" in f) key = key "/" f["case"]
        if ("writers" in f) key = key "/" f["writers"] "x" f["events_per_append"]
      }
      for (name in f) val[key, name] = f[name]
      seen[key] = 1
      split("", f)
    }
    function num(v) { return sprintf("%.0f", v) }
    function verdict(ok) { return ok ? "PASS" : "MISS" }
    function row(figure, unit, reef, p50, p99, per_sync, anchor, anchor_value, goal, result) {
      printf "| %-44s | %-9s | %10s | %7s | %7s | %6s | %-38s | %10s | %-30s | %-4s |\n", figure,
             unit, reef, p50, p99, per_sync, anchor, anchor_value, goal, result
    }
    function append_row(w, m, figure, unit, per_s, anchor, anchor_value, goal, result,   k) {
      k = "ev/append_cond/" w "x" m
      row(figure, unit, num(get(k, per_s)), num(get(k, "p50_us")), num(get(k, "p99_us")),
          sprintf("%.1f", get(k, "appends_per_sync")), anchor, anchor_value, goal, result)
    }
    END {
      sync_p50 = get("sc/fdatasync/4k_append", "p50_us")
      sqlite_1 = num(get("sc/sqlite_wal_plain/append_1", "commits_per_s"))
      sqlite_100 = num(get("sc/sqlite_wal_plain/append_100", "events_per_s"))
      one = get("ev/append_cond/1x1", "appends_per_s")
      floor = sync_p50 > 0 ? 0.8 * 1e6 / sync_p50 : 0
      many = get("ev/append_cond/64x1", "appends_per_s")
      ratio = one > 0 ? many / one : 0
      batch = get("ev/append_cond/64x100", "events_per_s")
      scan = get("ev/scan", "events_per_s")

      row("figure", "unit", "Reef", "p50 us", "p99 us", "/sync", "anchor (same run)", "anchor",
          "goal (issue 5)", "")
      printf "|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n", "----------------------------------------------",
             "-----------", "------------", "---------", "---------", "--------",
             "----------------------------------------", "------------",
             "--------------------------------", "------"
      row("disk: 4 KiB append + fdatasync (probe)", "us", num(get("ev/fdatasync/probe", "p50_us")),
          num(get("ev/fdatasync/probe", "p50_us")), num(get("ev/fdatasync/probe", "p99_us")), "",
          "storage_candidates fdatasync p50", num(sync_p50), "", "")
      append_row(1, 1, "append 1 event, 1 writer, conditional", "appends/s", "appends_per_s",
                 "sqlite_wal_plain append_1 commits/s", sqlite_1,
                 sprintf(">= 0.8/fdatasync = %.0f", floor), verdict(one >= floor))
      append_row(16, 1, "append 1 event, 16 writers, conditional", "appends/s", "appends_per_s",
                 "sqlite_wal_plain append_1 commits/s", sqlite_1, "", "")
      append_row(64, 1, "append 1 event, 64 writers, conditional", "appends/s", "appends_per_s",
                 "sqlite_wal_plain append_1 commits/s", sqlite_1,
                 sprintf(">= 20x 1 writer: %.1fx", ratio), verdict(ratio >= 20))
      append_row(1, 100, "append 100 events, 1 writer, conditional", "events/s", "events_per_s",
                 "sqlite_wal_plain append_100 events/s", sqlite_100, "", "")
      append_row(16, 100, "append 100 events, 16 writers, conditional", "events/s", "events_per_s",
                 "sqlite_wal_plain append_100 events/s", sqlite_100, "", "")
      append_row(64, 100, "append 100 events, 64 writers, conditional", "events/s", "events_per_s",
                 "sqlite_wal_plain append_100 events/s", sqlite_100, ">= 1000000 events/s",
                 verdict(batch >= 1e6))
      # The image journal (storage for issue 16, not yet its durable transitions): reported.
      jk = "ev/journal_append/64x1"
      journal = get(jk, "appends_per_s")
      row("image journal: 1 record, 64 writers, durable", "records/s", num(journal),
          num(get(jk, "p50_us")), num(get(jk, "p99_us")),
          sprintf("%.1f", get(jk, "appends_per_sync")), "append_cond 64 writers appends/s",
          num(many), sprintf("reported: %.2fx", many > 0 ? journal / many : 0), "")
      n = split("1x1 16x1 64x1 1x100 16x100 64x100", configs, " ")
      for (i = 1; i <= n; ++i) {
        split(configs[i], wm, "x")
        pct = get("ev/condition_overhead/" configs[i], "condition_overhead_pct")
        k = "ev/append_plain/" configs[i]
        cpu = get("ev/condition_overhead/" configs[i], "cpu_overhead_pct")
        row(sprintf("condition overhead, %d writer%s x %d event%s", wm[1], wm[1] > 1 ? "s" : "",
                    wm[2], wm[2] > 1 ? "s" : ""), "%", sprintf("%.1f", pct),
            num(get(k, "p50_us")), num(get(k, "p99_us")),
            sprintf("%.1f", get(k, "appends_per_sync")),
            sprintf("no condition appends/s; CPU %+.1f%%", cpu), num(get(k, "appends_per_s")),
            "<= 10%", verdict(pct <= 10))
      }
      row(sprintf("full scan, Query{}, %d events", get("ev/scan", "events_read")), "events/s",
          num(scan), "", "", "", "sqlite_wal scan (events table)",
          num(get("sc/sqlite_wal/scan", "events_per_s")), ">= 5000000 events/s",
          verdict(scan >= 5e6))
      row("tag query, 1 tag on ~1% of events, whole", "events/s",
          num(get("ev/tag_query", "events_per_s")), num(get("ev/tag_query", "p50_us")),
          num(get("ev/tag_query", "p99_us")), "", "segment_log scan (raw file)",
          num(get("sc/segment_log/scan", "events_per_s")), "", "")
      row("tag query, limit 100, random start", "queries/s",
          num(get("ev/tag_query_limit", "queries_per_s")), num(get("ev/tag_query_limit", "p50_us")),
          num(get("ev/tag_query_limit", "p99_us")), "", "", "", "", "")
      row(sprintf("reopen (recover + index), %d events", get("ev/reopen", "events_read")),
          "events/s", num(get("ev/reopen", "events_per_s")), "", "", "", "", "", "", "")
      ids_bytes = get("ev/id_index", "index_bytes_per_event")
      row("unique ids: id index memory", "B/event", sprintf("%.1f", ids_bytes), "", "", "",
          "event log on disk, B/event", sprintf("%.1f", get("ev/id_index", "log_bytes_per_event")),
          "<= 24 B/event", verdict(ids_bytes <= 24))
      id_ns = get("ev/id_index", "add_ns") + get("ev/id_index", "find_ns")
      append_ns = get("ev/append_cond/1x100", "cpu_us_per_append") * 1000 / 100
      row("unique ids: add + lookup per event", "ns", sprintf("%.0f", id_ns), "", "", "",
          "append CPU per event (1 writer x 100)", sprintf("%.0f", append_ns),
          "<= 10% of append CPU", verdict(id_ns <= 0.1 * append_ns))
      if (bad) exit 1

      printf "\n1 writer: %.0f conditional appends/s = %.2f / fdatasync p50 (%.0f us); " \
             "/sync = appends per fdatasync (Stats().syncs)\n", one, one * sync_p50 / 1e6, sync_p50
      printf "p50/p99: per Append call (condition rows: the run without a condition); " \
             "tag query rows: per query\n"
      printf "condition overhead: (appends/s without - with) / without; CPU: the same on the " \
             "process CPU time per append\n"
      lo = hi = sync_p50
      split("sc/fdatasync/4k_append sc/fdatasync/4k_recheck ev/fdatasync/probe " \
            "ev/fdatasync/recheck", probes, " ")
      list = ""
      for (i = 1; i <= 4; ++i) {
        v = get(probes[i], "p50_us")
        if (v < lo) lo = v
        if (v > hi) hi = v
        list = list (i > 1 ? ", " : "") num(v)
      }
      printf "fdatasync p50 over the run (anchors before/after, events_bench before/after): " \
             "%s us\n", list
      if (hi > 2 * lo) {
        printf "warning: the disk changed speed during the run (fdatasync p50 from %.0f to " \
               "%.0f us); goals tied to fdatasync compare different regimes: rerun\n", lo, hi
      }
    }
  ' "$event_lines"

  # ---- the durable image (issue 16): durable_bench, the anchors from the event lines above ----
  durable_lines=$(mktemp)
  restart_n=${REEF_BENCH_RESTART_ACTORS:-1000000}
  echo
  echo "bench: durable image (durable_bench, native tier; a durable manual group on 2 reactors" \
    "like the live image's) in $ev_dir; restart: $restart_n idle actors"
  for workload in transitions pingpong ack; do
    REEF_ENGINE=native "$build/bench/durable_bench" "$build/guests" "$ev_dir" "$workload" |
      tee -a "$durable_lines"
  done
  "$build/bench/durable_bench" "$build/guests" "$ev_dir" restart "$restart_n" "$build/reef" |
    tee -a "$durable_lines"
  cat "$event_lines" >> "$durable_lines"
  awk "$bench_awk"'
    $1 == "bench" {
      key = ""
      for (i = 2; i <= NF; ++i) {
        split($i, kv, "=")
        f[kv[1]] = substr($i, length(kv[1]) + 2)
      }
      if ("durable" in f) key = "durable/" f["durable"]
      else if ("events" in f && "writers" in f) {
        key = "ev/" f["events"] "/" f["writers"] "x" f["events_per_append"]
      }
      for (name in f) val[key, name] = f[name]
      split("", f)
    }
    function verdict(ok) { return ok ? "PASS" : "MISS" }
    END {
      fmt = "%-44s %-12s %10s | %-36s %10s | %-14s %s\n"
      printf fmt, "durable image", "unit", "Reef", "anchor (same run)", "anchor", "goal", ""
      tps = get("durable/transitions", "transitions_per_s")
      cond = get("ev/append_cond/64x1", "appends_per_s")
      ratio = cond > 0 ? tps / cond : 0
      printf fmt, "durable transitions, 64 senders", "trans/s", sprintf("%.0f", tps),
        "event store conditional append, 64 writers", sprintf("%.0f", cond),
        sprintf(">= 0.5x: %.2fx", ratio), verdict(ratio >= 0.5)
      printf fmt, "  acknowledged sends, 64 senders", "sends/s",
        sprintf("%.0f", get("durable/transitions", "acked_sends_per_s")), "", "",
        sprintf("%.1f records/fsync", get("durable/transitions", "records_per_batch")), ""
      pp = get("durable/pingpong", "ratio")
      printf fmt, "ping-pong, durable", "msg/s",
        sprintf("%.0f", get("durable/pingpong", "durable_msg_per_s")), "the same, --ephemeral",
        sprintf("%.0f", get("durable/pingpong", "ephemeral_msg_per_s")),
        sprintf(">= 0.3x: %.2fx", pp), verdict(pp >= 0.3)
      ack = get("durable/ack", "p50_us")
      sync = get("durable/ack", "fdatasync_p50_us")
      printf fmt, "one send acknowledged, 1 client, p50", "us", sprintf("%.0f", ack),
        "fdatasync p50 (4 KiB appended, probe)", sprintf("%.0f", sync),
        sprintf("<= 2x: %.2fx", sync > 0 ? ack / sync : 0), verdict(ack <= 2 * sync)
      n = get("durable/restart", "actors")
      rs = get("durable/restart", "restart_seconds")
      rss = get("durable/restart", "peak_rss_mib")
      printf fmt, sprintf("restart of reef serve, %d idle actors", n), "s", sprintf("%.2f", rs),
        "", "", "<= 10 s", verdict(rs <= 10)
      printf fmt, "  its peak RSS", "MiB", sprintf("%.0f", rss), "", "", "<= 1536 MiB",
        verdict(rss <= 1536)
      if (bad) exit 1
    }
  ' "$durable_lines"
  rm -f "$durable_lines"
fi

if [[ $apps != 0 ]]; then
  # ---- event-sourced modules: commands over HTTP, projector catch-up (apps_bench) ----
  apps_dir=${REEF_BENCH_APPS_DIR:-${TMPDIR:-/tmp}}
  apps_millis=${REEF_BENCH_APPS_MILLIS:-3000}
  apps_events=${REEF_BENCH_APPS_EVENTS:-1000000}
  echo
  echo "bench: event-sourced modules in $apps_dir; apps_bench ($apps_millis ms per append" \
    "anchor, $apps_events events caught up); load average $(cut -d' ' -f1-3 /proc/loadavg)" \
    "on $(nproc) cores"
  # On the native tier, as `reef serve` runs modules when a C compiler is there (issue 15's
  # goals are set with the native tier); REEF_BENCH_APPS_ENGINE=interp for the interpreter.
  REEF_ENGINE=${REEF_BENCH_APPS_ENGINE:-native} \
    "$build/bench/apps_bench" --dir "$apps_dir" --millis "$apps_millis" --events "$apps_events" |
    tee -a "$app_lines"
  echo

  # One row per Reef figure next to its anchor from the same run; no goal (issue 6 sets none).
  awk "$bench_awk"'
    $1 == "bench" {
      for (i = 2; i <= NF; ++i) {
        split($i, kv, "=")
        f[kv[1]] = substr($i, length(kv[1]) + 2)
      }
      key = "ap/" f["apps"]
      if ("accounts" in f) key = key "/" f["accounts"]
      if ("clients" in f) key = key "/" f["clients"]
      if ("history" in f) key = key "/" f["history"]
      if ("case" in f) key = key "/" f["case"]
      for (name in f) val[key, name] = f[name]
      split("", f)
    }
    function num(v) { return sprintf("%.0f", v) }
    function ratio(a, r) { return r > 0 ? sprintf("%.1fx", a / r) : "-" }
    function row(figure, unit, reef, p50, p99, anchor, anchor_value, anchor_lat, cost) {
      printf "| %-54s | %-8s | %8s | %7s | %8s | %-42s | %8s | %-13s | %8s |\n", figure, unit,
             reef, p50, p99, anchor, anchor_value, anchor_lat, cost
    }
    function deposit_row(figure, k, a,   reef, anc) {
      reef = get(k, "per_s"); anc = get(a, "per_s")
      row(figure, "exec/s", num(reef), num(get(k, "p50_us")), num(get(k, "p99_us")),
          sprintf("POST /events/append, %d client%s", get(a, "clients"),
                  get(a, "clients") > 1 ? "s" : ""), num(anc),
          num(get(a, "p50_us")) " / " num(get(a, "p99_us")), ratio(anc, reef))
    }
    END {
      own1 = "ap/deposit/own/1"; own64 = "ap/deposit/own/64"; shared = "ap/deposit/shared/64"
      row("figure", "unit", "Reef", "p50 us", "p99 us", "anchor (same run)", "anchor",
          "p50 / p99 us", "cost")
      printf "|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n",
             "--------------------------------------------------------", "----------",
             "----------", "---------", "----------",
             "--------------------------------------------", "----------", "---------------",
             "----------"
      deposit_row(sprintf("deposit, 1 client, own accounts (%d events max)",
                          get(own1, "history_end")), own1, "ap/append/1")
      deposit_row(sprintf("deposit, 64 clients, own accounts (%d events max)",
                          get(own64, "history_end")), own64, "ap/append/64")
      deposit_row(sprintf("deposit, 64 clients, ONE account (%d events at end)",
                          get(shared, "history_end")), shared, "ap/append/64")
      row("  conflict retries per execution (shared account)", "retries",
          sprintf("%.2f", get(shared, "retries_per_execution")), "", "",
          sprintf("gave up (409 after the last retry), of %d",
                  get(shared, "requests") + get(shared, "gave_up")),
          num(get(shared, "gave_up")), "", "")
      split("10 100 1000", hs, " ")
      for (i = 1; i <= 3; ++i) {
        k = "ap/deposit_history/" hs[i]
        row(sprintf("deposit latency, 1 client, account of %d events", get(k, "history")), "us",
            num(get(k, "p50_us")), num(get(k, "p50_us")), num(get(k, "p99_us")), "", "", "", "")
      }
      c = get("ap/catchup", "events_per_s"); sq = get("ap/sqlite", "rows_per_s")
      st = get("ap/sqlite_stmt", "rows_per_s")
      row(sprintf("projector catch-up, %d Tick events", get("ap/catchup", "events")), "events/s",
          num(c), "", "", sprintf("SQLite inserts, %d rows/txn, WAL+NORMAL",
                                  get("ap/sqlite", "batch_rows")), num(sq), "", ratio(sq, c))
      row("  the same, against the runner SQL pattern, no wasm", "events/s", num(c), "", "",
          "SQLite, + savepoint + prepare per row", num(st), "", ratio(st, c))
      if (bad) exit 1

      dt = get("ap/deposit_history/1000", "p50_us") - get("ap/deposit_history/10", "p50_us")
      dn = get("ap/deposit_history/1000", "history") - get("ap/deposit_history/10", "history")
      slope = dn > 0 ? dt / dn : 0
      printf "\nexec/s: deposits answered 200 / wall time; p50/p99 per request at the client; " \
             "cost = anchor / Reef\n"
      printf "a deposit folds the events appended since its last execution (the fold cache): " \
             "%.1f us more per event of history at p50; p99 is the first deposit, which folds " \
             "all of it (deposit latency rows)\n", slope
      # The goals issue 15 sets on these figures.
      h = get("ap/deposit_history/1000", "p50_us") / get("ap/deposit_history/10", "p50_us")
      printf "issue 15 goal: deposit latency, account of 1000 events / 10 events = %.2fx " \
             "(goal <= 1.5x): %s\n", h, (h <= 1.5 ? "PASS" : "MISS")
      d = get(own64, "per_s") / get("ap/append/64", "per_s")
      printf "issue 15 goal: deposit, 64 clients / plain conditional append, 64 clients = " \
             "%.2fx (goal >= 0.8x): %s\n", d, (d >= 0.8 ? "PASS" : "MISS")
      cu = st > 0 ? c / st : 0
      printf "issue 15 goal: projector catch-up / the runner SQL pattern without wasm = " \
             "%.2fx (goal >= 0.5x): %s\n", cu, (cu >= 0.5 ? "PASS" : "MISS")
      printf "process CPU per request (server, runtime, store and the clients): deposit %s us " \
             "(1 client), %s us (64), %s us per execution on the shared account; append %s us " \
             "(1 client), %s us (64)\n", num(get(own1, "cpu_us_per_request")),
             num(get(own64, "cpu_us_per_request")), num(get(shared, "cpu_us_per_request")),
             num(get("ap/append/1", "cpu_us_per_request")),
             num(get("ap/append/64", "cpu_us_per_request"))
      printf "heap allocations per request (operator new, the whole process): deposit %s " \
             "(1 client), append %s (1 client)\n", num(get(own1, "allocations_per_request")),
             num(get("ap/append/1", "allocations_per_request"))
      printf "catch-up: %.1f us of process CPU per event, %d events per transaction; " \
             "SQLite anchors: one connection, same table\n", get("ap/catchup", "cpu_us_per_event"),
             get("ap/catchup", "batch_events")
    }
  ' "$app_lines"
fi

if [[ $programs != 0 ]]; then
  # ---- programs and units: unit invocations over HTTP, native Beast handler (program_bench) ----
  program_seconds=${REEF_BENCH_PROGRAM_SECONDS:-3}
  echo
  echo "bench: programs and units; program_bench ($program_seconds s per row); load average" \
    "$(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
  REEF_ENGINE=native "$build/bench/program_bench" --seconds "$program_seconds" |
    tee -a "$program_lines"
  echo

  # One row per figure; the native handler is the limit, measured in the same run.
  awk "$bench_awk"'
    $1 == "bench" {
      for (i = 2; i <= NF; ++i) {
        split($i, kv, "=")
        f[kv[1]] = substr($i, length(kv[1]) + 2)
      }
      key = "pr/" f["program"] "/" f["clients"]
      for (name in f) val[key, name] = f[name]
      split("", f)
    }
    function row(label, key) {
      printf "| %-34s | %8.0f | %7.3f | %7.3f | %14.1f |\n", label, get(key, "per_s"),
             get(key, "p50_ms"), get(key, "p99_ms"), get(key, "server_cpu_us")
    }
    END {
      printf "| %-34s | %8s | %7s | %7s | %14s |\n", "figure", "req/s", "p50 ms", "p99 ms",
             "server CPU us"
      printf "|%s|%s|%s|%s|%s|\n", "------------------------------------", "----------",
             "---------", "---------", "----------------"
      row("reef invoke wait, 1 client", "pr/reef_invoke/1")
      row("reef invoke wait, 64 clients", "pr/reef_invoke/64")
      row("native Beast handler, 1 client", "pr/native_beast/1")
      row("native Beast handler, 64 clients", "pr/native_beast/64")
      if (bad) exit 1
      n1 = get("pr/native_beast/1", "per_s"); r1 = get("pr/reef_invoke/1", "per_s")
      n64 = get("pr/native_beast/64", "per_s"); r64 = get("pr/reef_invoke/64", "per_s")
      printf "\nreq/s: 200 replies / wall time; p50/p99 per request at the client; server CPU us:" \
             " CPU time per request of the reef serve process / of the native server threads\n"
      printf "native / reef: %.1fx req/s with 1 client, %.1fx with 64; native server threads: %s\n",
             (r1 > 0 ? n1 / r1 : 0), (r64 > 0 ? n64 / r64 : 0), val["pr/native_beast/64", "threads"]
      u = n64 > 0 ? r64 / n64 : 0
      printf "issue 15 goal: unit invocation over HTTP, 64 clients / native Beast handler = " \
             "%.2fx (goal >= 0.7x): %s\n", u, (u >= 0.7 ? "PASS" : "MISS")
      hb = get("pr/health/64", "p99_ms"); hi = get("pr/health/0", "p99_ms")
      printf "issue 15 goal: GET /health p99 while 64 clients invoke = %.1f ms (idle server: " \
             "%.1f ms; max %.1f ms; goal <= 100 ms): %s\n", hb, hi, get("pr/health/64", "max_ms"),
             (hb <= 100 ? "PASS" : "MISS")
    }
  ' "$program_lines"
fi

if [[ $dashboard != 0 ]]; then
  echo
  echo "## Dashboard: $(printf "%'d" "${REEF_BENCH_DASHBOARD_ACTORS:-10000}") actors, $(printf "%'d" "${REEF_BENCH_DASHBOARD_EVENTS:-1000000}") events"
  dashboard_lines=$(REEF_SOURCE_DIR="$root" REEF_BUILD_DIR="$(cd "$build" && pwd)" node "$root/bench/dashboard_bench.mjs")
  echo "$dashboard_lines"
  echo
  awk "$bench_awk"'
    $1 == "bench" && $2 == "dashboard" {
      for (i = 3; i <= NF; ++i) { split($i, kv, "="); f[kv[1]] = kv[2] }
      if ("page" in f) { n++; name[n] = f["page"]; load[n] = f["load_ms"]; nav[n] = f["render_ms"]; req[n] = f["request_ms"] }
      split("", f)
    }
    END {
      printf "| %-15s | %12s | %15s | %16s | %-12s |\n", "page", "fresh tab ms", "from a page ms", "API request ms", "goal < 1000"
      printf "|%s|%s|%s|%s|%s|\n", "-----------------", "--------------", "-----------------", "------------------", "--------------"
      for (i = 1; i <= n; ++i) {
        worst = load[i] == "na" ? nav[i] : load[i]
        printf "| %-15s | %12s | %15s | %16s | %-12s |\n", name[i], load[i], nav[i], req[i], (worst + 0 < 1000 ? "PASS" : "MISS")
      }
    }
  ' <<<"$dashboard_lines"
fi

if [[ $languages != 0 ]]; then
  echo
  echo "## Guest languages: the bank's deposit and the counter in C, AssemblyScript and Rust"
  language_lines=$("$build/bench/guest_languages_bench")
  # One counter add, {"op": "add", "value": 1} on state 41, per language: engine instructions.
  for pair in c: assemblyscript:_as rust:_rs; do
    language=${pair%%:*}
    suffix=${pair#*:}
    count=$("$build/reef" wasm handle "$build/guests/counter$suffix.wasm" 41 \
      '{"op": "add", "value": 1}' --profile | sed -n 's/^profile *\([0-9]*\) instructions$/\1/p')
    language_lines+=$'\n'"bench counter language=$language bytes=$(stat -c %s "$build/guests/counter$suffix.wasm") add=$count"
  done
  echo "$language_lines"
  echo
  awk "$bench_awk"'
    $1 == "bench" && $2 ~ /^language=/ {
      for (i = 2; i <= NF; ++i) { split($i, kv, "="); f[kv[1]] = kv[2] }
      n++; lang[n] = f["language"]; bytes[n] = f["bytes"]; init[n] = f["init"]; fold[n] = f["fold"]
      decide[n] = f["decide"]; total[n] = f["total"]; us[n] = f["us"]; split("", f)
    }
    $1 == "bench" && $2 == "counter" {
      for (i = 3; i <= NF; ++i) { split($i, kv, "="); f[kv[1]] = kv[2] }
      cbytes[f["language"]] = f["bytes"]; cadd[f["language"]] = f["add"]; split("", f)
    }
    END {
      printf "| %-14s | %13s | %8s | %10s | %8s | %10s | %6s | %9s | %13s | %11s |\n", "language",
             "deposit bytes", "init", "fold (100)", "decide", "total", "vs C", "median us",
             "counter bytes", "counter add"
      printf "|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n", "----------------", "---------------", "----------",
             "------------", "----------", "------------", "--------", "-----------", "---------------", "-------------"
      for (i = 1; i <= n; ++i) {
        printf "| %-14s | %13s | %8s | %10s | %8s | %10s | %5.1fx | %9s | %13s | %11s |\n", lang[i], bytes[i],
               init[i], fold[i], decide[i], total[i], total[i] / total[1], us[i], cbytes[lang[i]], cadd[lang[i]]
      }
    }
  ' <<<"$language_lines"
fi

if [[ $pgbench != 0 ]]; then
  pg_dir=${REEF_BENCH_PG_DIR:-${TMPDIR:-/tmp}/reef-bench-pg}
  pg_millis=${REEF_BENCH_PG_MILLIS:-2000}
  echo
  echo "## PostgreSQL: the store against plain PostgreSQL ($pg_millis ms per case; cluster state" \
    "in $pg_dir); load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
  pg_lines=$("$build/bench/pg_bench" --state "$pg_dir" --millis "$pg_millis")
  bash "$root/scripts/pg_cluster.sh" stop "$pg_dir"
  echo "$pg_lines"
  echo
  awk "$bench_awk"'
    $1 == "bench" {
      for (i = 2; i <= NF; ++i) { split($i, kv, "="); f[kv[1]] = kv[2] }
      key = f["pg"]
      if ("writers" in f && f["pg"] !~ /^lag/) key = key "/" f["writers"]
      if (f["pg"] == "copy" || f["pg"] == "batch") key = key "x" f["events_per_append"]
      if ("store" in f) key = key "/" f["store"] "/" f["nodes"]
      for (name in f) val[key, name] = f[name]
      split("", f)
    }
    function v(k, name) { return val[k, name] + 0 }
    function row(figure, unit, reef, p99, anchor, anchor_value, ratio, goal, verdict) {
      printf "| %-44s | %-10s | %8s | %8s | %-32s | %8s | %6s | %-9s | %-4s |\n", figure, unit, reef,
             p99, anchor, anchor_value, ratio, goal, verdict
    }
    function vs(figure, k, a, anchor) {
      r = v(k, "per_s") / v(a, "per_s")
      row(figure, "events/s", sprintf("%.0f", v(k, "per_s")), sprintf("%.0f", v(k, "p99_us")),
          anchor, sprintf("%.0f", v(a, "per_s")), sprintf("%.2fx", r), ">= 0.5x",
          r >= 0.5 ? "PASS" : "MISS")
    }
    END {
      row("figure", "unit", "Reef", "p99 us", "anchor (same run)", "anchor", "ratio", "goal", "")
      printf "|%s|%s|%s|%s|%s|%s|%s|%s|%s|\n", "----------------------------------------------",
             "------------", "----------", "----------", "----------------------------------",
             "----------", "--------", "-----------", "------"
      vs("conditional appends, 1 writer", "cond/1", "insert/1", "INSERT, 1 writer")
      vs("conditional appends, 10 writers", "cond/10", "insert/10", "INSERT, 10 writers")
      r = v("cond_alone/10", "per_s") / v("insert/10", "per_s")
      row("the same, each append its own transaction", "events/s",
          sprintf("%.0f", v("cond_alone/10", "per_s")), sprintf("%.0f", v("cond_alone/10", "p99_us")),
          "INSERT, 10 writers", sprintf("%.0f", v("insert/10", "per_s")), sprintf("%.2fx", r),
          "report", "")
      vs("100-event appends, 1 writer", "batch/1x100", "copy/1x100", "COPY of 100 rows, 1 writer")
      vs("1000-event appends, 1 writer", "batch/1x1000", "copy/1x1000",
         "COPY of 1000 rows, 1 writer")
      for (j = 1; j <= 2; ++j) {
        k = j == 1 ? "lag_remote" : "lag_local"
        row(sprintf("subscriber lag p99, 10 writers (%s)", j == 1 ? "other node" : "same node"),
            "ms", sprintf("%.1f", v(k, "p99_us") / 1000), sprintf("%.0f", v(k, "p99_us")),
            sprintf("p50 %.1f ms, %d delivered", v(k, "p50_us") / 1000, v(k, "delivered")), "", "",
            "<= 50 ms", v(k, "p99_us") <= 50000 ? "PASS" : "MISS")
      }
      e = v("bank/embedded/1", "per_s"); p1 = v("bank/postgresql/1", "per_s")
      p2 = v("bank/postgresql/2", "per_s")
      row("bank deposits over HTTP, 16 clients, 1 node", "deposits/s", sprintf("%.0f", p1),
          sprintf("%.0f", v("bank/postgresql/1", "p99_us")), "the embedded store, 1 node",
          sprintf("%.0f", e), sprintf("%.2fx", p1 / e), "report", "")
      row("bank deposits over HTTP, 16 clients, 2 nodes", "deposits/s", sprintf("%.0f", p2),
          sprintf("%.0f", v("bank/postgresql/2", "p99_us")), "the same on 1 node (PostgreSQL)",
          sprintf("%.0f", p1), sprintf("%.2fx", p2 / p1), "report", "")
    }
  ' <<<"$pg_lines"
fi
