#!/usr/bin/env bash
# Checks of `reef serve` as an operator runs it (docs/operations.md): start on an ephemeral
# loopback port with a temporary data dir, GET /health, SIGTERM exits 0; a non-loopback
# address without a token is refused; flags beat the environment; --native-cache.
# Usage: serve_test.sh REEF_BINARY [guests]   (guests: the C guest toolchain was built)
set -uo pipefail
reef=$1
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
passed=0
failed=0

check() {  # check NAME CONDITION-STATUS DETAIL
  if [[ $2 -eq 0 ]]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    printf 'FAIL %s\n%s\n' "$1" "$3"
  fi
}

# start NAME LOG ARGS...: runs `reef serve ARGS` in the background; sets $pid and $port once
# the "serving on" line appears (10 s at most).
start() {
  local name=$1 log=$2
  shift 2
  "$reef" serve "$@" 2>"$log" &
  pid=$!
  pids+=("$pid")
  port=""
  for _ in $(seq 100); do
    if grep -qs "serving on" "$log"; then
      port=$(grep -o 'serving on ws://[^ ]*' "$log" | sed 's/.*://')
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  check "$name: ready line" 1 "$(cat "$log")"
  return 1
}

# stop: SIGTERM and the exit status (at most 10 s).
stop() {
  kill -TERM "$pid"
  for _ in $(seq 100); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  wait "$pid"
}

# 1. Serve on an ephemeral port with a fresh data dir; /health answers; SIGTERM exits 0.
if start "serve" "$work/serve.log" --listen 127.0.0.1:0 --data-dir "$work/data"; then
  health=$(curl -s --max-time 5 "http://127.0.0.1:$port/health")
  check "health" "$([[ $health == '{"status":"ok"}' ]]; echo $?)" "got: $health"
  check "data dir created" "$([[ -f $work/data/reef.sqlite ]]; echo $?)" "$(ls -la "$work/data" 2>&1)"
  check "ready line names the data dir" "$(grep -q "(data dir $work/data)" "$work/serve.log"; echo $?)" \
    "$(cat "$work/serve.log")"
  stop
  status=$?
  check "SIGTERM exits 0" "$([[ $status -eq 0 ]]; echo $?)" "status $status; $(cat "$work/serve.log")"
fi

# 1a. The data dir is the owner's alone whatever the umask: 0700 directories, 0600 files; a
# data dir left world-readable by an older Reef is tightened at start.
mkdir -p "$work/open/events"
touch "$work/open/reef.sqlite"
chmod 755 "$work/open" "$work/open/events"
chmod 644 "$work/open/reef.sqlite"
saved_umask=$(umask)
umask 000
if start "modes" "$work/modes.log" --listen 127.0.0.1:0 --data-dir "$work/open"; then
  umask "$saved_umask"
  curl -s --max-time 5 -X POST "http://127.0.0.1:$port/events/append" \
    -d '{"events":[{"type":"T"}]}' >/dev/null
  loose=$(find "$work/open" \( -type d ! -perm 700 \) -o \( -type f ! -perm 600 \) | head -5)
  check "data dir modes are 0700/0600 under umask 000" "$([[ -z $loose ]]; echo $?)" \
    "$(find "$work/open" -printf '%m %p\n')"
  stop
fi
umask "$saved_umask"

# 1b. The event store routes over real HTTP, and the events survive a restart.
if start "events" "$work/events.log" --listen 127.0.0.1:0 --data-dir "$work/data"; then
  appended=$(curl -s --max-time 5 -X POST "http://127.0.0.1:$port/events/append" \
    -d '{"events":[{"type":"CourseDefined","tags":["course:c1"],"data":{"capacity":10}}],
         "condition":{"fail_if_events_match":{"items":[{"tags":["course:c1"]}]},"after":0}}')
  check "events: append" "$([[ $appended == '{"position":1}' ]]; echo $?)" "got: $appended"
  code=$(curl -s -o "$work/conflict.json" -w '%{http_code}' --max-time 5 -X POST \
    "http://127.0.0.1:$port/events/append" \
    -d '{"events":[{"type":"CourseDefined","tags":["course:c1"]}],
         "condition":{"fail_if_events_match":{"items":[{"tags":["course:c1"]}]},"after":0}}')
  check "events: conflict is 409" "$([[ $code == 409 ]]; echo $?)" "got $code: $(cat "$work/conflict.json")"
  stop
