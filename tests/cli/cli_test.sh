#!/usr/bin/env bash
# End-to-end checks of the `reef` executable as a guest author uses it.
# Usage: cli_test.sh REEF_BINARY GUEST_DIR
set -uo pipefail
reef=$1
guests=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0

# expect NAME WANT_STATUS WANT_SUBSTRING -- COMMAND... (the output stays in $out)
expect() {
  local name=$1 want_status=$2 want=$3
  shift 4
  local status
  out=$("$@" 2>&1)
  status=$?
  if [[ $status -eq $want_status && $out == *"$want"* ]]; then
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

cat >"$work/t.wat" <<'WAT'
(module
  (func (export "div") (param i32 i32) (result i32) (i32.div_s (local.get 0) (local.get 1)))
  (func (export "mix") (param i64 f32 f64) (result f64 f32 i64) (local.get 2) (local.get 1) (local.get 0))
  (func (export "spin") (loop $l (br $l)))
  (func $r (export "recurse") (call $r)))
WAT
echo '(module (func (i32.add)))' >"$work/bad.wat"
printf 'not wasm' >"$work/bad.wasm"
# A DataCount section declaring 2^32-1 segments (issue 13): refused, never an abort.
printf '\x00\x61\x73\x6d\x01\x00\x00\x00\x0c\x05\xff\xff\xff\xff\x0f' >"$work/hostile.wasm"

expect run-results 0 "i32:3" -- "$reef" wasm run "$work/t.wat" div 7 2
expect run-types 0 $'f64:0.25\nf32:1.5\ni64:-9' -- "$reef" wasm run "$work/t.wat" mix -9 1.5 0.25
expect run-trap 1 "trap: integer_divide_by_zero in \`div\`" -- "$reef" wasm run "$work/t.wat" div 1 0
expect run-recursion 1 "trap: call_stack_exhausted in \`recurse\`" -- "$reef" wasm run "$work/t.wat" recurse
expect run-budget 1 "budget exhausted after 5000 instructions (in \`spin\`" \
  -- "$reef" wasm run "$work/t.wat" spin --budget 5000
expect run-bad-arg 1 "argument 1 ('x') is not a valid i32" -- "$reef" wasm run "$work/t.wat" div x 1
expect run-arity 1 "takes 2 arguments" -- "$reef" wasm run "$work/t.wat" div 1
expect run-no-export 1 "has no function export \`nope\`" -- "$reef" wasm run "$work/t.wat" nope
expect run-invalid-wat 1 "bad.wat:1:16: error: type mismatch" -- "$reef" wasm run "$work/bad.wat" f
expect run-invalid-wasm 1 "bad.wasm:" -- "$reef" wasm run "$work/bad.wasm" f
hostile="hostile.wasm:000000a: error: malformed data count section: declares 4294967295 data"
expect inspect-hostile 1 "$hostile" -- "$reef" wasm inspect "$work/hostile.wasm"
expect run-hostile 1 "$hostile" -- "$reef" wasm run "$work/hostile.wasm" f
expect handle-hostile 1 "$hostile" -- "$reef" wasm handle "$work/hostile.wasm" 0 '{}'
expect run-missing-file 1 "not_found" -- "$reef" wasm run "$work/none.wasm" f
expect inspect-imports 0 "func   reef.send (i32, i32, i32, i32) -> (i32)" \
  -- "$reef" wasm inspect "$guests/counter.wasm"
# inspect tells the module kinds apart by their exports and reads the ABI version.
expect inspect-actor 0 "kind     actor; program unit handler: reef_handle" \
  -- "$reef" wasm inspect "$guests/counter.wasm"
contains inspect-abi "abi      reef v1 (reef_abi_version() = 1)"
expect inspect-command 0 "kind     command" -- "$reef" wasm inspect "$guests/bank_deposit.wasm"
contains inspect-command-abi "abi      reef v1"
expect inspect-projector 0 "kind     projector" -- "$reef" wasm inspect "$guests/bank_balances.wasm"
# a projector's SQL imports are the projector host's: no "not provided" note
contains inspect-projector-imports "reef.sql_exec (i32, i32, i32, i32) -> (i64)"$'\n'
expect inspect-not-projector-kind 1 "" -- grep -q "not provided" <<<"$out"
expect inspect-effect 0 "kind     effect" -- "$reef" wasm inspect "$guests/bank_withdrawal_alert.wasm"
expect inspect-unit 0 "kind     program unit handler: counter_handle" \
  -- "$reef" wasm inspect "$guests/program_counter.wasm"
contains inspect-unit-abi "abi      reef v1"
expect inspect-not-actor 0 "kind     none: not a reef v1 module" -- "$reef" wasm inspect "$work/t.wat"
contains inspect-not-actor-why "not a reef v1 actor module: missing export"
contains inspect-not-command-why "not a reef v1 command module: missing export"
contains inspect-no-abi "abi      none: no export \`reef_abi_version\`"
expect handle-add 0 "commit   new state 5" \
  -- "$reef" wasm handle "$guests/counter.wasm" 0 '{"op":"add","value":5}'
# --profile's total is what the invocation is charged, whatever the slicing.
expect handle-slices 0 "commit   new state 8" \
  -- "$reef" wasm handle "$guests/counter.wasm" 5 '{"op":"add","value":3}' --slice 7
charged=$(grep -o 'charged [0-9]* instructions' <<<"$out")
[[ -n $charged ]] || { failed=$((failed + 1)); echo "FAIL handle-slices: no 'charged N instructions'"; }
expect handle-profile 0 "profile  ${charged#charged }" \
  -- "$reef" wasm handle "$guests/counter.wasm" 5 '{"op":"add","value":3}' --profile
expect handle-send 0 'send to @receiverBBBBBBBBBBBBB: {"op":"add","value":5}' \
  -- "$reef" wasm handle "$guests/counter.wasm" 0 \
  '{"op":"send","value":5,"target":{"$actor":"receiverBBBBBBBBBBBBB"}}'
expect handle-unknown-op 1 "fail     counter: unknown op 'mul'; expected add, send or get" \
  -- "$reef" wasm handle "$guests/counter.wasm" 0 '{"op":"mul"}'
expect handle-bad-json 1 "message" -- "$reef" wasm handle "$guests/counter.wasm" 0 '{"op":'
expect handle-bad-sender 1 "--sender" \
  -- "$reef" wasm handle "$guests/counter.wasm" 0 '{"op":"add","value":1}' --sender nope
expect handle-log 0 "log info: hello, reef!" \
  -- "$reef" wasm handle "$guests/hello.wasm" 0 '{"name":"reef"}'
expect no-subcommand 106 "A subcommand is required" -- "$reef"
# Global options before the command (reef --connect ADDR ps) reach it: here, no server there.
expect global-connect-ws 1 "127.0.0.1:1" -- "$reef" --connect 127.0.0.1:1 ps
expect global-connect-http 1 'is `reef serve` running?' \
  -- "$reef" --connect=127.0.0.1:1 --timeout 2 --json units
expect global-connect-repl 1 "127.0.0.1:1" -- "$reef" --connect 127.0.0.1:1 repl
expect global-not-for-wasm 2 "error: reef wasm inspect does not take --connect" \
  -- "$reef" --connect 127.0.0.1:1 wasm inspect x.wasm
expect version 0 "reef 0.1.0" -- "$reef" --version
# --help and --version on every subcommand, even one whose arguments are missing
for sub in serve repl ps spawn send tick inspect logs write "wasm run" wasm; do
  # shellcheck disable=SC2086
  expect "version-$sub" 0 "reef 0.1.0" -- "$reef" $sub --version
  # shellcheck disable=SC2086
  expect "help-$sub" 0 "Usage: reef $sub" -- "$reef" $sub --help
done

# A Reef killed while its C compiler runs takes the compiler along (it runs in a process group
# of its own, out of reach of the terminal's Ctrl-C): here a "compiler" that only sleeps.
cat >"$work/slow-cc" <<SH
#!/bin/sh
echo \$\$ >"$work/cc.pid"
exec sleep 60
SH
chmod +x "$work/slow-cc"
REEF_CC="$work/slow-cc" "$reef" wasm run --engine native "$work/t.wat" div 7 2 >/dev/null 2>&1 &
reef_pid=$!
for _ in $(seq 100); do [[ -s $work/cc.pid ]] && break; sleep 0.1; done
cc_pid=$(cat "$work/cc.pid" 2>/dev/null)
kill -9 "$reef_pid"
wait "$reef_pid" 2>/dev/null
for _ in $(seq 50); do kill -0 "$cc_pid" 2>/dev/null || break; sleep 0.1; done
if [[ -n $cc_pid ]] && ! kill -0 "$cc_pid" 2>/dev/null; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
  echo "FAIL compiler-dies-with-reef: compiler pid '${cc_pid}' outlived reef"
  [[ -n $cc_pid ]] && kill "$cc_pid"
fi

echo "cli: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
