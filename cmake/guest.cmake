# Building wasm32 guests (examples, SDK tests, benchmark kernels) with clang.
#
# reef_add_guest(NAME SOURCES a.c [b.c ...] [INCLUDES dir ...] [CFLAGS flag ...] [LTO])
#   Compiles each C source with clang --target=wasm32 (C11, freestanding, no libc), links with
#   wasm-ld into ${REEF_GUEST_DIR}/NAME.wasm and adds target guest_NAME (built by ALL).
#   - LTO: compile to bitcode (-flto) and optimize across the sources at link time (wasm-ld's
#     own LTO at its default level, still no -O on the link line). The C SDK's actors use it:
#     small SDK calls (reads, writes, lookups) are inlined into the handler, which saves about
#     a quarter of the engine instructions of a typical message (measured on -O2 vs -O3 vs -Os,
#     with and without LTO: -O2 with LTO is the cheapest).
#   - -mbulk-memory: memcpy/memset become single memory.copy/memory.fill instructions
#     (bulk memory is part of ABI v1, see docs/abi.md).
#   - Compile with -O2 -c and link without -O, so clang never runs wasm-opt from PATH
#     (notes/engine-facts.md).
#   - Header dependencies come from clang's depfiles; files listed in REEF_GUEST_HEADERS (in
#     the caller's scope) are explicit dependencies as well.
#   - The stack (16 KiB, -z stack-size) is placed first in memory (--stack-first), so a stack
#     overflow traps instead of overwriting data; a small memory also keeps the per-invocation
#     instance reset cheap. Only symbols marked export_name (or default visibility) are exported;
#     clang's wasm32 default visibility is hidden.
#   For actors written with the C SDK, use reef_add_c_actor (sdk/c/CMakeLists.txt), which adds
#   the SDK sources and include directory.
if(REEF_GUESTS)
  find_program(REEF_GUEST_CC NAMES clang-16 clang REQUIRED)
else()
  find_program(REEF_GUEST_CC NAMES clang-16 clang)
endif()
# The sanitizer builds of `make test` use the release build's guests (the same sources, flags
# and compiler, so the same bytes) instead of compiling them again: then every guest_NAME
# target is empty and REEF_GUEST_DIR is that build's guests/ directory.
set(REEF_PREBUILT_GUEST_DIR "" CACHE PATH
    "A guests/ directory another build of this tree made, used instead of building guests")
if(REEF_PREBUILT_GUEST_DIR)
  set(REEF_GUEST_DIR ${REEF_PREBUILT_GUEST_DIR})
else()
  set(REEF_GUEST_DIR ${CMAKE_BINARY_DIR}/guests)
  file(MAKE_DIRECTORY ${REEF_GUEST_DIR})
endif()

function(reef_add_guest name)
  cmake_parse_arguments(G "LTO" "" "SOURCES;INCLUDES;CFLAGS" ${ARGN})
  if(REEF_PREBUILT_GUEST_DIR)
    add_custom_target(guest_${name})  # ${REEF_GUEST_DIR}/${name}.wasm is already there
    return()
  endif()
  set(lto_flag)
  if(G_LTO)
    set(lto_flag -flto)
  endif()
  set(objects)
  set(include_flags)
  foreach(dir IN LISTS G_INCLUDES)
    get_filename_component(dir_abs ${dir} ABSOLUTE)
    list(APPEND include_flags -I${dir_abs})
  endforeach()
  foreach(src IN LISTS G_SOURCES)
    get_filename_component(src_abs ${src} ABSOLUTE)
    get_filename_component(stem ${src} NAME_WE)
    set(obj ${REEF_GUEST_DIR}/${name}.${stem}.o)
    add_custom_command(
      OUTPUT ${obj}
      COMMAND ${REEF_GUEST_CC} --target=wasm32 -mbulk-memory -O2 ${lto_flag} -c -std=c11 -ffreestanding -nostdlib
              -Wall -Wextra -Wpedantic -Werror ${include_flags} ${G_CFLAGS}
              -MD -MF ${obj}.d -o ${obj} ${src_abs}
      DEPENDS ${src_abs} ${REEF_GUEST_HEADERS}
      DEPFILE ${obj}.d
      COMMENT "wasm32 cc ${name}: ${src}"
      VERBATIM)
    list(APPEND objects ${obj})
  endforeach()
  set(out ${REEF_GUEST_DIR}/${name}.wasm)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${REEF_GUEST_CC} --target=wasm32 -nostdlib -fuse-ld=lld ${lto_flag} -Wl,--no-entry
            -Wl,--export-dynamic -Wl,--stack-first -Wl,-z,stack-size=16384 -o ${out} ${objects}
    DEPENDS ${objects}
    COMMENT "wasm32 ld ${name}.wasm"
    VERBATIM)
  add_custom_target(guest_${name} ALL DEPENDS ${out})
endfunction()