fi
if start "events restart" "$work/events2.log" --listen 127.0.0.1:0 --data-dir "$work/data"; then
  head=$(curl -s --max-time 5 "http://127.0.0.1:$port/events/head")
  check "events: head survives a restart" "$([[ $head == '{"head":1}' ]]; echo $?)" "got: $head"
  read=$(curl -s --max-time 5 -X POST "http://127.0.0.1:$port/events/read" \
    -d '{"query":{"items":[{"types":["CourseDefined"]}]}}')
  check "events: read" "$([[ $read == *'"data":{"capacity":10}'* && $read == *'"head":1'* ]]; echo $?)" \
    "got: $read"
  stop
fi

# 1c. The event size limits are flags.
if start "event limits" "$work/limits.log" --listen 127.0.0.1:0 --data-dir "$work/limits" \
  --max-event-bytes 200; then
  code=$(curl -s -o "$work/limit.json" -w '%{http_code}' --max-time 5 -X POST \
    "http://127.0.0.1:$port/events/append" -d "{\"events\":[{\"type\":\"A\",\"data\":\"$(printf 'x%.0s' $(seq 300))\"}]}")
  check "events: --max-event-bytes gives 413" \
    "$([[ $code == 413 ]] && grep -q max_event_bytes "$work/limit.json"; echo $?)" \
    "got $code: $(cat "$work/limit.json")"
  stop
fi

# 1d. --native-cache (which beats REEF_NATIVE_CACHE) is where native code goes instead of
# DATA_DIR/cache/native, and a second server with another data dir loads it from there. It
# spawns the bundled counter, a C source: only with the guest toolchain (second argument).
# metric NAME: its value on the running server, 0 when absent.
metric() {
  curl -s --max-time 5 "http://127.0.0.1:$port/metrics" |
    awk -v name="$1" '$1 == name { print $2; found = 1 } END { if (!found) print 0 }'
}
# native_up NAME METRIC LOG: spawns the bundled counter, then waits up to 30 s for METRIC to
# count its native code (the compile runs in the background).
native_up() {
  "$reef" --connect "127.0.0.1:$port" spawn actors/counter 0 >"$work/spawn.out" 2>&1
  for _ in $(seq 300); do
    [[ $(metric "$2") != 0 ]] && return 0
    sleep 0.1
  done
  check "$1" 1 "$2 stayed 0; spawn: $(cat "$work/spawn.out"); $(cat "$3")"
  return 1
}
native_cache_checks() {
  local log_a=$work/native-a.log log_b=$work/native-b.log
  if REEF_NATIVE_CACHE="$work/env-native" start "native cache" "$log_a" \
    --listen 127.0.0.1:0 --data-dir "$work/native-a" --native-cache "$work/shared-native"; then
    if native_up "native cache: compiled" reef_native_modules_compiled_total "$log_a"; then
      libraries=$(find "$work/shared-native" -name '*.so' | wc -l)
      check "native cache: the library is in --native-cache" "$([[ $libraries -eq 1 ]]; echo $?)" \
        "$(ls -la "$work/shared-native" 2>&1)"
      check "native cache: the flag beats REEF_NATIVE_CACHE, nothing in the data dir" \
        "$([[ ! -e $work/env-native && -z $(ls -A "$work/native-a/cache/native" 2>/dev/null) ]]; echo $?)" \
        "$(ls -laR "$work/native-a/cache" 2>&1)"
      check "native cache: the log names it" \
        "$(grep -q "native code kept in $work/shared-native" "$log_a"; echo $?)" "$(cat "$log_a")"
    fi
    stop
  fi
  if REEF_NATIVE_CACHE="$work/shared-native" start "native cache shared" "$log_b" \
    --listen 127.0.0.1:0 --data-dir "$work/native-b"; then
    if native_up "native cache: loaded by a second server" reef_native_modules_cached_total \
      "$log_b"; then
      check "native cache: not compiled again" \
        "$([[ $(metric reef_native_modules_compiled_total) == 0 ]]; echo $?)" "$(cat "$log_b")"
    fi
    stop
  fi
  chmod 777 "$work/shared-native"
  out=$(timeout 10 "$reef" serve --listen 127.0.0.1:0 --data-dir "$work/native-c" \
    --native-cache "$work/shared-native" 2>&1)
  status=$?
  check "native cache: a directory others may write is refused" \
    "$([[ $status -ne 0 && $status -ne 124 && $out == *"writable by no one else"* ]]; echo $?)" \
    "status $status: $out"
}
if [[ ${2:-} == guests ]]; then
  native_cache_checks
