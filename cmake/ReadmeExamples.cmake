# The README's C++ code blocks are regions of real programs in examples/, which the build
# compiles and the test suite runs against a real Redis and SQLite (tests/consumer), so a README
# example that stops compiling or working fails CI.
#
# The convention (see docs/DESIGN.md, "README examples"): every ```cpp block has, on the line
# right above its fence, a comment naming the program it comes from, invisible when rendered:
#     <!-- example: examples/acquire_and_write.cpp -->
# and its text is that file's lines between `// readme:begin` and `// readme:end` (indentation
# is not compared). A block without the comment, or that differs from its file, fails
# the configure step with a message naming both.

# Sets `out_var` to the lines of `file` between the readme markers, each line's indentation
# removed (the README shows the region dedented; only its text is compared).
function(fencelock_readme_region file out_var)
  file(READ "${file}" text)
  string(FIND "${text}" "// readme:begin\n" begin)
  string(FIND "${text}" "// readme:end" end)
  if(begin EQUAL -1 OR end EQUAL -1 OR end LESS begin)
    message(FATAL_ERROR "${file}: no // readme:begin ... // readme:end region")
  endif()
  math(EXPR begin "${begin} + 16")
  math(EXPR length "${end} - ${begin}")
  string(SUBSTRING "${text}" ${begin} ${length} region)
  fencelock_unindent("${region}" region)
  set(${out_var} "${region}" PARENT_SCOPE)
endfunction()

function(fencelock_unindent text out_var)
  string(REGEX REPLACE "(^|\n)[ \t]+" "\\1" text "${text}")
  set(${out_var} "${text}" PARENT_SCOPE)
endfunction()

# Checks every ```cpp block of `readme` against its example (a path relative to `root`).
function(fencelock_check_readme_examples readme root)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${readme}")
  file(READ "${readme}" text)
  set(used "")
  set(rest "${text}")
  while(TRUE)
    string(REGEX MATCH "(^|\n)([^\n]*)\n```(cpp|c\\+\\+)[ \t]*\n" fence "${rest}")
    if(NOT fence)
      break()
    endif()
    set(above "${CMAKE_MATCH_2}")
    string(FIND "${rest}" "${fence}" at)
    string(LENGTH "${fence}" fence_length)
    math(EXPR body_at "${at} + ${fence_length}")
    string(SUBSTRING "${rest}" ${body_at} -1 after)
    string(FIND "${after}" "```" close)
    if(close EQUAL -1)
      message(FATAL_ERROR "${readme}: a ```cpp block is not closed")
    endif()
    string(SUBSTRING "${after}" 0 ${close} body)
    if(NOT above MATCHES "<!--[ \t]*example:[ \t]*([^ \t]+)[ \t]*-->")
      string(SUBSTRING "${body}" 0 60 start)
      message(FATAL_ERROR "${readme}: the ```cpp block starting \"${start}\" has no <!-- example: examples/NAME.cpp --> "
                          "line above it; every C++ block is a region of a compiled and tested example")
    endif()
    set(example "${CMAKE_MATCH_1}")
    if(NOT EXISTS "${root}/${example}")
      message(FATAL_ERROR "${readme}: example ${example} does not exist")
    endif()
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${root}/${example}")
    fencelock_readme_region("${root}/${example}" region)
    fencelock_unindent("${body}" body)
    if(NOT body STREQUAL region)
      message(FATAL_ERROR "${readme}: the block from ${example} differs from the file's readme region.\n"
                          "README:\n${body}\n${example}:\n${region}")
    endif()
    list(APPEND used "${example}")
    math(EXPR close_end "${close} + 3")
    string(SUBSTRING "${after}" ${close_end} -1 rest)
  endwhile()
  if(NOT used)
    message(FATAL_ERROR "${readme} has no ```cpp block: nothing would check its examples")
  endif()
endfunction()
