# add_sinkattn_library(name <add_mlir_library arguments>)
#
# Upstream's add_mlir_library would put our libraries into MLIR's own export
# set (MLIRTargets), which an out-of-tree project never installs. We build with
# the same macro (it knows Debian's libLLVM.so linking rules) but install into
# our own export set, SinkAttnTargets, so consumers get SinkAttn::<name>.
function(add_sinkattn_library name)
  add_mlir_library(${name} DISABLE_INSTALL ${ARGN})
  target_include_directories(${name} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  set_property(GLOBAL APPEND PROPERTY SINKATTN_EXPORTED_LIBS ${name})
endfunction()

# add_sinkattn_dylib_library(name MODULE|SHARED <sources> [LINK_LIBS <libs>])
#
# A library linked against Debian's shared libMLIR.so and libLLVM.so instead
# of the static MLIR libraries, so that it shares MLIR's registries with a
# host that links them too (mlir-opt-22, language bindings). It takes the
# objects of our dialect, pass and pipeline libraries: add_mlir_library
# compiles each of them once into obj.<library> (position-independent code),
# and the static and the shared forms link those same objects.
set(SINKATTN_DYLIB_COMPONENTS
  SinkAttnTileDialect
  SinkAttnTileTransforms
  SinkAttnTileToNVGPU
  SinkAttnTileFragmentsToNVVM
  SinkAttnPipelines)

# The sanitizer runtime is linked into executables only: a shared library
# built with it leaves the runtime's symbols to the program that loads it,
# which LLVM's -z defs (on every shared library) would refuse.
function(sinkattn_allow_sanitizer_runtime name)
  if(SINKATTN_SANITIZE)
    target_link_options(${name} PRIVATE LINKER:-z,undefs)
  endif()
endfunction()

function(add_sinkattn_dylib_library name type)
  cmake_parse_arguments(ARG "" "" "LINK_LIBS" ${ARGN})
  set(objects)
  foreach(lib ${SINKATTN_DYLIB_COMPONENTS})
    if(NOT TARGET obj.${lib})
      message(FATAL_ERROR "${name}: add_mlir_library made no object library obj.${lib}")
    endif()
    list(APPEND objects $<TARGET_OBJECTS:obj.${lib}>)
  endforeach()
  add_library(${name} ${type} ${ARG_UNPARSED_ARGUMENTS} ${objects})
  llvm_update_compile_flags(${name})
  # The objects' generated headers (TableGen) come with the static targets.
  add_dependencies(${name} ${SINKATTN_DYLIB_COMPONENTS})
  target_link_libraries(${name} PRIVATE ${ARG_LINK_LIBS} MLIR LLVM)
  target_include_directories(${name} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  set_target_properties(${name} PROPERTIES
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib
    INSTALL_RPATH ${LLVM_LIBRARY_DIR})
  sinkattn_allow_sanitizer_runtime(${name})
  set_property(GLOBAL APPEND PROPERTY SINKATTN_EXPORTED_LIBS ${name})
endfunction()
