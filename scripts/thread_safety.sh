#!/usr/bin/env bash
# Clang's thread-safety analysis over every translation unit of src/: checks each GUARDED_BY
# member and REQUIRES function (src/core/thread_annotations.h) against the locks actually held.
# The release tree builds with GCC, which ignores the annotations; this runs each src/ compile
# command of BUILD's compile_commands.json again with clang++-16 -fsyntax-only (parsed and
# analysed, no code generated), its warning and optimization flags replaced by
# -Wthread-safety -Werror. Any finding fails the check and is printed with its file and line.
#
# A clang build compiles src/ with -Wthread-safety already (CMakeLists.txt). Each
# --skip-compiled-in DIR names such a build: a unit whose object DIR has compiled with that flag
# passed the analysis there, and is not parsed again. `make test` passes its two sanitizer
# builds, so only the units they do not compile (the CLI's) are parsed here.
#
# Usage: scripts/thread_safety.sh [--skip-compiled-in DIR]... BUILD_DIR [JOBS]
#        (BUILD_DIR configured by CMake; `make build`)
set -euo pipefail

usage="usage: scripts/thread_safety.sh [--skip-compiled-in DIR]... BUILD_DIR [JOBS]"
skip_dirs=()
while [[ "${1:-}" == --skip-compiled-in ]]; do
  skip_dirs+=("${2:?$usage}")
  shift 2
done
build=${1:?$usage}
jobs=${2:-$(nproc)}
compiler=${THREAD_SAFETY_CXX:-clang++-16}
database="$build/compile_commands.json"
if [[ ! -f "$database" ]]; then
  echo "thread-safety: $database is missing: configure $build first (make build)" >&2
  exit 2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One line per src/ translation unit: its directory, a tab, and the clang command (shell-quoted).
# A unity source (build/src/.../Unity/unity_N_cxx.cxx) counts as src/ when its object is.
python3 - "$database" "$compiler" "${skip_dirs[@]}" >"$work/commands" <<'PY'
import json, os, shlex, subprocess, sys

database, compiler, skip_dirs = sys.argv[1], sys.argv[2], sys.argv[3:]

def arguments(entry):
    return entry.get("arguments") or shlex.split(entry["command"])

def output(args):
    return args[args.index("-o") + 1] if "-o" in args else ""

# Objects another build compiles with -Wthread-safety pass the analysis there. Those it has
# built are brought up to date first (ninja rebuilds one left over from before the flag or
# from older sources, and a finding then fails here); the others are parsed below.
checked = set()
for skip_dir in skip_dirs:
    path = os.path.join(skip_dir, "compile_commands.json")
    if not os.path.isfile(path):
        continue
    built = set()
    for entry in json.load(open(path)):
        args = arguments(entry)
        if "-Wthread-safety" in args and os.path.isfile(os.path.join(skip_dir, output(args))):
            built.add(output(args))
    if not built:
        continue
    update = subprocess.run(["ninja", "-C", skip_dir, *sorted(built)], capture_output=True,
                            text=True)
    if update.returncode != 0:
        sys.stderr.write(update.stdout + update.stderr)
        sys.exit(f"thread-safety: FAILED: rebuilding {skip_dir}'s objects (above)")
    checked |= built

for entry in json.load(open(database)):
    args = arguments(entry)
    if not output(args).startswith("src/") or output(args) in checked:
        continue
    if not entry["file"].endswith((".cc", ".cxx", ".cpp")):
        continue
    out, skip = [compiler], False
    for arg in args[1:]:
        if skip:
            skip = False
        elif arg == "-o":
            skip = True
        elif arg in ("-c", entry["file"]) or arg.startswith(("-W", "-O", "-g")):
            pass
        elif arg in ("-std=c++23", "-std=gnu++23"):
            out.append(arg.replace("23", "2b"))  # clang 16's name for C++23
        else:
            out.append(arg)
    out += ["-fsyntax-only", "-Wthread-safety", "-Werror", entry["file"]]
    print(entry["directory"] + "\t" + shlex.join(out))
PY

total=$(wc -l <"$work/commands")
if [[ "$total" -eq 0 && ${#skip_dirs[@]} -eq 0 ]]; then
  echo "thread-safety: no src/ translation unit in $database" >&2
  exit 2
fi

# Each failing unit prints its diagnostics in one piece and appends to `failed` the files its
# errors are in (a unity source's errors are in the .cc files it includes), else its own name.
check_one() {
  local dir=${1%%$'\t'*} command=${1#*$'\t'} output files
  if ! output=$(cd "$dir" && eval "$command" 2>&1); then
    printf '%s\n' "$output" >&2
    files=$(grep -oE '^[^ :]+:[0-9]+:[0-9]+: (fatal )?error' <<<"$output" | cut -d: -f1 | sort -u)
    echo "${files:-${command##* }}" >>"$FAILED"
  fi
}
export -f check_one
export FAILED="$work/failed"
: >"$FAILED"

start=$SECONDS
xargs -d '\n' -P "$jobs" -n 1 bash -c 'check_one "$1"' _ <"$work/commands"
elapsed=$((SECONDS - start))

if [[ -s "$FAILED" ]]; then
  echo "thread-safety: FAILED: clang -Wthread-safety reports errors (above; each names the lock" \
    "a GUARDED_BY member or REQUIRES function needs) in:" >&2
  sort -u "$FAILED" | sed "s|^$PWD/||; s/^/  /" >&2
  exit 1
fi
if [[ ${#skip_dirs[@]} -gt 0 ]]; then
  echo "thread-safety: $total translation units of src/ pass clang -Wthread-safety (${elapsed} s);" \
    "the others passed it while ${skip_dirs[*]} compiled them"
else
  echo "thread-safety: $total translation units of src/ pass clang -Wthread-safety (${elapsed} s)"
fi
