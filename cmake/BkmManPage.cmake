# SPDX-License-Identifier: MIT
# Run at build time (cmake -DTUNE=... -DOUT=... -P BkmManPage.cmake): writes OUT, the man page
# tune(1), from `TUNE help --man`; a failure (or an empty page) fails the build and leaves no OUT.
execute_process(COMMAND "${TUNE}" help --man OUTPUT_VARIABLE page ERROR_VARIABLE why RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR page STREQUAL "")
  file(REMOVE "${OUT}")
  message(FATAL_ERROR "${TUNE} help --man failed (${rc}): ${why}")
endif()
file(WRITE "${OUT}.tmp" "${page}")
file(RENAME "${OUT}.tmp" "${OUT}")
