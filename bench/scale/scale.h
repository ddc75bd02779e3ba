/* SPDX-License-Identifier: Apache-2.0 */
/* railnet-scale's heap accounting (heap.c): live heap bytes per owning shared object. */
#ifndef RN_SCALE_H
#define RN_SCALE_H

#include <stdint.h>

enum { SCALE_OTHER = 0, SCALE_RAILNET = 1, SCALE_SOFTVERBS = 2, SCALE_OWNERS = 3 };

/* Code in [start, end) is owner's: blocks it allocates are charged to it from now on. */
void scale_heap_owner(int owner, uintptr_t start, uintptr_t end);
/* Live bytes charged to owner, or -1 where the hook is not built (sanitizer builds). */
long long scale_heap_live(int owner);

#endif
