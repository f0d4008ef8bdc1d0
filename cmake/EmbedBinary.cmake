# cmake -DINPUT=FILE -DOUTPUT=HEADER -DNAME=SYMBOL -P EmbedBinary.cmake
# Writes HEADER defining `alignas(16) static const unsigned char SYMBOL[]`
# with FILE's bytes (a fatbin the driver loads must be aligned).
file(READ "${INPUT}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "((0x..,){16})" "\\1\n" bytes "${bytes}")
file(WRITE "${OUTPUT}"
  "// Generated from ${INPUT} by cmake/EmbedBinary.cmake: do not edit.\n"
  "alignas(16) static const unsigned char ${NAME}[] = {\n${bytes}};\n")