else
  echo "SKIP native cache checks: built without the guest toolchain (REEF_GUESTS=OFF)"
fi

# 2. SIGINT is graceful too.
if start "sigint" "$work/int.log" --listen 127.0.0.1:0 --data-dir "$work/data"; then
  kill -INT "$pid"
  wait "$pid"
  status=$?
  check "SIGINT exits 0" "$([[ $status -eq 0 ]]; echo $?)" "status $status"
fi

# 3. A non-loopback address without a token is refused with a message and a non-zero exit.
out=$(timeout 10 "$reef" serve --listen 0.0.0.0:0 --data-dir "$work/refused" 2>&1)
status=$?
check "non-loopback without token refused" \
  "$([[ $status -ne 0 && $status -ne 124 && $out == *"auth token"* ]]; echo $?)" "status $status: $out"
check "a refused serve does not create its data dir" "$([[ ! -e $work/refused ]]; echo $?)" \
  "$(ls -la "$work/refused" 2>&1)"
out=$(REEF_LISTEN=0.0.0.0:0 timeout 10 "$reef" serve --data-dir "$work/data" 2>&1)
status=$?
check "REEF_LISTEN non-loopback without token refused" \
  "$([[ $status -ne 0 && $status -ne 124 && $out == *"auth token"* ]]; echo $?)" "status $status: $out"

# 4. With a token, non-loopback is accepted and /health wants the token.
if start "token" "$work/token.log" --listen 0.0.0.0:0 --auth-token s3cret --data-dir "$work/data"; then
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$port/health")
  check "no token is 401" "$([[ $code == 401 ]]; echo $?)" "got $code"
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 -H 'Authorization: Bearer s3cret' \
    "http://127.0.0.1:$port/health")
  check "token is 200" "$([[ $code == 200 ]]; echo $?)" "got $code"
  stop
fi

# 5. Flags beat the environment; the environment beats the defaults.
if REEF_LISTEN=127.0.0.1:1 REEF_DATA_DIR="$work/env-data" \
  start "flag beats env" "$work/flag.log" --listen 127.0.0.1:0 --data-dir "$work/flag-data"; then
  check "flag --listen beats REEF_LISTEN" "$([[ $port != 1 && -n $port ]]; echo $?)" "port $port"
  check "flag --data-dir beats REEF_DATA_DIR" \
    "$([[ -f $work/flag-data/reef.sqlite && ! -e $work/env-data ]]; echo $?)" "$(ls "$work")"
  stop
fi
if REEF_LISTEN=127.0.0.1:0 REEF_DATA_DIR="$work/env-data" start "env" "$work/env.log"; then
  check "REEF_DATA_DIR used without a flag" "$([[ -f $work/env-data/reef.sqlite ]]; echo $?)" \
    "$(ls "$work")"
  stop
fi

# 6. REEF_LOG filters Reef's own log (debug shows more than the default).
if REEF_LOG=warn start "log filter" "$work/warn.log" --listen 127.0.0.1:0 --data-dir "$work/logdata"; then
  stop
  check "REEF_LOG=warn hides info lines" "$(! grep -q '\[info\]' "$work/warn.log"; echo $?)" \
    "$(cat "$work/warn.log")"
fi

# 7. Bad flags are errors.
out=$("$reef" serve --listen nonsense 2>&1)
status=$?
check "bad listen address" "$([[ $status -ne 0 && $out == *"nonsense"* ]]; echo $?)" "status $status: $out"

printf 'serve_test: %d passed, %d failed\n' "$passed" "$failed"
[[ $failed -eq 0 ]]
