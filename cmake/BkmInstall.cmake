# SPDX-License-Identifier: MIT
# `cmake --install BUILD --prefix P` (and the .deb, which is the same install under /usr): the
# layout of docs/install.md. Only the shipped programs are installed: tune (which is also the
# trial worker, `tune worker`) and the team shim it preloads into a user's program; never
# tune_testhooks, the test programs or the benchmarks.
#
#   P/BINDIR/tune                         target tune_installed: DT_RPATH $ORIGIN/../LIBDIR/bkm/rt
#   P/LIBDIR/bkm/libbkm_team.so           found by tune from its own location (apps/cli_home.c)
#   P/LIBDIR/bkm/rt/libgomp.so.1          -> this system's libomp.so.5 (one OpenMP runtime)
#   P/MANDIR/man1/tune.1                  generated from the commands' option tables (tune help --man)
#   P/DATAROOTDIR/modulefiles/bkm/V.lua   the Lmod module (PATH, MANPATH, BKM_HOME)
#   P/DOCDIR/                             the documentation: README.md and docs/*.md
install(TARGETS tune_installed RUNTIME DESTINATION "${BKM_INSTALL_BINDIR}")   # installed as tune
install(TARGETS bkm_team LIBRARY DESTINATION "${BKM_INSTALL_PKGLIBDIR}")
# The link itself (a symbolic link to the absolute path of the libomp this build linked).
install(FILES "${BKM_RT_DIR}/libgomp.so.1" DESTINATION "${BKM_INSTALL_RT_DIR}")
install(FILES "${CMAKE_BINARY_DIR}/tune.1" DESTINATION "${CMAKE_INSTALL_MANDIR}/man1")

# The module file finds the prefix from its own path, so it holds no path fixed here: the
# relative folders it strips and prepends are configured in.
configure_file("${PROJECT_SOURCE_DIR}/packaging/bkm.lua.in" "${CMAKE_BINARY_DIR}/modulefile/${PROJECT_VERSION}.lua"
               @ONLY)
install(FILES "${CMAKE_BINARY_DIR}/modulefile/${PROJECT_VERSION}.lua" DESTINATION "${BKM_MODULE_DIR}")

install(FILES "${PROJECT_SOURCE_DIR}/README.md" DESTINATION "${CMAKE_INSTALL_DOCDIR}")
install(DIRECTORY "${PROJECT_SOURCE_DIR}/docs/" DESTINATION "${CMAKE_INSTALL_DOCDIR}/docs" FILES_MATCHING PATTERN "*.md")
