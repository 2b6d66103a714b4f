#!/usr/bin/env bash
# `make run`: starts the live image (`reef serve`) on 127.0.0.1:7433 with the data directory
# ./reef-data, uploads and activates the example modules over HTTP, then keeps the server in
# the foreground until Ctrl+C (SIGINT) or SIGTERM, which it passes on so the server stops
# cleanly. Override with REEF_LISTEN / REEF_DATA_DIR (and REEF_AUTH_TOKEN) as for `reef serve`.
#
# The modules (the table below) are uploaded: examples/bank (commands open-account, deposit,
# withdraw; projector balances; effect withdrawal-alert), the same bank written in
# AssemblyScript (names ending in -as) and in Rust (-rs), and the DCB commands of examples/dcb.
# Each is activated when it has no active version yet, except the AssemblyScript and Rust
# effects: all three would append an alert for the same withdrawal, so those two are only
# uploaded (activate one with PUT /effects/NAME/active). The AssemblyScript and Rust counters
# are written into the live image as the working sources actors/counter-as and
# actors/counter-rs (kind wasm) when those paths do not exist yet, next to the bundled C
# actors (reef spawn actors/counter-rs 0). Uploading the same bytes again is
# idempotent (HTTP 200), so running this again on the same data dir works and keeps any
# version you activated yourself. Then the example program (examples/program) is deployed
# unless a program is deployed already.
set -euo pipefail
build=${1:-build}
reef="$build/reef"
guests="$build/guests"

# kind name version file (under $guests) [upload-only]
modules=()
for language in "" _as _rs; do
  suffix=${language//_/-}
  only=""
  [[ -z $language ]] || only=upload-only
  modules+=(
    "commands open-account$suffix 1.0.0 bank_open_account$language.wasm"
    "commands deposit$suffix 1.0.0 bank_deposit$language.wasm"
    "commands withdraw$suffix 1.0.0 bank_withdraw$language.wasm"
    "projectors balances$suffix 1.0.0 bank_balances$language.wasm"
    "effects withdrawal-alert$suffix 1.0.0 bank_withdrawal_alert$language.wasm $only"
  )
done
modules+=(
  "commands register-account 4.0.0 dcb_register_account_v4.wasm"
  "commands create-invoice 1.0.0 dcb_create_invoice.wasm"
  "commands define-course 1.0.0 dcb_define_course.wasm"
  "commands change-course-capacity 1.0.0 dcb_change_course_capacity.wasm"
  "commands subscribe-student-to-course 1.0.0 dcb_subscribe_student_to_course.wasm"
)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkfifo "$work/stderr"

# The server's stderr goes through a forwarder that copies it to ours and to a file, where the
# ready line is looked for. The forwarder ignores INT/TERM so the shutdown lines still show;
# it ends when the server closes its stderr.
( trap '' INT TERM
  while IFS= read -r line; do
    printf '%s\n' "$line" >&2
    printf '%s\n' "$line" >>"$work/log"
  done <"$work/stderr" ) &
forwarder=$!
"$reef" serve 2>"$work/stderr" &
server=$!

stopping=""      # set once a signal arrived: no more uploads
interrupted=""   # set by a signal that may have cut a `wait` short
stop() {
  stopping=1
  interrupted=1
  kill -"$1" "$server" 2>/dev/null || true
}
trap 'stop INT' INT
trap 'stop TERM' TERM

# Waits for the server to exit, then for the forwarder; exits with the server's status. A
# trapped signal ends `wait` early, so it waits again; 127 means the status was already taken.
finish() {
  local status=0 rc
  while :; do
    interrupted=""
    wait "$server" && rc=0 || rc=$?
    [[ $rc -eq 127 ]] || status=$rc
    [[ -n $interrupted ]] || break
  done
  wait "$forwarder" || true
  exit "$status"
}

# The ready line: "reef: serving on ws://ADDR (data dir DIR)[ with bearer token auth]".
ready=""
for _ in $(seq 600); do
  ready=$(grep -m1 'serving on ws://' "$work/log" 2>/dev/null || true)
  [[ -n $ready ]] && break
  kill -0 "$server" 2>/dev/null || finish  # it failed to start; its reason is on stderr
  sleep 0.1
done
if [[ -z $ready ]]; then
  echo "run.sh: reef serve printed no ready line within 60 s; stopping it" >&2
  stop TERM
  finish
fi
address=${ready#*ws://}
address=${address%% *}
data_dir=${ready#*(data dir }
data_dir=${data_dir%%)*}

auth=()
if [[ -n ${REEF_AUTH_TOKEN:-} ]]; then auth=(-H "Authorization: Bearer $REEF_AUTH_TOKEN"); fi

echo "Uploading the example modules to http://$address:" >&2
for row in "${modules[@]}"; do
  [[ -z $stopping ]] || finish
  read -r kind name version file only <<<"$row"
  if [[ ! -f $guests/$file ]]; then
    echo "  $kind/$name $version: skipped, $guests/$file is missing (guests not built?)" >&2
    continue
  fi
  # 201: stored; 200: the same bytes were stored already. Activated only when the module has
  # no active version, so a version you activated yourself stays active across restarts.
  code=$(curl -sS -g -o "$work/answer" -w '%{http_code}' "${auth[@]}" \
    --data-binary "@$guests/$file" \
    "http://$address/$kind/$name/versions/$version") || code=000
  if [[ $code == 200 || $code == 201 ]]; then
    state="already uploaded"
    [[ $code == 201 ]] && state="uploaded"
    active=""
    if [[ -z $only ]]; then
      active=$(curl -sS -g "${auth[@]}" "http://$address/$kind/$name" |
        grep -o '"active_version":[^,]*' | cut -d: -f2 | tr -d '"') || active=""
    fi
    if [[ -n $only ]]; then
      code="upload-only"
    elif [[ $active == null || -z $active ]]; then
      code=$(curl -sS -g -o "$work/answer" -w '%{http_code}' "${auth[@]}" -X PUT \
        -d "{\"version\": \"$version\"}" "http://$address/$kind/$name/active") || code=000
      [[ $code == 200 ]] && code="activated"
    else
      code="kept $active"
    fi
  fi
  case $code in
    activated) echo "  $kind/$name $version: $state, active" >&2 ;;
    kept*) echo "  $kind/$name $version: $state; version ${code#kept } stays active" >&2 ;;
    upload-only) echo "  $kind/$name $version: $state, not activated (the C effect is)" >&2 ;;
    409) echo "  $kind/$name $version: HTTP 409, this version holds other bytes (an older" \
           "build?); the active version stays. Use a fresh REEF_DATA_DIR, or upload the" \
           "new build under a new version." >&2 ;;
    *) echo "  $kind/$name $version: HTTP $code $(cat "$work/answer" 2>/dev/null)" >&2 ;;
  esac
