#!/usr/bin/env bash
# `make run`: until the server exists, runs the bundled counter actor (examples/counter,
# built from C by the project's build) through the engine and shows each transition.
set -euo pipefail
build=${1:-build}
reef="$build/reef"
counter="$build/guests/counter.wasm"

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

echo "Reef $("$reef" --version | cut -d' ' -f2): the counter actor of examples/counter/counter.c"
step "$reef" wasm inspect "$counter"
step "$reef" wasm handle "$counter" 0 '{"op":"add","value":5}'
step "$reef" wasm handle "$counter" 0 \
  '{"op":"send","value":5,"target":{"$actor":"receiverBBBBBBBBBBBBB"}}' --self senderAAAAAAAAAAAAAAA
step "$reef" wasm handle "$counter" 10 '{"op":"add","value":5}' \
  --sender senderAAAAAAAAAAAAAAA --self receiverBBBBBBBBBBBBB
# An unknown op fails explicitly: the state stays, nothing is sent, the exit status is 1.
step "$reef" wasm handle "$counter" 0 '{"op":"mul","value":5}' || echo "(exit status $?)"
