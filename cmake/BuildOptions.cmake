# Warnings and sanitizers for fencelock's own targets, and for no one else's: they go on each
# target as PRIVATE options, never on a directory or into CMAKE_CXX_FLAGS, so a project that adds
# fencelock with add_subdirectory keeps its own flags, and the exported targets carry none.
#
# fencelock_apply_build_options(DIR), called once after every target exists, gives each target
# defined in DIR and below (the libraries, the CLI, the tests, the examples and the benches) the
# options in front of its own, in the order the directory-wide options had: a directory's
# options (the tests' -O1 -g1) come after these, as they did, and ccache keeps its hits.
# A target that sets property FENCELOCK_OWN_OPTIONS (the clock shim, which must load into an
# uninstrumented redis-server) is left alone.
if(FENCELOCK_SANITIZE AND FENCELOCK_TSAN)
  message(FATAL_ERROR "FENCELOCK_SANITIZE (ASan + UBSan) and FENCELOCK_TSAN cannot be combined")
endif()
set(fencelock_compile_options "")
set(fencelock_link_options "")
if(FENCELOCK_SANITIZE)
  list(APPEND fencelock_compile_options -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  list(APPEND fencelock_link_options -fsanitize=address,undefined)
endif()
if(FENCELOCK_TSAN)
  list(APPEND fencelock_compile_options -fsanitize=thread -fno-omit-frame-pointer)
  list(APPEND fencelock_link_options -fsanitize=thread)
endif()
list(APPEND fencelock_compile_options -Wall -Wextra -Wpedantic)

function(fencelock_apply_build_options dir)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(target IN LISTS targets)
    get_target_property(type ${target} TYPE)
    get_target_property(own ${target} FENCELOCK_OWN_OPTIONS)
    if(own OR NOT type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|OBJECT_LIBRARY)$")
      continue()  # interface libraries and custom targets compile nothing
    endif()
    target_compile_options(${target} BEFORE PRIVATE ${fencelock_compile_options})
    if(fencelock_link_options AND NOT type MATCHES "^(STATIC_LIBRARY|OBJECT_LIBRARY)$")
      target_link_options(${target} PRIVATE ${fencelock_link_options})
    endif()
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(subdir IN LISTS subdirs)
    fencelock_apply_build_options(${subdir})
  endforeach()
endfunction()
