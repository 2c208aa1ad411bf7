# `cpack -G DEB` in a build folder (after `cmake --build <dir> --target gpuprof_runtime`): a .deb
# of what cmake/GpuprofInstall.cmake installs, under /usr, for Debian 12.
#
# Depends lists the shared libraries the binaries link (readelf -d: libsqlite3, libxxhash, the C
# and C++ runtimes) and python3 for the package; not dpkg-shlibdeps, which would make Debian's
# libtorch a hard dependency through libgpuprof_torch.so. python3-torch is a Recommends: the hooks
# are built against Debian's torch (1.13 on Debian 12), and the CLI (demo, stats, report, export,
# run of CUDA programs) works without it.
set(CPACK_PACKAGE_NAME "gpuprof")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_VENDOR "gpuprof")
set(CPACK_PACKAGE_CONTACT "gpuprof maintainers <maintainers@users.noreply.github.com>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "CUDA/PyTorch profiler with kernel replay, writing the ascend_pytorch_profiler DB")
set(CPACK_PACKAGE_DESCRIPTION
    "gpuprof profiles CUDA programs and PyTorch scripts (gpuprof run), replays kernels on identical inputs (gpuprof replay), and writes the ascend_pytorch_profiler SQLite DB that msprof-analyze and MindStudio Insight read. It includes the gpuprof command, its libraries, the gpuprof Python package (import gpuprof) and the man page.")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # gpuprof_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION "devel")
set(CPACK_DEBIAN_PACKAGE_PRIORITY "optional")
# The package sits in the python3.X folder of the Python it was built for (GpuprofInstall.cmake).
set(_gpuprof_python_depends "python3")
if(GPUPROF_INSTALL_PYTHONDIR MATCHES "python3\\.([0-9]+)/")
  math(EXPR _gpuprof_next_minor "${CMAKE_MATCH_1} + 1")
  set(_gpuprof_python_depends "python3 (>= 3.${CMAKE_MATCH_1}), python3 (<< 3.${_gpuprof_next_minor})")
endif()
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6, libstdc++6, libgcc-s1, libsqlite3-0, libxxhash0, ${_gpuprof_python_depends}")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3-torch")
# Python writes __pycache__ folders into the package when root imports it; removed before the
# package is, so that removing it leaves no folder behind.
file(CONFIGURE OUTPUT "${PROJECT_BINARY_DIR}/debian/prerm" CONTENT
"#!/bin/sh
set -e
rm -rf ${CPACK_PACKAGING_INSTALL_PREFIX}/${GPUPROF_INSTALL_PYTHONDIR}/gpuprof/__pycache__ \\
      ${CPACK_PACKAGING_INSTALL_PREFIX}/${GPUPROF_INSTALL_PYTHONDIR}/gpuprof/_autoload/__pycache__
")
file(CHMOD "${PROJECT_BINARY_DIR}/debian/prerm" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE
     GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA "${PROJECT_BINARY_DIR}/debian/prerm")
set(CPACK_GENERATOR "DEB")
include(CPack)
