#!/usr/bin/env bash
# Runs the Erlang/OTP anchors of Reef's actor workloads and prints their `bench ...` lines and
# one table (docs/benchmarks.md, "Actor workloads: Erlang anchors").
#
#   bash scripts/bench_anchors.sh [REEF_LINES]
#
# The anchors are bench/anchors/actors.escript, run in fresh VMs: pingpong, fanout, call and spawn
# with one scheduler thread (+S 1:1, mode=one_thread) and with two (+S 2:2, mode=two_threads);
# memory alone in a fresh VM per run (REEF_BENCH_ACTOR_REPEATS runs, default 3).
# REEF_LINES (optional): a file of `bench engine=reef ...` lines of the same workloads; rows
# are joined on kernel + mode (+ n for the idle_* memory kernels) and get a Reef column and a
# cost ratio (> 1: Reef is slower or bigger). Sizes: see the header of actors.escript.
# `make bench` (scripts/bench.sh) runs bench/actor_bench for REEF_LINES and then this script.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bench_awk=$(cat "$root/scripts/bench_lib.awk")  # field() and median()
reef_lines=${1:-}
repeats=${REEF_BENCH_ACTOR_REPEATS:-3}
escript=$(command -v escript || true)
if [[ -z $escript ]]; then
  echo "bench_anchors: escript is missing (Erlang/OTP); run bash scripts/setup.sh" >&2
  exit 1
fi
if [[ -n $reef_lines && ! -r $reef_lines ]]; then
  echo "bench_anchors: cannot read $reef_lines" >&2
  exit 1
fi
script=$root/bench/anchors/actors.escript
otp=$(erl -noshell -eval 'io:format("~s ~s", [erlang:system_info(otp_release),
  erlang:system_info(emu_flavor)]), halt().')

echo "bench_anchors: Erlang/OTP $otp; median of $repeats runs;" \
  "load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
lines=$(mktemp)
trap 'rm -f "$lines"' EXIT
# ERL_FLAGS is set here, so a caller's ERL_FLAGS cannot change the scheduler count.
ERL_FLAGS="+S 1:1" "$escript" "$script" pingpong fanout call spawn | tee -a "$lines"
ERL_FLAGS="+S 2:2" "$escript" "$script" pingpong fanout call spawn | tee -a "$lines"
for ((run = 1; run <= repeats; ++run)); do
  ERL_FLAGS="+S 2:2" "$escript" "$script" memory | tee -a "$lines"
done
echo

# Each key's figure is the median over its lines' medians (one line per key, except memory:
# one line per fresh VM).
awk "$bench_awk"'
  function num(x) { return (x >= 1000) ? sprintf("%.0f", x) : sprintf("%.1f", x) }
  $1 == "bench" {
    engine = field("engine"); kernel = field("kernel"); mode = field("mode"); n = field("n")
    row = kernel "/" mode (kernel ~ /^idle_/ ? "/" n : "")
    if (!(row in seen)) { seen[row] = 1; order[++rows] = row; label[row] = kernel " " mode
                          unit[row] = field("unit") }
    key = engine "|" row
    size[key] = n
    sample[key, ++count[key]] = field("median")
  }
  # n of each engine: one figure when they agree, else "Reef / Erlang" (rates need not use
  # equal sizes; the idle_* rows are joined on n, so theirs always agree).
  function sizes(row,   r, e) {
    r = size["reef|" row]; e = size["erlang|" row]
    if (r == "") r = size["reef-native|" row]
    if (r == "" || e == "" || r == e) return (r == "") ? e : r
    return r " / " e
  }
  function cost(x) { return (x >= 10) ? sprintf("%.0fx", x) : (x >= 1) ? sprintf("%.1fx", x) \
                                                                       : sprintf("%.2fx", x) }
  END {
    printf "| %-30s | %-17s | %-15s | %12s | %12s | %12s | %12s | %12s |\n", "workload",
           "n (Reef / Erlang)", "unit", "Reef interp", "Reef native", "Erlang/OTP", "interp cost",
           "native cost"
    printf "|%s|%s|%s|%s|%s|%s|%s|%s|\n", "--------------------------------",
           "-------------------", "-----------------", "--------------", "--------------",
           "--------------", "--------------", "--------------"
    for (i = 1; i <= rows; ++i) {
      row = order[i]
      e = count["erlang|" row] ? median("erlang|" row) : ""
      r = count["reef|" row] ? median("reef|" row) : ""
      n = count["reef-native|" row] ? median("reef-native|" row) : ""
      printf "| %-30s | %-17s | %-15s | %12s | %12s | %12s | %12s | %12s |\n", label[row],
             sizes(row), unit[row], (r == "") ? "-" : num(r), (n == "") ? "-" : num(n),
             (e == "") ? "-" : num(e), ratio(row, r, e), ratio(row, n, e)
    }
    # The goals issue 15 sets on these rows: Reef / Erlang (a share of Erlang, higher is better),
    # on the native tier when the run has its lines (engine=reef-native), else the interpreter.
    printf "\n"
    goal("pingpong/one_thread", 0.3, "ping-pong, one reactor")
    engine = count["reef-native|pingpong/one_thread"] ? "reef-native" : "reef"
    rate = count[engine "|pingpong/one_thread"] ? median(engine "|pingpong/one_thread") : 0
    printf "issue 15 goal: ping-pong, one reactor = %.0f msg/s, %s (goal >= 1000000): %s\n", rate,
           tier(engine), (rate >= 1e6 ? "PASS" : "MISS")
    goal("pingpong/two_threads", 1.0, "ping-pong, across two reactors")
    goal("fanout/one_thread", 0.5, "fan-out/fan-in 1-1000-1, one reactor")
    goal("fanout/two_threads", 0.5, "fan-out/fan-in 1-1000-1, two reactors")
    goal("spawn/one_thread", 1.0, "spawn, one reactor")
    goal("spawn/two_threads", 1.0, "spawn, two reactors")
    goal("call/one_thread", 0.5, "call round trip, one reactor (gen_server:call)")
    goal("call/two_threads", 0.5, "call round trip, two reactors (gen_server:call)")
  }
  # The cost of Reef figure `r` against Erlang figure `e` (> 1: Reef is slower or bigger), or "-".
  function ratio(row, r, e) {
    if (e == "" || r == "" || e <= 0 || r <= 0) return "-"
    return cost((unit[row] ~ /_per_s$/) ? e / r : r / e)
  }
  function tier(engine) { return engine == "reef-native" ? "native tier" : "interpreter" }
  function goal(row, share, label,   engine, r, e) {
    engine = count["reef-native|" row] ? "reef-native" : "reef"
    if (!count[engine "|" row] || !count["erlang|" row]) {
      printf "issue 15 goal: %s: not measured in this run\n", label
      return
    }
    r = median(engine "|" row); e = median("erlang|" row)
    printf "issue 15 goal: %s = %.3fx Erlang, %s (goal >= %.1fx): %s\n", label, r / e,
           tier(engine), share, (r / e >= share ? "PASS" : "MISS")
  }
' "$lines" ${reef_lines:+"$reef_lines"}
