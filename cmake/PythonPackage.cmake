# `pip install .` (scikit-build-core, pyproject.toml): the wheel is the
# package `amp` with everything it runs, laid out as the build tree is, so
# that the code finds its parts the same way in both:
#   amp/*.py, amp/_importer/, amp/_native*.so   the Python frontend
#   amp/bin/amp-{compile,run,opt,train}          the tools (console scripts
#                                                 amp-run, ... run these)
#   amp/lib/libamp-mpi.so                         data parallelism's plugin
#   amp/lib/libAMPRuntime*.a, libAMPFloat16.a    what amp-compile links into
#                                                 an artifact
# MLIR/LLVM, oneDNN, OpenBLAS, CUDA stay the system's (scripts/setup.sh).
# Only a scikit-build-core build installs (plain builds use build/ itself).
if(NOT SKBUILD)
  return()
endif()
if(NOT AMP_ENABLE_PYTHON)
  message(FATAL_ERROR "amp: pip install needs the Python frontend: "
                      "scripts/setup.sh makes ${AMP_PYTHON}")
endif()
# The installed binaries keep the system libraries' directories they link
# (libMLIR.so in LLVM's lib/, CUDA's) in their run path, as in the build.
set(amp_installed amp-compile amp-run amp-opt amp-train AMPNativePython AMPMpiPlugin)
set_target_properties(${amp_installed} PROPERTIES
  INSTALL_RPATH_USE_LINK_PATH TRUE
  INSTALL_RPATH "${LLVM_LIBRARY_DIR}")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/python/amp/ DESTINATION amp
  FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
install(TARGETS AMPNativePython LIBRARY DESTINATION amp)
install(TARGETS amp-compile amp-run amp-opt amp-train RUNTIME DESTINATION amp/bin)
install(TARGETS AMPMpiPlugin LIBRARY DESTINATION amp/lib)
install(TARGETS AMPRuntimeCPU AMPFloat16 ARCHIVE DESTINATION amp/lib)
if(TARGET AMPRuntimeCUDA)
  install(TARGETS AMPRuntimeCUDA ARCHIVE DESTINATION amp/lib)
endif()
