# Shared helpers of the e2e scripts: start `reef serve` on an ephemeral loopback port in a
# fresh data directory, wait for it, stop it. Source after setting REEF (the binary).

WORK=$(mktemp -d "${TMPDIR:-/tmp}/reef-e2e.XXXXXX")
SERVER_PID=""

fail() {
  echo "FAIL: $*" >&2
  if [[ -f "$WORK/serve.log" ]]; then
    echo "--- reef serve stderr ---" >&2
    tail -n 30 "$WORK/serve.log" >&2
  fi
  exit 1
}

stop_server() {
  if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null
    for _ in $(seq 1 100); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$SERVER_PID" 2>/dev/null
  fi
  wait "$SERVER_PID" 2>/dev/null
  SERVER_PID=""
}

# Starts the server; sets PORT and exports REEF_CONNECT. Waits up to 20 s for the
# "serving on ws://HOST:PORT" line.
start_server() {
  "$REEF" serve --listen 127.0.0.1:0 --data-dir "$WORK/data" 2>"$WORK/serve.log" &
  SERVER_PID=$!
  PORT=""
  for _ in $(seq 1 200); do
    PORT=$(sed -n 's/.*serving on ws:\/\/127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$WORK/serve.log" | head -n 1)
    [[ -n "$PORT" ]] && break
    kill -0 "$SERVER_PID" 2>/dev/null || fail "reef serve exited before serving"
    sleep 0.1
  done
  [[ -n "$PORT" ]] || fail "reef serve did not print 'serving on' within 20 s"
  export REEF_CONNECT="127.0.0.1:$PORT"
}

# Polls `command` (a shell snippet) until it succeeds, at most `seconds`.
wait_for() {
  local seconds=$1; shift
  local deadline=$((SECONDS + seconds))
  while (( SECONDS < deadline )); do
    if eval "$@"; then return 0; fi
    sleep 0.2
  done
  eval "$@"
}

# json_field FIELD < json: one top-level field of a JSON object, printed as text.
json_field() {  # json_field FIELD < json
  python3 -c 'import json, sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"
}
