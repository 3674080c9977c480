#===- cmake/Install.cmake - cmake --install, find_package(OTC), pkg-config -===#
#
# `cmake --install build --prefix P` puts the tools in P/bin, the runtime and
# kernel libraries in P/${CMAKE_INSTALL_LIBDIR}, their headers in
# P/include/otc, OTCConfig.cmake (OTC::runtime, OTC::kernels) and otc.pc
# beside the libraries, and the Python package (python/CMakeLists.txt).
# Nothing installed names the source or build tree: otc-compile finds the
# headers and libraries from its own place (compiler/Config.h.in), the
# binaries find the libraries through $ORIGIN, and the package files are
# relative to where they lie. `make package` makes a Debian package of it.
#
#===------------------------------------------------------------------------===#

include(CMakePackageConfigHelpers)

set(OTC_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/OTC)

set_target_properties(OTCRuntime PROPERTIES EXPORT_NAME runtime)
set_target_properties(OTCKernels PROPERTIES EXPORT_NAME kernels)
set(otc_libraries OTCRuntime OTCKernels)
if(OTC_HAVE_CUDA)
  set_target_properties(OTCKernelsCuda PROPERTIES EXPORT_NAME kernels_cuda)
  list(APPEND otc_libraries OTCKernelsCuda)
endif()
install(TARGETS ${otc_libraries} otc-compile otc-opt otc-translate
  EXPORT OTCTargets
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(PROGRAMS ${CMAKE_BINARY_DIR}/bin/otc-plot
  DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
install(FILES ${OTC_PUBLIC_HEADERS}
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/otc COMPONENT runtime)

install(EXPORT OTCTargets NAMESPACE OTC::
  DESTINATION ${OTC_CMAKE_INSTALL_DIR} COMPONENT runtime)
configure_package_config_file(cmake/OTCConfig.cmake.in
  ${CMAKE_BINARY_DIR}/cmake/OTCConfig.cmake
  INSTALL_DESTINATION ${OTC_CMAKE_INSTALL_DIR}
  PATH_VARS CMAKE_INSTALL_BINDIR)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cmake/OTCConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/cmake/OTCConfig.cmake
              ${CMAKE_BINARY_DIR}/cmake/OTCConfigVersion.cmake
  DESTINATION ${OTC_CMAKE_INSTALL_DIR} COMPONENT runtime)

file(RELATIVE_PATH OTC_PREFIX_FROM_PKGCONFIG
     /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(cmake/otc.pc.in ${CMAKE_BINARY_DIR}/cmake/otc.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/cmake/otc.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT runtime)

# make package: a Debian package of the whole install, its dependencies
# from dpkg-shlibdeps.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME otc)
set(CPACK_PACKAGE_CONTACT "OTC maintainers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "ONNX Training Compiler: ONNX models to distributed training programs")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
include(CPack)
