# build_info.cmake (included by CMakeLists.txt): writes
# build_info_gen.h for web/build_info.c — the project's version,
# the git commit at configure time (-DCUTOVER_COMMIT=... for a tree that is
# not a git checkout, else "unknown"; configure runs again when HEAD moves)
# and libyaml's version, which its headers do not carry.
if(NOT CUTOVER_COMMIT)
  execute_process(COMMAND git -C ${CMAKE_SOURCE_DIR} rev-parse --short=12 HEAD
    OUTPUT_VARIABLE CUTOVER_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
    RESULT_VARIABLE git_rc)
  execute_process(COMMAND git -C ${CMAKE_SOURCE_DIR} rev-parse --absolute-git-dir
    OUTPUT_VARIABLE git_dir OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT git_rc EQUAL 0 OR CUTOVER_COMMIT STREQUAL "")
    set(CUTOVER_COMMIT unknown)
  elseif(EXISTS ${git_dir}/logs/HEAD)
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${git_dir}/logs/HEAD)
  endif()
endif()
configure_file(web/build_info_gen.h.in ${CMAKE_BINARY_DIR}/build_info_gen.h @ONLY)
