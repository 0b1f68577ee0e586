# The installed package, as C and C++ users expect it:
#   include/shapejit/shapejit.h   the C API   (jit/capi/shapejit.h in the tree)
#   include/shapejit/jit.h        the C++ API (jit/runtime/jit.h)
#   include/shapejit/...          the tree headers those two include, each at its
#                                 path from the root (cmake/install_headers.cmake)
#   lib/libshapejit.a             every layer's objects, one archive
#   lib/cmake/shapejit/           find_package(shapejit) -> shapejit::shapejit
#   lib/pkgconfig/shapejit.pc     pkg-config --cflags --libs shapejit
# A consumer's include path gets include/ and nothing under it, so no folder
# of ours (core/, jit/, ...) can shadow one of its own.

set(SHAPEJIT_PACKAGE_OBJECTS "")
foreach(layer ${SHAPEJIT_LAYERS})
  list(APPEND SHAPEJIT_PACKAGE_OBJECTS $<TARGET_OBJECTS:${layer}>)
endforeach()
add_library(shapejit_package STATIC ${SHAPEJIT_PACKAGE_OBJECTS})
set_target_properties(shapejit_package PROPERTIES OUTPUT_NAME shapejit EXPORT_NAME shapejit)
target_include_directories(shapejit_package INTERFACE $<INSTALL_INTERFACE:include>)
# What the layers link, gathered: the archive needs all of it.
target_link_libraries(shapejit_package INTERFACE nlohmann_json::nlohmann_json TBB::tbb Threads::Threads ${SHAPEJIT_OPENBLAS}
  ${SHAPEJIT_XXHASH_LIBRARIES} ${SHAPEJIT_HIREDIS_LIBRARIES} ${SHAPEJIT_LIBCRYPTO_LIBRARIES})
set(SHAPEJIT_PC_LIBS " ${SHAPEJIT_OPENBLAS}")
set(SHAPEJIT_PC_CFLAGS "")
if(SHAPEJIT_LLVM)
  target_compile_definitions(shapejit_package INTERFACE SHAPEJIT_HAVE_LLVM=1)
  string(APPEND SHAPEJIT_PC_CFLAGS " -DSHAPEJIT_HAVE_LLVM=1")
  target_link_libraries(shapejit_package INTERFACE LLVM)
  string(APPEND SHAPEJIT_PC_LIBS " -L${LLVM_LIBRARY_DIR} -lLLVM-${LLVM_VERSION_MAJOR}")
endif()
if(SHAPEJIT_CUDA)
  target_compile_definitions(shapejit_package INTERFACE SHAPEJIT_HAVE_CUDA=1)
  string(APPEND SHAPEJIT_PC_CFLAGS " -DSHAPEJIT_HAVE_CUDA=1")
  target_link_libraries(shapejit_package INTERFACE ${CUDA_nvrtc_LIBRARY} ${CMAKE_DL_LIBS})
  string(APPEND SHAPEJIT_PC_LIBS " ${CUDA_nvrtc_LIBRARY}")
endif()
set(SHAPEJIT_PC_FLAGS "")
if(SHAPEJIT_SANITIZE)
  target_link_options(shapejit_package INTERFACE -fsanitize=${SHAPEJIT_SANITIZE})
  set(SHAPEJIT_PC_FLAGS " -fsanitize=${SHAPEJIT_SANITIZE}")
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    # A C program linked by the C driver gets the sanitizers' C++ runtime
    # too (UBSan's vptr checks in the library's C++ code need it).
    string(APPEND SHAPEJIT_PC_FLAGS " -fsanitize-link-c++-runtime")
  endif()
endif()

install(TARGETS shapejit_package EXPORT shapejit-targets ARCHIVE DESTINATION lib COMPONENT devel)
install(EXPORT shapejit-targets NAMESPACE shapejit:: DESTINATION lib/cmake/shapejit COMPONENT devel)
include(CMakePackageConfigHelpers)
configure_package_config_file(cmake/shapejit-config.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/shapejit-config.cmake
  INSTALL_DESTINATION lib/cmake/shapejit)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/shapejit-config-version.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/shapejit-config.cmake ${CMAKE_CURRENT_BINARY_DIR}/shapejit-config-version.cmake
  DESTINATION lib/cmake/shapejit COMPONENT devel)
configure_file(cmake/shapejit.pc.in ${CMAKE_CURRENT_BINARY_DIR}/shapejit.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/shapejit.pc DESTINATION lib/pkgconfig COMPONENT devel)
install(CODE "set(SHAPEJIT_SOURCE_DIR \"${PROJECT_SOURCE_DIR}\")
  set(SHAPEJIT_INCLUDE_DIR \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/include\")
  include(\"${PROJECT_SOURCE_DIR}/cmake/install_headers.cmake\")" COMPONENT devel)
