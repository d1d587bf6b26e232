# fencelock_embed_scripts(OUT_VAR NAMESPACE ns HEADER header [COMMENT text]): a build rule that
# embeds every scripts/*.lua of the calling folder into one generated .cpp (its path in
# OUT_VAR), with the pieces of scripts/lib/*.lua pasted in where a script says
# `-- @include NAME` (cmake/EmbedScripts.cmake does the work at build time).
function(fencelock_embed_scripts out_var)
  cmake_parse_arguments(arg "" "NAMESPACE;HEADER;COMMENT" "" ${ARGN})
  if(arg_UNPARSED_ARGUMENTS OR NOT arg_NAMESPACE OR NOT arg_HEADER)
    message(FATAL_ERROR "fencelock_embed_scripts: NAMESPACE and HEADER are required, nothing else "
                        "is known (got: ${ARGN})")
  endif()
  file(GLOB scripts CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/scripts/*.lua)
  file(GLOB library CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/scripts/lib/*.lua)
  set(output ${CMAKE_CURRENT_BINARY_DIR}/generated/${arg_NAMESPACE}.cpp)
  string(REPLACE "::" "_" output ${output})
  # A ;-list would be split into separate arguments on the command line: pass it |-separated.
  string(REPLACE ";" "|" script_arg "${scripts}")
  add_custom_command(
    OUTPUT ${output}
    COMMAND ${CMAKE_COMMAND} -DOUTPUT=${output} "-DSCRIPTS=${script_arg}" -DNAMESPACE=${arg_NAMESPACE}
            -DHEADER=${arg_HEADER} -P ${PROJECT_SOURCE_DIR}/cmake/EmbedScripts.cmake
    DEPENDS ${scripts} ${library} ${PROJECT_SOURCE_DIR}/cmake/EmbedScripts.cmake
    COMMENT "${arg_COMMENT}"
    VERBATIM)
  set(${out_var} ${output} PARENT_SCOPE)
endfunction()
