#!/usr/bin/env bash
# The Rust SDK's own tests (sdk/rust) with Debian's toolchain, named by path (a rustup
# toolchain earlier on PATH may lack the wasm32 target, and its rustdoc cannot read 1.63's
# libraries):
#   1. `cargo test` of the SDK on the build machine: value mapping, CBOR limits and encodings,
#      error paths, the export glue, against the test double of the host imports;
#   2. `cargo test` of the examples' workspace on the build machine (their handlers and
#      commands through the same double);
#   3. the wasm-level checks (tests/wasm_host.mjs: Node plays the host) on the SDK's probe
#      guest and the examples built for wasm32: panics through `fail`, malformed input, calls,
#      memory that stays put over 20,000 calls of one instance.
# Every build goes to BUILD_DIR (the source tree stays clean), offline, with the lock files as
# committed.
# Usage: rust_sdk_test.sh BUILD_DIR REPO_ROOT
set -euo pipefail
build=$(cd "$1" && pwd)
repo=$(cd "$2" && pwd)
export RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc
cargo=/usr/bin/cargo
host_target=$build/rust-target-host

echo "== cargo test: sdk/rust"
# Warnings are errors (the wasm builds get -D warnings from their .cargo/config.toml).
(cd "$repo/sdk/rust" &&
  RUSTFLAGS="-D warnings" CARGO_TARGET_DIR=$host_target $cargo test --quiet --offline --locked)
echo "== cargo test: examples/rust"
(cd "$repo/examples/rust" &&
  RUSTFLAGS="-D warnings" CARGO_TARGET_DIR=$host_target $cargo test --quiet --offline --locked)
echo "== wasm: the probe and the examples under Node"
(cd "$repo/sdk/rust/tests/probe" &&
  CARGO_TARGET_DIR=$build/rust-target $cargo build --quiet --release --offline --locked \
    --target wasm32-unknown-unknown)
node "$repo/sdk/rust/tests/wasm_host.mjs" \
  "$build/rust-target/wasm32-unknown-unknown/release/reef_probe.wasm" \
  "$build/rust-target/wasm32-unknown-unknown/release"
