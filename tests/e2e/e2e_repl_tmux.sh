#!/usr/bin/env bash
# Spec 001's REPL session, typed into `reef repl` in a real terminal (tmux): let bindings,
# a send with {"$actor": "receiver"}, tick 100, inspect both -> states 1 and 15. Then Ctrl+C
# leaves `logs -f` and the REPL keeps working, and `quit` leaves the image running.
# Every wait polls the screen (at most 20 s); nothing relies on a fixed sleep.
# Usage: e2e_repl_tmux.sh PATH/TO/reef          (exit 77 = skipped: no tmux)
set -u
REEF=$(realpath "$1")
command -v tmux >/dev/null || { echo "SKIP: tmux is not installed"; exit 77; }
source "$(dirname "$0")/lib.sh"
TMUX_SOCKET="reef-e2e-$$"
SESSION=repl
tm() { tmux -L "$TMUX_SOCKET" "$@"; }
trap 'tm kill-server 2>/dev/null; stop_server; rm -rf "$WORK"' EXIT

start_server

screen() { tm capture-pane -p -J -S -1000 -t "$SESSION" 2>/dev/null; }
# expect REGEX: waits until a screen line matches the extended regex.
expect() {
  PATTERN=$1
  wait_for 20 'screen | grep -Eq -- "$PATTERN"' || fail "screen never showed /$1/; screen was:
$(screen)"
}
# count REGEX: how many screen lines match.
count() { screen | grep -Ec -- "$1"; }
type_line() { tm send-keys -t "$SESSION" -l -- "$1"; tm send-keys -t "$SESSION" Enter; }

# HOME points at the scratch dir so the history file does not touch the user's.
tm new-session -d -s "$SESSION" -x 200 -y 50 \
  "env HOME='$WORK' REEF_CONNECT='$REEF_CONNECT' '$REEF' repl; echo REPL-EXITED-\$?; sleep 600"
expect '^reef> ?$'

type_line 'let sender = spawn actors/counter 0'
expect '^sender = @[A-Za-z0-9_-]{21}$'
type_line 'let receiver = spawn actors/counter 10'
expect '^receiver = @[A-Za-z0-9_-]{21}$'
SENDER=$(screen | sed -n 's/^sender = \(@[A-Za-z0-9_-]*\)$/\1/p' | head -n 1)
RECEIVER=$(screen | sed -n 's/^receiver = \(@[A-Za-z0-9_-]*\)$/\1/p' | head -n 1)

type_line 'send sender {"op": "send", "value": 5, "target": {"$actor": "receiver"}}'
expect '^message queued$'
type_line 'tick 100'
expect '^[0-9]+ slices, [0-9]+ instructions, 2 commits, 0 failures$'
type_line 'inspect sender'
expect "^actor: +$SENDER\$"
expect '^state: +1$'
type_line 'inspect receiver'
expect "^actor: +$RECEIVER\$"
expect '^state: +15$'

# Errors print and the REPL goes on.
type_line 'frobnicate'
expect "^error: invalid_argument: unknown command 'frobnicate'"
type_line 'send sender {"op": '
expect '^error: invalid_argument: MESSAGE is not valid JSON'

# Tab completes a bound name inside a {"$actor": "..."} string.
tm send-keys -t "$SESSION" -l -- 'send sender {"op": "send", "value": 1, "target": {"$actor": "rece'
tm send-keys -t "$SESSION" Tab
expect '"\$actor": "receiver"'
tm send-keys -t "$SESSION" C-u
tm send-keys -t "$SESSION" C-c
expect '^reef> ?$'

# logs -f shows live entries until Ctrl+C; then the prompt is back and commands work.
type_line 'let greeter = spawn actors/hello 0'
expect '^greeter = @[A-Za-z0-9_-]{21}$'
GREETER=$(screen | sed -n 's/^greeter = \(@[A-Za-z0-9_-]*\)$/\1/p' | head -n 1)
type_line 'logs -f greeter'
expect '^reef> logs -f greeter$'
"$REEF" send "$GREETER" '{"name": "e2e"}' >/dev/null || fail "one-shot send to the greeter"
"$REEF" tick 1000 >/dev/null || fail "one-shot tick"
expect "info +$GREETER hello, e2e!\$"
PROMPTS=$(count '^reef>')
tm send-keys -t "$SESSION" C-c
wait_for 20 '(( $(count "^(\^C)?reef>") > PROMPTS ))' || fail "no prompt after Ctrl+C in logs -f:
$(screen)"
type_line 'inspect receiver'
wait_for 20 '(( $(count "^state: +15$") >= 2 ))' || fail "REPL did not work after logs -f:
$(screen)"

# quit leaves the REPL; the image keeps running with both actors.
type_line 'quit'
expect '^REPL-EXITED-0$'
PS=$("$REEF" ps) || fail "one-shot ps after quit"
echo "$PS" | grep -Eq "^$SENDER +idle .* 1\$" || fail "sender gone after quit: $PS"
echo "$PS" | grep -Eq "^$RECEIVER +idle .* 15\$" || fail "receiver gone after quit: $PS"
[[ -s "$WORK/.reef_history" ]] || fail "no history written to \$HOME/.reef_history"

echo "PASS e2e_repl_tmux"
