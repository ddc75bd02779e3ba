/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The registration cache. NCCL registers the same buffers again and again (every connection
 * registers its FIFOs, graph capture re-registers user buffers), so railnet registers whole
 * pages once per device context and hands out references: a request whose page range lies
 * inside a cached registration of that context is a hit and costs a lookup under one mutex.
 * The last reference deregisters. Each context's cache keeps that context's shared protection
 * domain (rn_pd_acquire) while it holds an entry, so a registration outlives the connections
 * it was made on: that is what makes railnet's registrations global (regIsGlobal = 1).
 *
 * Registration call: with a dma-buf fd, ibv_reg_dmabuf_mr(offset, len, iova = page-aligned
 * address); else ibv_reg_mr_iova2 with relaxed ordering when the library has it, else
 * ibv_reg_mr. Access: LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ. Thread-safe.
 */
#ifndef RAILNET_MR_H
#define RAILNET_MR_H

#include <stddef.h>
#include <stdint.h>

#include "railnet/verbs.h"

struct rn_mr_ent; /* one cached registration */

struct rn_mr_key {
	uint32_t lkey;
	uint32_t rkey;
};

/*
 * A reference to a registration of ctx covering [addr, addr + len) (len 0 counts as one
 * byte). fd >= 0: a dma-buf (the caller may close it after the call); offset is its offset.
 * Returns 0, *ent and *key; or -errno after one WARN naming the device, range and reason.
 */
int rn_mr_get(struct ibv_context *ctx, const char *devname, const void *addr, size_t len, int fd,
	      uint64_t offset, struct rn_mr_ent **ent, struct rn_mr_key *key);
/* Drop one reference; the last deregisters (a failure there is a WARN). NULL is fine. */
void rn_mr_put(struct rn_mr_ent *ent);

/* Counters of the registration caches, summed over every device context (tests). */
struct rn_mr_stats {
	int entries;	   /* live registrations */
	uint64_t regs;	   /* registrations made */
	uint64_t hits;	   /* rn_mr_get answered from the cache */
	uint64_t deregs;   /* registrations released */
	uint64_t failures; /* registrations refused by the library */
};
void rn_mr_totals(struct rn_mr_stats *out);

/*
 * ctx is about to close: forget its cache. Registrations still live (NCCL did not deregister
 * them) are released with one WARN; their handles must not be used again. Returns how many.
 */
int rn_mr_ctx_close(struct ibv_context *ctx);

#endif /* RAILNET_MR_H */
