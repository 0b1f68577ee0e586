# Run by `cmake --install` (cmake/package.cmake), with SHAPEJIT_SOURCE_DIR and
# SHAPEJIT_INCLUDE_DIR set: installs the two public headers and every tree
# header they include, directly or not, under SHAPEJIT_INCLUDE_DIR/shapejit.
# The tree includes headers by their path from the root ("core/ir/graph.h");
# installed, each include of a tree header becomes <shapejit/PATH>, so the
# consumer needs include/ on its path and nothing below it.
cmake_policy(VERSION 3.25)
set(public_sources jit/capi/shapejit.h jit/runtime/jit.h)
set(public_names shapejit.h jit.h)

function(installed_name path out)
  list(FIND public_sources "${path}" i)
  if(i EQUAL -1)
    set(${out} "${path}" PARENT_SCOPE)
  else()
    list(GET public_names ${i} name)
    set(${out} "${name}" PARENT_SCOPE)
  endif()
endfunction()

set(queue ${public_sources})
set(done "")
while(queue)
  list(POP_FRONT queue path)
  if(path IN_LIST done)
    continue()
  endif()
  list(APPEND done "${path}")
  file(READ "${SHAPEJIT_SOURCE_DIR}/${path}" text)
  string(REGEX MATCHALL "#include \"[^\"]+\"" includes "${text}")
  foreach(line ${includes})
    string(REGEX REPLACE "#include \"([^\"]+)\"" "\\1" included "${line}")
    if(NOT EXISTS "${SHAPEJIT_SOURCE_DIR}/${included}")
      message(FATAL_ERROR "shapejit: ${path} includes \"${included}\", which is not a header of the tree")
    endif()
    installed_name("${included}" name)
    string(REPLACE "${line}" "#include <shapejit/${name}>" text "${text}")
    list(APPEND queue "${included}")
  endforeach()
  installed_name("${path}" name)
  set(dest "${SHAPEJIT_INCLUDE_DIR}/shapejit/${name}")
  message(STATUS "Installing: ${dest}")
  file(WRITE "${dest}" "${text}")
endwhile()
