#!/usr/bin/env bash
# Runs a GoogleTest binary as N shards in parallel (GTEST_TOTAL_SHARDS / GTEST_SHARD_INDEX),
# one process per shard, and fails when any shard fails, printing that shard's failures.
#
#   scripts/test_shards.sh BINARY SHARDS FILTER [ENV=VALUE...]
#
# For the sanitizer builds: ctest starts one process per test, and a sanitized binary of
# ~200 MB takes a few hundred milliseconds to start, which over ~550 tests was most of the
# run. Each shard's full output is kept in BINARY.shard<i>.log.
set -uo pipefail
binary=$1
shards=$2
filter=$3
shift 3

pids=()
for ((i = 0; i < shards; i++)); do
  env "$@" GTEST_TOTAL_SHARDS="$shards" GTEST_SHARD_INDEX="$i" \
    "$binary" --gtest_filter="$filter" >"$binary.shard$i.log" 2>&1 &
  pids+=($!)
done

failed=0
for ((i = 0; i < shards; i++)); do
  if wait "${pids[$i]}"; then
    tail -n 1 "$binary.shard$i.log" | sed "s/^/shard $i: /"
  else
    failed=1
    echo "shard $i failed ($binary.shard$i.log); the last test it started:"
    grep -E '^\[ RUN      \]' "$binary.shard$i.log" | tail -n 1
    # The failures with their messages, and a sanitizer's report when one ended the shard.
    grep -n -E -A40 '^\[  FAILED  \]|^[^ ]*: Failure|ERROR: (Address|Leak|Thread)Sanitizer|runtime error:' \
      "$binary.shard$i.log" | head -n 300
    tail -n 20 "$binary.shard$i.log"
  fi
done
exit $failed
