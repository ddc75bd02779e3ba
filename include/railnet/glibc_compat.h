/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Force-included (-include) into every object of the plugin and its core archive. glibc 2.34
 * moved dlopen & co. from libdl into libc under new symbol versions; left alone, the linker
 * binds our references to those (GLIBC_2.34) and the plugin would refuse to load in older
 * training images. The same for pthread_create and pthread_join (from libpthread; the
 * RAILNET_STATS_INTERVAL thread). Pinning the references to each architecture's original
 * versions (x86-64: GLIBC_2.2.5, dlinfo 2.3.3; aarch64: GLIBC_2.17, its first glibc),
 * together with NEEDED entries for libdl.so.2 and libpthread.so.0 (see CMakeLists.txt), keeps
 * the plugin loadable with the glibc
 * of Debian 11 and Ubuntu 20.04 (2.31); newer glibc still provides these versions, from libc
 * as compatibility symbols and from a libdl.so.2 stub. docker/glibc-floor.sh checks the result.
 */
#ifndef RAILNET_GLIBC_COMPAT_H
#define RAILNET_GLIBC_COMPAT_H

#if defined(__x86_64__) && defined(__linux__) && !defined(RN_NO_GLIBC_COMPAT)
__asm__(".symver dlopen,dlopen@GLIBC_2.2.5");
__asm__(".symver dlclose,dlclose@GLIBC_2.2.5");
__asm__(".symver dlerror,dlerror@GLIBC_2.2.5");
__asm__(".symver dlsym,dlsym@GLIBC_2.2.5");
__asm__(".symver dlvsym,dlvsym@GLIBC_2.2.5");
__asm__(".symver dlinfo,dlinfo@GLIBC_2.3.3");
__asm__(".symver dladdr,dladdr@GLIBC_2.2.5");
__asm__(".symver pthread_create,pthread_create@GLIBC_2.2.5");
__asm__(".symver pthread_join,pthread_join@GLIBC_2.2.5");
#elif defined(__aarch64__) && defined(__linux__) && !defined(RN_NO_GLIBC_COMPAT)
__asm__(".symver dlopen,dlopen@GLIBC_2.17");
__asm__(".symver dlclose,dlclose@GLIBC_2.17");
__asm__(".symver dlerror,dlerror@GLIBC_2.17");
__asm__(".symver dlsym,dlsym@GLIBC_2.17");
__asm__(".symver dlvsym,dlvsym@GLIBC_2.17");
__asm__(".symver dlinfo,dlinfo@GLIBC_2.17");
__asm__(".symver dladdr,dladdr@GLIBC_2.17");
__asm__(".symver pthread_create,pthread_create@GLIBC_2.17");
__asm__(".symver pthread_join,pthread_join@GLIBC_2.17");
#endif

#endif /* RAILNET_GLIBC_COMPAT_H */
