#!/usr/bin/env bash
# docs/quickstart.md "Build a module yourself" works as written: the actor of "Your first
# actor" and the build command are taken from the document itself (the fenced block after each
# "<!-- tests/cli/quickstart_build_test.sh ... -->" marker), so the two cannot drift apart.
# The command runs, unchanged, in a scratch directory laid out like the repository root (its
# sdk/ is the repository's), and the module it builds runs one transition under `reef wasm
# handle` and is recognised by `reef wasm inspect`.
# Usage: quickstart_build_test.sh REEF_BINARY REPO_ROOT
set -uo pipefail
reef=$1
repo=$2
doc=$repo/docs/quickstart.md
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0

fail() {
  printf 'FAIL %s\n' "$*"
  failed=1
}

# block N: the body of the fenced block after the Nth marker of this test in the document.
block() {
  awk -v want="$1" '
    /<!-- tests\/cli\/quickstart_build_test\.sh/ { seen++; next }
    seen == want && !inside && /^```/ { inside = 1; next }
    seen == want && inside && /^```/ { exit }
    seen == want && inside { print }
  ' "$doc"
}

block 1 >"$work/mine.c"
block 2 >"$work/build.sh"
[[ -s $work/mine.c ]] || fail "no actor block after the first marker in $doc"
[[ -s $work/build.sh ]] || fail "no command block after the second marker in $doc"
grep -q -- '--no-entry' "$work/build.sh" || fail "the documented command lacks -Wl,--no-entry"
ln -s "$repo/sdk" "$work/sdk"

if ! out=$(cd "$work" && bash -e build.sh 2>&1); then
  fail "the documented build command failed:"
  printf '%s\n--- command:\n%s\n' "$out" "$(cat "$work/build.sh")"
fi
[[ -s $work/mine.wasm ]] || fail "the documented build command wrote no mine.wasm"

out=$("$reef" wasm handle "$work/mine.wasm" 41 '"any message"' 2>&1)
[[ $? -eq 0 && $out == *"log info: one more"* && $out == *"commit   new state 42"* ]] ||
  fail "reef wasm handle of the built module: $out"

out=$("$reef" wasm inspect "$work/mine.wasm" 2>&1)
[[ $out == *"kind     actor"* && $out == *"abi      reef v1"* ]] ||
  fail "reef wasm inspect of the built module: $out"

if [[ $failed -eq 0 ]]; then echo "quickstart build: ok"; fi
exit $failed
