# Installable CMake package: find_package(ugrad CONFIG REQUIRED) + target_link_libraries(x ugrad::ugrad).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS ugrad ugrad_llvm ${UGRAD_COMPONENTS} EXPORT ugradTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
foreach(dir base uop tensor schedule codegen runtime llm)
  install(DIRECTORY ${dir}/ DESTINATION include/ugrad/${dir} FILES_MATCHING PATTERN "*.h")
endforeach()
install(EXPORT ugradTargets NAMESPACE ugrad:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ugrad)
configure_package_config_file(cmake/ugradConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/ugradConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ugrad)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/ugradConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ugradConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/ugradConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ugrad)
