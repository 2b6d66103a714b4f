# Building AssemblyScript guests (sdk/assemblyscript, examples/assemblyscript).
#
# reef_add_as_guest(NAME ENTRY file.ts)
#   Compiles ENTRY with the SDK's build script (sdk/assemblyscript/build.mjs: asc from the
#   SDK's node_modules with the flags every Reef guest needs, then a check that the module
#   imports only from "reef") into ${REEF_GUEST_DIR}/NAME.wasm; target guest_NAME (ALL).
#   scripts/setup.sh installs the SDK's npm packages (`npm ci`, pinned by its
#   package-lock.json). Rebuilt when ENTRY, any .ts file beside it or the SDK changes.
find_program(REEF_NODE node)
set(REEF_SDK_AS_DIR ${PROJECT_SOURCE_DIR}/sdk/assemblyscript)

function(reef_add_as_guest name)
  cmake_parse_arguments(A "" "ENTRY" "" ${ARGN})
  if(REEF_PREBUILT_GUEST_DIR)
    add_custom_target(guest_${name})  # ${REEF_GUEST_DIR}/${name}.wasm is already there
    return()
  endif()
  if(NOT REEF_NODE)
    message(FATAL_ERROR "AssemblyScript guests need Node.js (run scripts/setup.sh)")
  endif()
  get_filename_component(entry ${A_ENTRY} ABSOLUTE)
  get_filename_component(entry_dir ${entry} DIRECTORY)
  file(GLOB_RECURSE inputs CONFIGURE_DEPENDS ${entry_dir}/*.ts ${REEF_SDK_AS_DIR}/assembly/*.ts)
  set(out ${REEF_GUEST_DIR}/${name}.wasm)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${REEF_NODE} ${REEF_SDK_AS_DIR}/build.mjs ${entry} ${out}
    # build.mjs takes asc from the working directory's node_modules first: the SDK's own, the
    # version its package-lock.json pins, never one that happens to sit above the build tree.
    WORKING_DIRECTORY ${REEF_SDK_AS_DIR}
    DEPENDS ${inputs} ${REEF_SDK_AS_DIR}/build.mjs ${REEF_SDK_AS_DIR}/package-lock.json
    COMMENT "asc ${name}.wasm"
    VERBATIM)
  add_custom_target(guest_${name} ALL DEPENDS ${out})
endfunction()
