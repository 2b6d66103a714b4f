#!/usr/bin/env bash
# End-to-end checks of the program commands as an operator runs them: `reef serve` on an
# ephemeral loopback port with a temporary data dir, then `reef deploy` of the example program
# (examples/program, v1 then v2), `reef units`, `reef invoke`, and the errors of bad input.
# Usage: program_cli_test.sh REEF_BINARY PROGRAM_V1_DIR PROGRAM_V2_DIR
set -uo pipefail
reef=$1
v1=$2
v2=$3
work=$(mktemp -d)
server=""
cleanup() {
  [[ -n $server ]] && kill -KILL "$server" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
passed=0
failed=0

# expect NAME WANT_STATUS WANT_SUBSTRING -- COMMAND...: runs COMMAND (stdout and stderr into
# $out, its exit status into $status) and checks both. WANT_STATUS "nonzero" accepts any failure.
expect() {
  local name=$1 want_status=$2 want=$3
  shift 4
  out=$("$@" 2>&1)
  status=$?
  local status_ok=0
  if [[ $want_status == nonzero ]]; then
    [[ $status -ne 0 ]] && status_ok=1
  elif [[ $status -eq $want_status ]]; then
    status_ok=1
  fi
  if [[ $status_ok -eq 1 && $out == *"$want"* ]]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    printf 'FAIL %s: status %s (want %s), output:\n%s\n(wanted to contain: %s)\n' \
      "$name" "$status" "$want_status" "$out" "$want"
  fi
}

# contains NAME WANT_SUBSTRING: checks the $out of the last expect once more.
contains() {
  if [[ $out == *"$2"* ]]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    printf 'FAIL %s: output:\n%s\n(wanted to contain: %s)\n' "$1" "$out" "$2"
  fi
}

# start_server LOG ARGS...: runs `reef serve --listen 127.0.0.1:0 ARGS` in the background and
# waits (10 s at most) for its "serving on ws://HOST:PORT" line; sets $server and
# REEF_CONNECT. Exits the test when the server does not come up.
start_server() {
  local log=$1
  shift
  "$reef" serve --listen 127.0.0.1:0 "$@" 2>"$log" &
  server=$!
  local port=""
  for _ in $(seq 100); do
    if grep -qs "serving on" "$log"; then
      port=$(grep -o 'serving on ws://[^ ]*' "$log" | sed 's/.*://')
      break
    fi
    kill -0 "$server" 2>/dev/null || break
    sleep 0.1
  done
  if [[ -z $port ]]; then
    printf 'FAIL server did not start:\n%s\n' "$(cat "$log")"
    exit 1
  fi
  export REEF_CONNECT=127.0.0.1:$port
}

# stop_server NAME: SIGTERM, and checks that the server exits 0.
stop_server() {
  kill -TERM "$server"
  wait "$server"
  local status=$?
  server=""
  if [[ $status -eq 0 ]]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    printf 'FAIL %s: SIGTERM exits with %s\n' "$1" "$status"
  fi
}

start_server "$work/serve.log" --data-dir "$work/data"

# 1. Deploy v1: both units are new.
expect units-before-deploy 0 "no units" -- "$reef" units
expect deploy-v1 0 "deployed counter-demo as generation" -- "$reef" deploy "$v1"
contains deploy-v1-added "added:     counter, worker"
contains deploy-v1-changed "changed:   -"
expect units-table 0 "counter  counter  counter_handle  singleton" -- "$reef" units
contains units-worker-row "worker   worker   reef_handle     replicated  0/4"
expect units-json 0 '"unit":"worker"' -- "$reef" units --json

# 2. Invoke: wait for the reply, enqueue, then the instances of the worker.
expect invoke-add 0 '{"count":1}' -- "$reef" invoke counter '{"op":"add"}'
expect invoke-get 0 '{"count":1}' -- "$reef" invoke counter '{"op":"get"}'
expect invoke-json 0 '"result":{"count":2}' -- "$reef" invoke counter '{"op":"add"}' --json
expect invoke-enqueue 0 "queued on instance" -- "$reef" invoke worker '{"x":1}' --mode enqueue
expect invoke-try 0 "queued on instance" -- "$reef" invoke worker '{"x":2}' --mode try
expect invoke-worker-v1 0 '"version":1' -- "$reef" invoke worker '{"x":3}'
expect invoke-echo 0 '"echo":{"x":4}' -- "$reef" invoke worker '{"x":4}' --timeout-ms 5000
expect units-worker 0 "INSTANCE" -- "$reef" units worker
contains units-worker-idle "idle"
expect units-worker-json 0 '"unit":"worker"' -- "$reef" units worker --json

# 3. Deploy v2: only the worker module changed.
expect deploy-v2-changed 0 "changed:   worker" -- "$reef" deploy "$v2"
contains deploy-v2-unchanged "unchanged: counter"
contains deploy-v2-added "added:     -"
expect invoke-worker-v2 0 '"version":2' -- "$reef" invoke worker '{"x":5}'

# 4. Failures of the handler and of the server are reported with the server's code.
expect invoke-fails 1 "error: invocation_failed:" -- "$reef" invoke worker '{"op":"fail"}'
expect invoke-unknown-unit 1 "error: not_found:" -- "$reef" invoke nosuch '{}'
expect invoke-unknown-instance 1 "error: not_found:" -- "$reef" invoke worker '{}' --instance 999
expect units-unknown-unit 1 "error: not_found:" -- "$reef" units nosuch

# A worker instance that spins: `try` fills its inbox, then answers 429 with Retry-After.
# Instance ids are unique per unit across deploys, so v2's worker instance has a new id: the
# spin goes to whichever instance AnyOrSpawn picks, and the rest targets that one.
expect invoke-spin 0 "queued on instance" -- "$reef" invoke worker '{"op":"spin"}' --mode enqueue
spin_instance=${out##*queued on instance }
spin_instance=${spin_instance%%[^0-9]*}
for n in $(seq 100); do
  "$reef" invoke worker "{\"n\":$n}" --mode try --instance "$spin_instance" >/dev/null 2>&1 || break
done
expect invoke-inbox-full 1 "error: inbox_full:" \
  -- "$reef" invoke worker '{}' --mode try --instance "$spin_instance"
contains invoke-retry-after "(retry after 1 s)"
expect invoke-no-room 1 "error: no_room:" \
  -- "$reef" invoke worker '{}' --mode enqueue --instance "$spin_instance" --timeout-ms 200

# 5. Bad input is refused before anything is sent.
expect invoke-bad-json 1 "error: invalid_argument:" -- "$reef" invoke counter '{"op":'
expect deploy-missing-dir 1 "does not exist" -- "$reef" deploy "$work/none"
mkdir -p "$work/bad-json" "$work/no-modules" "$work/not-wasm" "$work/missing-module"
printf '{"program": "x", ' >"$work/bad-json/program.json"
expect deploy-bad-json 1 "program.json is not valid JSON" -- "$reef" deploy "$work/bad-json"
printf '[1, 2]' >"$work/no-modules/program.json"
expect deploy-not-object 1 "must hold a JSON object" -- "$reef" deploy "$work/no-modules"
printf '{"program": "x", "modules": {"m": "m.wasm"}, "units": {"u": {"module": "m"}}}' \
  >"$work/not-wasm/program.json"
printf '(module)' >"$work/not-wasm/m.wasm"
expect deploy-not-wasm 1 "is not a WebAssembly binary" -- "$reef" deploy "$work/not-wasm"
cp "$work/not-wasm/program.json" "$work/missing-module/program.json"
expect deploy-missing-module 1 "module 'm': $work/missing-module/m.wasm does not exist" \
  -- "$reef" deploy "$work/missing-module"
expect deploy-no-dir-arg nonzero "PROGRAM_DIR is required" -- "$reef" deploy
expect invoke-bad-mode nonzero "--mode" -- "$reef" invoke counter '{}' --mode later

# 6. A server that is not there.
expect no-server 1 'is `reef serve` running?' -- "$reef" units --connect 127.0.0.1:1

stop_server "server (with a spinning instance)"

# 7. A server with a token: the token comes from --auth-token or REEF_AUTH_TOKEN.
start_server "$work/token.log" --data-dir "$work/token-data" --auth-token s3cret
expect no-token 1 "error: unauthenticated:" -- "$reef" units
contains no-token-hint "set REEF_AUTH_TOKEN or --auth-token"
expect token-flag 0 "deployed counter-demo" -- "$reef" deploy "$v1" --auth-token s3cret
expect token-env 0 '{"count":1}' -- env REEF_AUTH_TOKEN=s3cret "$reef" invoke counter '{"op":"add"}'

# 8. Global options go before the command too (reef --connect ADDR ps, as docker and kubectl),
# for the HTTP commands and the WebSocket ones alike; after it they still work.
addr=$REEF_CONNECT
expect global-before-http 0 '"result":{"count":1}' -- env -u REEF_CONNECT \
  "$reef" --connect "$addr" --auth-token s3cret --json invoke counter '{"op":"get"}'
expect global-equals-form 0 "counter  counter  counter_handle" -- env -u REEF_CONNECT \
  "$reef" --connect="$addr" --auth-token=s3cret --timeout 5 units
expect global-before-ws 0 "" -- env -u REEF_CONNECT "$reef" --connect "$addr" --auth-token s3cret ps
expect global-after-ws 0 "" -- env -u REEF_CONNECT "$reef" ps --connect "$addr" --auth-token s3cret
expect global-ws-token-refused 1 "error: unauthenticated:" -- env -u REEF_CONNECT \
  "$reef" --connect "$addr" --auth-token wrong ps
expect global-mixed 0 '"result":{"count":1}' -- env -u REEF_CONNECT \
  "$reef" --connect "$addr" invoke counter '{"op":"get"}' --auth-token s3cret --json

# 9. The example counter answers a bad message with an error and keeps its count (it is not
# poisoned: only {"op": "fail"} fails it).
expect counter-bad-message 0 '"error":"counter: the message must be an object' \
  -- env REEF_AUTH_TOKEN=s3cret "$reef" invoke counter '[1, 2]'
expect counter-unknown-op 0 'unknown op \"mul\"' \
  -- env REEF_AUTH_TOKEN=s3cret "$reef" invoke counter '{"op":"mul"}'
expect counter-kept 0 '{"count":1}' -- env REEF_AUTH_TOKEN=s3cret "$reef" invoke counter '{"op":"get"}'
stop_server "server with a token"

printf 'program_cli_test: %d passed, %d failed\n' "$passed" "$failed"
[[ $failed -eq 0 ]]
