#!/usr/bin/env bash
# A language quick start (docs/quickstart-rust.md, docs/quickstart-assemblyscript.md) works as
# written: its blocks are taken from the document itself, in order, and run in an empty folder
# against a real `reef serve`, as a new user pastes them into one shell. Markers before a
# fenced block:
#   <!-- quickstart-test: file PATH -->          the block is saved as PATH (in the folder)
#   <!-- quickstart-test: run -->                the block runs (bash -e; one shell for all)
#   <!-- quickstart-test: run expect=REGEX -->   ... and its output must match REGEX (grep -E)
# The user's setting is recreated: the document's /path/to/reef is this repository, and the
# server it talks to (127.0.0.1:7433, `make run`) is a fresh `reef serve` on a free port: the
# address is replaced in every run block, and REEF_CONNECT names it for the CLI. `npm install`
# prefers npm's cache (filled by scripts/setup.sh's `npm ci` of the same packages).
# Usage: quickstart_test.sh BUILD_DIR REPO_ROOT DOC
set -uo pipefail
build=$(cd "$1" && pwd)
repo=$(cd "$2" && pwd)
doc=$3
work=$(mktemp -d)
mkdir -p "$work/empty"
server=""
trap '[[ -n $server ]] && kill "$server" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT

fail() {
  printf 'FAIL %s\n' "$*"
  exit 1
}

"$build/reef" serve --listen 127.0.0.1:0 --data-dir "$work/data" --ephemeral 2>"$work/server.log" &
server=$!
address=""
for _ in $(seq 300); do
  address=$(sed -n 's/.*serving on ws:\/\/\([^ ]*\).*/\1/p' "$work/server.log" | head -1)
  [[ -n $address ]] && break
  sleep 0.1
done
[[ -n $address ]] || fail "reef serve did not start: $(cat "$work/server.log")"

# The markers and blocks, in order: marker<N> holds "file PATH" or "run [expect=RE]", block<N>
# the block's lines.
count=$(awk '
  /<!-- quickstart-test:/ { n++; line = $0; sub(/.*<!-- quickstart-test: */, "", line);
                            sub(/ *-->.*/, "", line); print line > (dir "/marker" n); want = 1; next }
  want && !inside && /^ *```/ { inside = 1; printf "" > (dir "/block" n); next }
  inside && /^ *```/ { inside = 0; want = 0; next }
  inside { print > (dir "/block" n) }
  END { print n + 0 }
' dir="$work" "$doc")
[[ $count -gt 0 ]] || fail "no quickstart-test markers in $doc"

# One script, as one shell session: each file block becomes a here-document, each run block
# its lines (with the addresses and the checkout's path replaced), between lines that mark
# where each block's output starts.
script=$work/session.sh
{
  echo "set -e"
  echo "export REEF_CONNECT=$address"
  echo "cd '$work/empty'"
  for i in $(seq "$count"); do
    marker=$(cat "$work/marker$i")
    [[ -f $work/block$i ]] || fail "marker $i ($marker) has no fenced block after it"
    echo "echo '@@block $i'"
    case $marker in
      file\ *)
        echo "mkdir -p \"\$(dirname '${marker#file }')\""
        echo "cat > '${marker#file }' <<'QUICKSTART_BLOCK_END'"
        cat "$work/block$i"
        echo "QUICKSTART_BLOCK_END"
        ;;
      run*)
        # npm takes the packages scripts/setup.sh already fetched from its cache when it can.
        sed -e "s|127\.0\.0\.1:7433|$address|g" -e "s|localhost:7433|$address|g" \
          -e "s|/path/to/reef|$repo|g" -e "s|npm install |npm install --prefer-offline |g" \
          "$work/block$i"
        ;;
      *) fail "unknown marker '$marker'" ;;
    esac
  done
  echo "echo '@@block end'"
} >"$script"

bash "$script" >"$work/out" 2>&1
rc=$?
# The output of block N: the lines between its mark and the next.
output_of() { awk -v n="$1" '/^@@block /{ on = ($2 == n); next } on' "$work/out"; }
last=$(grep '^@@block ' "$work/out" | tail -1 | cut -d' ' -f2)
if [[ $rc -ne 0 || $last != end ]]; then
  fail "block $last failed (exit $rc):
$(cat "$work/block$last" 2>/dev/null)
--- its output:
$(output_of "$last")"
fi
for i in $(seq "$count"); do
  marker=$(cat "$work/marker$i")
  [[ $marker == *expect=* ]] || continue
  expect=${marker#*expect=}
  if ! output_of "$i" | grep -Eq -- "$expect"; then
    fail "block $i printed nothing matching /$expect/:
$(cat "$work/block$i")
--- its output:
$(output_of "$i")"
  fi
  printf 'ok block %d matches /%s/\n' "$i" "$expect"
done
echo "PASS $(basename "$doc"): $count blocks"
