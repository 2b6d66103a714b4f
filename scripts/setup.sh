#!/usr/bin/env bash
# Installs everything Reef needs to build, test, benchmark and fuzz on Debian 12 (bookworm).
# Idempotent: when every package is already installed it only runs dpkg-query and compares two
# files' times (well under 1 s).
set -euo pipefail

packages=(
  # build
  build-essential cmake ninja-build pkg-config git
  # engine
  wabt
  # libraries (DESIGN.md "Dependencies")
  libboost1.81-dev libboost-context1.81-dev nlohmann-json3-dev libcli11-dev libspdlog-dev libfmt-dev libssl-dev
  libsqlite3-dev sqlite3 libpq-dev libedit-dev libconcurrentqueue-dev liblmdb-dev
  # tests, benchmarks, fuzzing
  googletest libgtest-dev libgmock-dev libbenchmark-dev librapidcheck-dev
  clang-16 lld-16 libclang-rt-16-dev libclang-rt-16-dev-wasm32 wasi-libc
  clang-format-16
  binaryen  # wasm-opt -ttf makes the tier differential fuzzer's modules (fuzz/tier_diff_fuzz.cc)
  postgresql  # the PostgreSQL stores' tests and benchmarks start their own cluster (scripts/pg_cluster.sh)
  tmux curl  # the REPL end-to-end test drives `reef repl` in tmux; HTTP checks use curl
  python3  # scripts/thread_safety.sh reads the build's compile_commands.json
  prometheus  # promtool validates the /metrics output (tests/unit/apps/module_routes_test.cc)
  # the V8 anchor of the benchmarks
  nodejs
  erlang-base  # the Erlang/OTP anchor of the actor benchmarks (bench/anchors/)
  chromium  # the dashboard's browser tests (tests/browser), driven by playwright-core from npm
  # the Rust SDK and its examples (sdk/rust, examples/rust): Debian's rustc 1.63 and cargo with
  # the wasm32-unknown-unknown standard library; the build names /usr/bin/rustc explicitly, since
  # a rustup toolchain earlier on PATH may lack that target
  rustc cargo libstd-rust-dev-wasm32
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if [[ ${#missing[@]} -gt 0 ]]; then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  echo "setup: done" >&2
fi

# The npm packages, versions pinned by each folder's package-lock.json: the dashboard's (web/:
# uPlot, which the build compiles into the binary, and playwright-core for the browser tests)
# and the AssemblyScript SDK's (sdk/assemblyscript/: the asc compiler). Installed again only
# when the lock file changed since the last install.
root="$(dirname "$0")/.."
# Debian's nodejs comes without npm (a package of its own); playwright-core wants Node >= 20.
if ! command -v npm >/dev/null; then
  echo "setup: installing npm" >&2
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends npm >/dev/null
fi
if (( $(node -p 'process.versions.node.split(".")[0]') < 20 )); then
  echo "setup: node $(node --version) is older than the browser tests need (20); install Node.js 20" >&2
fi
for folder in web sdk/assemblyscript; do
  dir="$root/$folder"
  if [[ ! -f $dir/node_modules/.package-lock.json ||
        $dir/package-lock.json -nt $dir/node_modules/.package-lock.json ]]; then
    echo "setup: npm ci in $folder/" >&2
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  fi
done
