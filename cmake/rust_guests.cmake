# Building Rust guests (sdk/rust, examples/rust) with Debian's toolchain.
#
# reef_add_rust_guests(TARGET WORKSPACE dir GUESTS crate=name [crate=name ...])
#   One `cargo build --release --target wasm32-unknown-unknown` of the cargo workspace in dir
#   (run there, so its .cargo/config.toml applies), then each crate's
#   <crate>.wasm copied to ${REEF_GUEST_DIR}/<name>.wasm; target TARGET builds them (ALL).
#   - Debian's rustc 1.63 and cargo are named by path (/usr/bin): a rustup toolchain earlier
#     on PATH may have no wasm32-unknown-unknown standard library (scripts/setup.sh installs
#     Debian's libstd-rust-dev-wasm32).
#   - --offline --locked: the SDK has no dependencies, so nothing is fetched and the
#     workspace's Cargo.lock stays as committed.
#   - CARGO_TARGET_DIR is in the build tree, so the source tree stays clean.
#   - Rebuilt when a .rs, Cargo.toml or Cargo.lock file of the workspace or the SDK changes.
find_program(REEF_CARGO cargo PATHS /usr/bin NO_DEFAULT_PATH)
find_program(REEF_RUSTC rustc PATHS /usr/bin NO_DEFAULT_PATH)
set(REEF_SDK_RUST_DIR ${PROJECT_SOURCE_DIR}/sdk/rust)

function(reef_add_rust_guests target)
  cmake_parse_arguments(R "" "WORKSPACE" "GUESTS" ${ARGN})
  if(REEF_PREBUILT_GUEST_DIR)
    add_custom_target(${target})  # the guests are in ${REEF_GUEST_DIR} already
    return()
  endif()
  if(NOT REEF_CARGO OR NOT REEF_RUSTC)
    message(FATAL_ERROR "Rust guests need Debian's /usr/bin/cargo and /usr/bin/rustc "
                        "(run scripts/setup.sh: packages rustc cargo libstd-rust-dev-wasm32)")
  endif()
  get_filename_component(workspace ${R_WORKSPACE} ABSOLUTE)
  file(GLOB_RECURSE inputs CONFIGURE_DEPENDS
       ${workspace}/*.rs ${workspace}/*.toml ${workspace}/Cargo.lock
       ${REEF_SDK_RUST_DIR}/src/*.rs ${REEF_SDK_RUST_DIR}/Cargo.toml)
  set(cargo_dir ${CMAKE_BINARY_DIR}/rust-target)
  set(outputs)
  set(copies)
  foreach(pair IN LISTS R_GUESTS)
    string(REPLACE "=" ";" pair ${pair})
    list(GET pair 0 crate)
    list(GET pair 1 name)
    list(APPEND outputs ${REEF_GUEST_DIR}/${name}.wasm)
    list(APPEND copies COMMAND ${CMAKE_COMMAND} -E copy
         ${cargo_dir}/wasm32-unknown-unknown/release/${crate}.wasm ${REEF_GUEST_DIR}/${name}.wasm)
  endforeach()
  add_custom_command(
    OUTPUT ${outputs}
    # A RUSTFLAGS of the caller's would replace .cargo/config.toml's (the stack size, -D warnings).
    COMMAND ${CMAKE_COMMAND} -E env --unset=RUSTFLAGS RUSTC=${REEF_RUSTC} CARGO_TARGET_DIR=${cargo_dir}
            ${REEF_CARGO} build --quiet --release --offline --locked --target wasm32-unknown-unknown
    ${copies}
    WORKING_DIRECTORY ${workspace}
    DEPENDS ${inputs}
    COMMENT "cargo build ${target} (wasm32-unknown-unknown)"
    VERBATIM)
  add_custom_target(${target} ALL DEPENDS ${outputs})
endfunction()
