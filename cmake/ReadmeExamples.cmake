# The README's C++ code blocks, compiled and linked against the library in every build, so a
# README example that stops compiling fails the build.
#
# The convention (see docs/DESIGN.md, "README examples"): every ```cpp block is compiled; there
# is no opt-out.
#   * A block that contains `int main(` is a whole program and is compiled as it stands.
#   * Any other block is a fragment: its `#include` lines move to the top of the file, and the
#     rest becomes the body of a function that is compiled and linked but never called, after
#     <fencelock/fencelock.hpp>, <fencelock/store.hpp> and `using namespace std::chrono_literals`.
#     What the surrounding prose supplies (a client, a resource, the application's own
#     functions) is declared on the line right above the fence, invisible when rendered:
#         <!-- given: fencelock::LockClient& client, std::string_view value -->
#     and becomes the function's parameters.
# `#line` directives make compiler errors name README.md and the block's own lines.

# Writes one .cpp per C++ block of `readme` into `out_dir` (rewriting a file only when its text
# changed) and sets `out_var` to their paths. Fails on an unterminated block.
function(fencelock_extract_readme_examples readme out_dir out_var)
  file(READ "${readme}" text)
  set(sources "")
  set(count 0)
  set(rest "${text}")
  set(consumed 0)  # characters of `text` before `rest`, to tell line numbers
  while(TRUE)
    string(REGEX MATCH "(^|\n)```(cpp|c\\+\\+)[ \t]*\n" fence "${rest}")
    if(NOT fence)
      break()
    endif()
    string(FIND "${rest}" "${fence}" at)
    string(LENGTH "${fence}" fence_length)
    string(SUBSTRING "${rest}" 0 ${at} before)
    math(EXPR body_at "${at} + ${fence_length}")
    string(SUBSTRING "${rest}" ${body_at} -1 after)
    string(FIND "${after}" "\n```" close)
    if(close EQUAL -1)
      string(FIND "${after}" "```" close)
      if(NOT close EQUAL 0)
        message(FATAL_ERROR "${readme}: a ```cpp block is not closed")
      endif()
      set(body "")
    else()
      string(SUBSTRING "${after}" 0 ${close} body)
      string(APPEND body "\n")
    endif()

    # The block's first line in README.md (1-based).
    string(SUBSTRING "${text}" 0 ${consumed} seen)
    string(REGEX MATCHALL "\n" seen_lines "${seen}${before}${fence}")
    list(LENGTH seen_lines first_line)
    math(EXPR first_line "${first_line} + 1")

    # The `given` comment on the line just above the fence.
    set(given "")
    string(REGEX MATCH "<!--[ \t]*given:([^\n]*)-->[ \t]*$" given_match "${seen}${before}")
    if(given_match)
      string(STRIP "${CMAKE_MATCH_1}" given)
    endif()

    math(EXPR count "${count} + 1")
    string(FIND "${body}" "int main(" main_at)
    set(code "// Generated from ${readme}, C++ block ${count}. Edit README.md, not this file.\n")
    if(NOT main_at EQUAL -1)
      string(APPEND code "#line ${first_line} \"${readme}\"\n${body}")
    else()
      string(REGEX MATCHALL "(^|\n)[ \t]*#[ \t]*include[^\n]*" includes "${body}")
      string(REGEX REPLACE "(^|\n)[ \t]*#[ \t]*include[^\n]*" "\\1" body "${body}")
      string(APPEND code "#include <fencelock/fencelock.hpp>\n#include <fencelock/store.hpp>\n")
      foreach(include IN LISTS includes)
        string(STRIP "${include}" include)
        string(APPEND code "${include}\n")
      endforeach()
      string(APPEND code "using namespace std::chrono_literals;\n"
                         "void readme_example_${count}(${given});\n"
                         "void readme_example_${count}(${given}) {\n"
                         "#line ${first_line} \"${readme}\"\n${body}}\n"
                         "int main() {}\n")
    endif()
    set(source "${out_dir}/readme_example_${count}.cpp")
    file(WRITE "${source}.new" "${code}")
    configure_file("${source}.new" "${source}" COPYONLY)
    list(APPEND sources "${source}")

    string(LENGTH "${before}${fence}" skipped)
    math(EXPR consumed "${consumed} + ${skipped}")
    set(rest "${after}")
  endwhile()
  set(${out_var} "${sources}" PARENT_SCOPE)
endfunction()

# One executable per C++ block of `readme`, built with the default target and linked with
# `ARGN` (the libraries). Reconfigures when the README changes.
function(fencelock_add_readme_examples readme)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${readme}")
  fencelock_extract_readme_examples("${readme}" "${CMAKE_CURRENT_BINARY_DIR}/readme_examples" sources)
  if(NOT sources)
    message(FATAL_ERROR "${readme} has no ```cpp block: nothing would check its examples")
  endif()
  foreach(source IN LISTS sources)
    get_filename_component(name "${source}" NAME_WE)
    add_executable(${name} "${source}")
    target_link_libraries(${name} PRIVATE ${ARGN})
  endforeach()
endfunction()
