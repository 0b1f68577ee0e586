# shapejit_layer(NAME [FOLDERS f...] [FILES h...] SOURCES s... DEPS d...): one
# layer of the library, a static library over its folders (and headers of
# its own in a folder that other layers' folders are under: backends/).
#
# Sources include headers by their path from the root ("core/ir/graph.h").
# A layer does not get the root on its include path: it gets an include
# tree of its own under build/layers/NAME, holding links to its own folders
# and files only, and sees the trees of the layers it links. A header of a layer it
# does not link is then not found, and an include that runs the wrong way
# fails to build (tests/layers/layers_test.sh checks each layer).
set(SHAPEJIT_LAYERS_DIR ${CMAKE_CURRENT_BINARY_DIR}/layers)
set(SHAPEJIT_LAYERS "" CACHE INTERNAL "")

function(shapejit_layer name)
  cmake_parse_arguments(L "" "" "FOLDERS;FILES;SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${L_SOURCES})
  set(root ${SHAPEJIT_LAYERS_DIR}/${name})
  foreach(path ${L_FOLDERS} ${L_FILES})
    get_filename_component(parent ${root}/${path} DIRECTORY)
    if(IS_SYMLINK ${parent})  # a build tree of an earlier layout, whose link is now a folder of links
      file(REMOVE ${parent})
    endif()
    file(MAKE_DIRECTORY ${parent})
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${path} ${root}/${path} SYMBOLIC)
  endforeach()
  target_include_directories(${name} PUBLIC ${root})
  target_link_libraries(${name} PUBLIC ${L_DEPS})
  set(SHAPEJIT_LAYERS ${SHAPEJIT_LAYERS} ${name} CACHE INTERNAL "")
endfunction()
