#!/usr/bin/env bash
# Runs a GoogleTest binary as N shards in parallel, one process per shard, and fails when any
# shard fails, printing that shard's failures.
#
#   scripts/test_shards.sh BINARY SHARDS FILTER [ENV=VALUE...]
#
# For the sanitizer builds: ctest starts one process per test, and a sanitized binary of
# ~200 MB takes a few hundred milliseconds to start, which over ~600 tests was most of the
# run. GoogleTest's own sharding deals tests out by index, which put 232 s of tests in one
# shard and 91 s in the other; here the tests named in scripts/slow_tests.txt (with their
# seconds under a sanitizer) are placed first, each on the least loaded shard, and the rest
# are dealt out the same way at a nominal 0.2 s each. Each shard's full output is kept in
# BINARY.shard<i>.log, or PREFIX.shard<i>.log with SHARD_LOG=PREFIX (so two runs of one
# binary keep both).
set -uo pipefail
binary=$1
shards=$2
filter=$3
shift 3
log=${SHARD_LOG:-$binary}
weights="$(cd "$(dirname "$0")" && pwd)/slow_tests.txt"

# Full test names, one per line: "Suite.Test" (parameterised: "Prefix/Suite.Test/Param").
names=$("$binary" --gtest_list_tests --gtest_filter="$filter" | awk '
  /^[^ ]/ { suite = $1; next }
  /^  /   { print suite $1 }')
if [[ -z "$names" ]]; then
  echo "no tests match $filter in $binary"
  exit 1
fi

# One filter per shard ("a:b:c"), longest tests first onto the least loaded shard.
mapfile -t filters < <(awk -v shards="$shards" '
  NR == FNR { if ($0 !~ /^#/ && NF == 2) weight[$2] = $1; next }
  { w = ($1 in weight) ? weight[$1] : 0.2; print w, $1 }' "$weights" - <<<"$names" |
  sort -k1,1gr -k2,2 | awk -v shards="$shards" '
  { best = 0
    for (i = 1; i < shards; i++) if (load[i] < load[best]) best = i
    load[best] += $1
    list[best] = (list[best] == "" ? "" : list[best] ":") $2 }
  END { for (i = 0; i < shards; i++) print list[i] }')

pids=()
for ((i = 0; i < shards; i++)); do
  env "$@" "$binary" --gtest_filter="${filters[$i]:-NoTestInThisShard}" \
    >"$log.shard$i.log" 2>&1 &
  pids+=($!)
done

failed=0
for ((i = 0; i < shards; i++)); do
  if wait "${pids[$i]}"; then
    tail -n 1 "$log.shard$i.log" | sed "s/^/shard $i: /"
  else
    failed=1
    echo "shard $i failed ($log.shard$i.log); the last test it started:"
    grep -E '^\[ RUN      \]' "$log.shard$i.log" | tail -n 1
    # The failures with their messages, and a sanitizer's report when one ended the shard.
    grep -n -E -A40 '^\[  FAILED  \]|^[^ ]*: Failure|ERROR: (Address|Leak|Thread)Sanitizer|runtime error:' \
      "$log.shard$i.log" | head -n 300
    tail -n 20 "$log.shard$i.log"
  fi
done
exit $failed
