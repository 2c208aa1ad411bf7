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
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6, libstdc++6, libgcc-s1, libsqlite3-0, libxxhash0, python3")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3-torch")
set(CPACK_GENERATOR "DEB")
include(CPack)
