# Building wasm32 guests (examples, SDK tests, benchmark kernels) with clang.
#
# reef_add_guest(NAME SOURCES a.c [b.c ...] [INCLUDES dir ...])
#   Compiles each C source with clang --target=wasm32 (freestanding, no libc), links with
#   wasm-ld into ${CMAKE_BINARY_DIR}/guests/NAME.wasm and adds target guest_NAME.
#   Compile with -O2 -c and link without -O, so clang never runs wasm-opt from PATH
#   (notes/engine-facts.md).
find_program(REEF_GUEST_CC NAMES clang-16 clang REQUIRED)
set(REEF_GUEST_DIR ${CMAKE_BINARY_DIR}/guests)
file(MAKE_DIRECTORY ${REEF_GUEST_DIR})

function(reef_add_guest name)
  cmake_parse_arguments(G "" "" "SOURCES;INCLUDES;CFLAGS" ${ARGN})
  set(objects)
  set(include_flags)
  foreach(dir IN LISTS G_INCLUDES)
    list(APPEND include_flags -I${dir})
  endforeach()
  foreach(src IN LISTS G_SOURCES)
    get_filename_component(src_abs ${src} ABSOLUTE)
    get_filename_component(stem ${src} NAME_WE)
    set(obj ${REEF_GUEST_DIR}/${name}.${stem}.o)
    add_custom_command(
      OUTPUT ${obj}
      COMMAND ${REEF_GUEST_CC} --target=wasm32 -O2 -c -std=c11 -ffreestanding -nostdlib
              -Wall -Wextra -Werror ${include_flags} ${G_CFLAGS} -o ${obj} ${src_abs}
      DEPENDS ${src_abs} ${REEF_GUEST_HEADERS}
      IMPLICIT_DEPENDS C ${src_abs}
      COMMENT "wasm32 cc ${src}")
    list(APPEND objects ${obj})
  endforeach()
  set(out ${REEF_GUEST_DIR}/${name}.wasm)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${REEF_GUEST_CC} --target=wasm32 -nostdlib -Wl,--no-entry -Wl,--export-dynamic
            -fuse-ld=lld -o ${out} ${objects}
    DEPENDS ${objects}
    COMMENT "wasm32 ld ${name}.wasm")
  add_custom_target(guest_${name} ALL DEPENDS ${out})
endfunction()
