# Debian packages with CPack (`cpack -G DEB` in the build directory, or scripts/package.sh):
#   fencelock          the CLI, stripped; Depends from the shared libraries it links
#                      (dpkg-shlibdeps); the license and changelog in /usr/share/doc/fencelock
#   libfencelock-dev   the static libraries, headers and CMake package config; Depends on the
#                      -dev packages find_package(fencelock) and the link need
# Each install() rule names its component (cli or dev) in the top-level CMakeLists.txt.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME fencelock)
set(CPACK_PACKAGE_VENDOR "fencelock")
# dpkg wants a Maintainer; whoever builds packages for a fleet names themselves here
# (cmake -DFENCELOCK_PACKAGE_MAINTAINER="Platform team <platform@example.org>").
set(FENCELOCK_PACKAGE_MAINTAINER "fencelock maintainers" CACHE STRING "the packages' Maintainer field")
set(CPACK_PACKAGE_CONTACT "${FENCELOCK_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Redis leases with fencing tokens that stay safe when a lease expires")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_STRIP_FILES ON)  # executables only: static libraries keep their symbols
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL cli dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_LICENSE Apache-2.0)

set(CPACK_DEBIAN_CLI_PACKAGE_NAME fencelock)
set(CPACK_DEBIAN_CLI_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_CLI_PACKAGE_SHLIBDEPS ON)
set(CPACK_COMPONENT_CLI_DESCRIPTION
    "fencelock command-line tool\n acquire, renew, release and inspect fenced Redis leases, run a command under\n a kept lease (like flock), operate the worker queue and recover stuck locks.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libfencelock-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
# What the exported targets find and link (cmake/fencelockConfig.cmake.in), per component.
set(fencelock_dev_depends "fencelock (= ${PROJECT_VERSION})" cmake pkg-config libhiredis-dev libssl-dev)
if(TARGET fencelock_coordinator_etcd)
  list(APPEND fencelock_dev_depends libgrpc++-dev libprotobuf-dev)
endif()
if(TARGET fencelock_store)
  list(APPEND fencelock_dev_depends libpq-dev libsqlite3-dev)
endif()
if(TARGET fencelock_obs)
  list(APPEND fencelock_dev_depends prometheus-cpp-dev)
endif()
list(JOIN fencelock_dev_depends ", " CPACK_DEBIAN_DEV_PACKAGE_DEPENDS)
set(CPACK_COMPONENT_DEV_DESCRIPTION
    "fencelock C++ library: headers, static libraries and CMake package\n find_package(fencelock COMPONENTS lock store queue obs): fenced Redis leases,\n fenced PostgreSQL and SQLite stores, the worker queue, metrics and logs.")
include(CPack)
