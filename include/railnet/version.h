/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Version strings (CMakeLists.txt defines the parts): what every tool prints for --version and
 * what the plugin logs once at init.
 */
#ifndef RAILNET_VERSION_H
#define RAILNET_VERSION_H

#ifndef RN_VERSION_STRING
#define RN_VERSION_STRING "0.0.0"
#endif
#ifndef RN_GIT_DESCRIBE
#define RN_GIT_DESCRIBE "unknown"
#endif
#ifndef RN_BUILD_DATE
#define RN_BUILD_DATE "unknown"
#endif

/* "0.1.0 (git 1b65f8b, built 2026-12-02)" */
#define RN_VERSION_LONG RN_VERSION_STRING " (git " RN_GIT_DESCRIBE ", built " RN_BUILD_DATE ")"

#endif
