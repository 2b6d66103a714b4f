#!/usr/bin/env bash
# Runs every libFuzzer target of a fuzz build for a fixed time each and reports its speed.
#
#   scripts/fuzz.sh BUILD_DIR SECONDS
#
# Targets are BUILD_DIR/fuzz/*_fuzz (built by `make fuzz-build`). Each runs for SECONDS with
# a growing corpus in BUILD_DIR/fuzz-corpus/NAME, seeded from fuzz/seeds/NAME/ and using the
# dictionary fuzz/NAME.dict when present. Crash reproducers land in
# BUILD_DIR/fuzz-artifacts/NAME/. Prints one line per target with its executions per second
# (and the last "NAME: ..." line the target printed, if any);
# exits non-zero when any target crashed, leaked, timed out or failed to run. FUZZ_SEED
# fixes the random seed (default 0: a new seed each run).
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 BUILD_DIR SECONDS" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
seconds=$2
root=$(cd "$(dirname "$0")/.." && pwd)

shopt -s nullglob
targets=("$build"/fuzz/*_fuzz)
if [[ ${#targets[@]} -eq 0 ]]; then
  echo "fuzz: no fuzz targets in $build/fuzz (run make fuzz-build)" >&2
  exit 1
fi

# One target: runs it and prints its line; the exit status says whether it failed.
fuzz_one() {
  local target=$1
  local name corpus artifacts log
  name=$(basename "$target")
  corpus="$build/fuzz-corpus/$name"
  artifacts="$build/fuzz-artifacts/$name"
  log="$build/fuzz-logs/$name.log"
  # tier_diff_fuzz compiles C for every input (about 1 s each) and nearly every input reaches
  # new interpreter paths, so a kept corpus would grow by hundreds a run and replaying it would
  # take the next run's time: it starts from its seeds each run.
  [[ $name == tier_diff_fuzz ]] && rm -rf "$corpus"
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"

  local args=(-max_total_time="$seconds" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048
              -artifact_prefix="$artifacts/" "$corpus")
  [[ -f "$root/fuzz/$name.dict" ]] && args=(-dict="$root/fuzz/$name.dict" "${args[@]}")
  [[ -d "$root/fuzz/seeds/$name" ]] && args+=("$root/fuzz/seeds/$name")
  # Module loading starts from real modules: the guests compiled from source (FUZZ_GUESTS,
  # default this build's guests/).
  [[ $name == module_fuzz && -d "$guests" ]] && args+=("$guests")
  # FUZZ_SEED fixes libFuzzer's random seed (make test's smoke run uses 1); 0 = random.
  args=(-seed="${FUZZ_SEED:-0}" "${args[@]}")

  local status=0
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "$target" "${args[@]}" >"$log" 2>&1 || status=$?

  local execs per_sec corpus_size
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  per_sec=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
  corpus_size=$(find "$corpus" -type f | wc -l)
  if [[ $status -eq 0 ]]; then
    printf 'fuzz: %-16s ok     %8s exec/s  %10s runs  corpus %s  (%ss)\n' \
      "$name" "${per_sec:-?}" "${execs:-?}" "$corpus_size" "$seconds"
    # A target's own summary, if it prints one ("NAME: ..."), e.g. tier_diff_fuzz's skips.
    grep "^$name: " "$log" | tail -n 1 | sed 's/^/fuzz:   /' || true
    return 0
  fi
  printf 'fuzz: %-16s FAILED (exit %s) after %s runs; log %s\n' \
    "$name" "$status" "${execs:-?}" "$log"
  grep -E '^(==[0-9]+==ERROR|SUMMARY|artifact_prefix|Test unit written)' "$log" | head -n 5 |
    sed 's/^/fuzz:   /'
  return 1
}

# FUZZ_JOBS targets run at once (default 1; make test's smoke runs one per core).
guests=${FUZZ_GUESTS:-$build/guests}
jobs=${FUZZ_JOBS:-1}
failed=()
pids=()
names=()
for target in "${targets[@]}"; do
  [[ -x "$target" ]] || continue
  while [[ $(jobs -rp | wc -l) -ge $jobs ]]; do wait -n || true; done
  fuzz_one "$target" &
  pids+=($!)
  names+=("$(basename "$target")")
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || failed+=("${names[$i]}")
done

if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz: ${#failed[@]} target(s) failed: ${failed[*]}" >&2
  exit 1
fi
