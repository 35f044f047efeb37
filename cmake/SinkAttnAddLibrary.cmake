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
