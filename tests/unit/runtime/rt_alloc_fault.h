/* SQLite-style host allocation failure injection for the runtime tests linked
 * with -Wl,--wrap for malloc, calloc, realloc, aligned_alloc and, optionally,
 * posix_memalign (tests/unit/runtime/meson.build: rt_alloc_fault_args). */
#ifndef RT_ALLOC_FAULT_H
#define RT_ALLOC_FAULT_H

/* The wrap affects every object linked into the test (the static libnrt,
 * libfwsim, libnscommon and, where linked, libncc) but not shared libraries
 * (libc, Check, jansson, zlib). */

/* Makes the n-th wrapped allocation from now fail (n >= 1); counting restarts. */
void rt_alloc_fault_arm(long n);

/* Stops failing allocations; returns whether the armed failure happened
 * (whether at least n allocations were made since rt_alloc_fault_arm(n)). */
int rt_alloc_fault_disarm(void);

#endif /* RT_ALLOC_FAULT_H */
