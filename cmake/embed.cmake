# SPDX-License-Identifier: MIT
# cmake -DIN=FILE -DOUT=FILE.c -DNAME=symbol -P embed.cmake: FILE's bytes as
# a NUL-terminated C array (actrace report's page script and style).
file(READ "${IN}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" body "${body}")
file(WRITE "${OUT}.tmp" "/* Generated from ${IN} by cmake/embed.cmake. */\nextern const char ${NAME}[];\nconst char ${NAME}[] = {\n${body}0x00};\n")
file(RENAME "${OUT}.tmp" "${OUT}")
