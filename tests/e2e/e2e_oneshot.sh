#!/usr/bin/env bash
# Spec 001's walk-through through one-shot commands against a real `reef serve`: two counters,
# a send with an actor ref, tick 100, inspect both -> states 1 and 15. Then the error cases:
# bad JSON, an unknown actor, a closed port.
# Usage: e2e_oneshot.sh PATH/TO/reef
set -u
REEF=$1
source "$(dirname "$0")/lib.sh"
trap 'stop_server; rm -rf "$WORK"' EXIT

start_server

# Spawn: human output is @<NanoID>; --json carries the bare NanoID.
SENDER=$("$REEF" spawn actors/counter 0) || fail "spawn sender"
[[ "$SENDER" =~ ^@[A-Za-z0-9_-]{21}$ ]] || fail "spawn printed '$SENDER', expected @<NanoID>"
RECEIVER=$("$REEF" spawn actors/counter 10 --json | json_field actor) || fail "spawn receiver"
[[ "$RECEIVER" =~ ^[A-Za-z0-9_-]{21}$ ]] || fail "spawn --json actor is '$RECEIVER'"

OUT=$("$REEF" send "$SENDER" "{\"op\":\"send\",\"value\":5,\"target\":{\"\$actor\":\"$RECEIVER\"}}") \
  || fail "send"
[[ "$OUT" == "message queued" ]] || fail "send printed '$OUT'"

"$REEF" tick 100 >/dev/null || fail "tick 100"

# Assert through --json ...
STATE=$("$REEF" inspect "$SENDER" --json | json_field state)
[[ "$STATE" == "1" ]] || fail "sender state is '$STATE', expected 1"
STATE=$("$REEF" inspect "@$RECEIVER" --json | json_field state)
[[ "$STATE" == "15" ]] || fail "receiver state is '$STATE', expected 15"
# ... and through the human output (a bare NanoID works as REF too).
"$REEF" inspect "${SENDER#@}" | grep -Eq '^state: +1$' || fail "human inspect of sender lacks 'state: 1'"
"$REEF" inspect "$RECEIVER" | grep -Eq '^state: +15$' || fail "human inspect of receiver lacks 'state: 15'"

PS=$("$REEF" ps) || fail "ps"
echo "$PS" | grep -Eq "^ACTOR +STATUS" || fail "ps has no header: $PS"
echo "$PS" | grep -Eq "^$SENDER +idle .* 1$" || fail "ps lacks the sender row: $PS"
echo "$PS" | grep -Eq "^@$RECEIVER +idle .* 15$" || fail "ps lacks the receiver row: $PS"

# --connect beats REEF_CONNECT.
REEF_CONNECT=127.0.0.1:1 "$REEF" ps --connect "127.0.0.1:$PORT" >/dev/null \
  || fail "--connect did not override REEF_CONNECT"

# Errors: non-zero exit, "error: <code>: <message>" on stderr, nothing on stdout.
if OUT=$("$REEF" send "$SENDER" '{"op": "add", "value": }' 2>"$WORK/err"); then
  fail "bad JSON was accepted"
fi
grep -q '^error: invalid_argument: MESSAGE is not valid JSON (at byte ' "$WORK/err" \
  || fail "bad JSON message: $(cat "$WORK/err")"
[[ -z "$OUT" ]] || fail "bad JSON printed '$OUT' on stdout"

if "$REEF" inspect @AAAAAAAAAAAAAAAAAAAAA 2>"$WORK/err" >/dev/null; then
  fail "inspect of an unknown actor succeeded"
fi
grep -q '^error: not_found: ' "$WORK/err" || fail "unknown actor message: $(cat "$WORK/err")"

if "$REEF" inspect not-a-ref 2>"$WORK/err" >/dev/null; then fail "a malformed REF was accepted"; fi
grep -q "^error: invalid_argument: 'not-a-ref'" "$WORK/err" || fail "bad REF message: $(cat "$WORK/err")"

# A server-side rejection: the counter fails on an unknown op, so tick reports a failure.
"$REEF" send "$SENDER" '{"op": "nope"}' >/dev/null || fail "send of an unknown op"
"$REEF" tick 100 --json | grep -q '"failures":1' || fail "the failing handler was not counted"
"$REEF" inspect "$SENDER" | grep -Eq '^status: +failed$' || fail "sender did not fail"

# rm: a running actor stays (with a hint), a failed one goes with its mailbox, for good.
if "$REEF" rm "$RECEIVER" 2>"$WORK/err" >/dev/null; then fail "rm removed an idle actor"; fi
grep -q "is idle: stop or kill it before removing it" "$WORK/err" \
  || fail "rm of an idle actor: $(cat "$WORK/err")"
OUT=$("$REEF" rm "$SENDER") || fail "rm of the failed sender"
[[ "$OUT" == "removed $SENDER (1 message(s) dropped)" ]] || fail "rm said: $OUT"
if "$REEF" inspect "$SENDER" 2>"$WORK/err" >/dev/null; then fail "a removed actor is still there"; fi
grep -q "^error: not_found:" "$WORK/err" || fail "inspect after rm: $(cat "$WORK/err")"
"$REEF" events --json | grep -q '"kind":"removed"' || fail "no removed event"
PS=$("$REEF" ps) || fail "ps after rm"
# -F --: a NanoID may begin with '-' (seen once: grep took it for an option).
if grep -qF -- "${SENDER#@}" <<<"$PS" || ! grep -qF -- "$RECEIVER" <<<"$PS"; then
  fail "ps after rm: $PS"
fi

stop_server
# Port 1: nothing listens there, whereas the stopped server's port may already belong to
# another test's server (ctest runs them side by side).
if "$REEF" ps --connect 127.0.0.1:1 2>"$WORK/err" >/dev/null; then
  fail "ps against a closed port succeeded"
fi
grep -q "^error: unavailable: cannot connect to 127.0.0.1:1: Connection refused" "$WORK/err" \
  || fail "closed port message: $(cat "$WORK/err")"

echo "PASS e2e_oneshot"