done

[[ -z $stopping ]] || finish

# Clients find a server on another address through REEF_CONNECT.
client="$reef"
if [[ $address != 127.0.0.1:7433 ]]; then client="REEF_CONNECT=$address $reef"; fi

# The AssemblyScript and Rust counters, written as working sources unless the path exists (a
# source you edited stays).
for row in "actors/counter-as counter_as.wasm" "actors/counter-rs counter_rs.wasm"; do
  [[ -z $stopping ]] || finish
  read -r path file <<<"$row"
  if [[ ! -f $guests/$file ]]; then
    echo "  $path: skipped, $guests/$file is missing (guests not built?)" >&2
  elif REEF_CONNECT=$address "$reef" read "$path" >/dev/null 2>&1; then
    echo "  $path: a working source exists already; it stays" >&2
  elif out=$(REEF_CONNECT=$address "$reef" write "$path" "$guests/$file" --create 2>&1); then
    echo "  $path: written from $file ($out)" >&2
  else
    echo "  $path: $out" >&2
  fi
done

# The example program (examples/program: units counter and worker), deployed when no program
# is deployed yet, so a program you deployed yourself stays.
program_dir="$build/examples/program/v1"
current=$(curl -sS -g -o /dev/null -w '%{http_code}' "${auth[@]}" \
  "http://$address/programs/current") || current=000
if [[ ! -f $program_dir/program.json ]]; then
  echo "Program: skipped, $program_dir is missing (guests not built?)" >&2
elif [[ $current == 404 ]]; then
  echo "Deploying the example program $program_dir:" >&2
  REEF_CONNECT=$address "$reef" deploy "$program_dir" >&2 ||
    echo "  the deploy failed (see above); the server keeps running" >&2
else
  echo "Program: a program is deployed already; it stays (reef deploy DIR replaces it)." >&2
fi

[[ -z $stopping ]] || finish

cat >&2 <<MSG

Reef $("$reef" --version | cut -d' ' -f2) is serving on $address (data dir $data_dir). In another terminal:

  curl -s $address/commands/open-account/execute -d '{"account_id": "demo", "owner": "Ada"}'
  curl -s $address/commands/deposit/execute -d '{"account_id": "demo", "amount": 100}'
  curl -s $address/projectors/balances/query -d '{"sql": "SELECT * FROM accounts"}'
  curl -s $address/metrics
  curl -s $address/commands/deposit-rs/execute -d '{"account_id": "demo", "amount": 5}'   # the Rust bank (-as: AssemblyScript)
  $client spawn actors/counter-rs 0   # the Rust counter (actors/counter-as: AssemblyScript)
  $client invoke counter '{"op": "add"}'   # the example program's singleton unit
  $client units
  $client repl   # the actors of the live image; type 'help'

README.md has the whole tour; docs/http-api.md every route. Ctrl+C stops the server.
MSG
if [[ -n ${REEF_AUTH_TOKEN:-} ]]; then
  echo "(With REEF_AUTH_TOKEN set, add -H \"Authorization: Bearer \$REEF_AUTH_TOKEN\" to each curl.)" >&2
fi

finish
