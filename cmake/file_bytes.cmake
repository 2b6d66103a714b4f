# reef_file_bytes(PATH BYTES_VAR SIZE_VAR): the bytes of the file at PATH as a C++ initializer
# list ("0x2f,0x2a,...,") and their count, for sources that embed files in the binary (the
# image's bundled examples, the dashboard's assets).
function(reef_file_bytes path bytes_var size_var)
  file(READ "${path}" hex HEX)
  string(LENGTH "${hex}" hex_length)
  math(EXPR size "${hex_length} / 2")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  set(${bytes_var} "${bytes}" PARENT_SCOPE)
  set(${size_var} ${size} PARENT_SCOPE)
endfunction()
