// SPDX-License-Identifier: Apache-2.0
/*
 * The registration cache (mr.h): per device context, an array of page-aligned registrations
 * sorted by start address, with reference counts, under one global mutex. Registration is
 * not on NCCL's per-message path, so a linear scan of a sorted array is enough; entries are
 * heap objects so that references stay valid while the array moves.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "railnet/log.h"
#include "railnet/mr.h"
#include "railnet/qp.h"

#define RN_MR_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)
#ifndef IBV_ACCESS_RELAXED_ORDERING
#define IBV_ACCESS_RELAXED_ORDERING (1 << 20)
#endif

struct rn_mr_cache;

struct rn_mr_ent {
	struct rn_mr_cache *cache;
	uintptr_t start, end; /* page-aligned [start, end) */
	struct ibv_mr *mr;
	long refs;
};

struct rn_mr_cache {
	struct rn_mr_cache *next;
	struct ibv_context *ctx;
	struct ibv_pd *pd; /* held while n > 0 */
	char name[RN_DEV_NAME_MAX];
	struct rn_mr_ent **ent; /* sorted by start */
	int n, cap;
	struct rn_mr_stats st;
};

static pthread_mutex_t rn_mr_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rn_mr_cache *rn_mr_caches;

static uintptr_t rn_mr_page(void)
{
	static uintptr_t page;

	if (!page) {
		long p = sysconf(_SC_PAGESIZE);

		page = p > 0 ? (uintptr_t)p : 4096;
	}
	return page;
}

static struct rn_mr_cache *rn_mr_cache_find(const struct ibv_context *ctx)
{
	for (struct rn_mr_cache *c = rn_mr_caches; c; c = c->next)
		if (c->ctx == ctx)
			return c;
	return NULL;
}

static struct rn_mr_cache *rn_mr_cache_get(struct ibv_context *ctx, const char *devname)
{
	struct rn_mr_cache *c = rn_mr_cache_find(ctx);

	if (c)
		return c;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->ctx = ctx;
	snprintf(c->name, sizeof(c->name), "%s", devname ? devname : "?");
	c->next = rn_mr_caches;
	rn_mr_caches = c;
	return c;
}

static int rn_mr_register(struct rn_mr_cache *c, uintptr_t start, uintptr_t end, int fd,
			  uint64_t offset, struct ibv_mr **mr)
{
	const struct rn_verbs_ops *v = rn_verbs();
	size_t len = end - start;
	int rc;

	if (fd >= 0)
		return v->reg_dmabuf_mr(c->pd, offset, len, start, fd, RN_MR_ACCESS, mr);
	if (v->caps & RN_VCAP_REG_MR_IOVA2) {
		rc = v->reg_mr_iova2(c->pd, (void *)start, len, start,
				     RN_MR_ACCESS | IBV_ACCESS_RELAXED_ORDERING, mr);
		if (rc != -EINVAL && rc != -EOPNOTSUPP)
			return rc;
	}
	return v->reg_mr(c->pd, (void *)start, len, RN_MR_ACCESS, mr);
}

int rn_mr_get(struct ibv_context *ctx, const char *devname, const void *addr, size_t len, int fd,
	      uint64_t offset, struct rn_mr_ent **ent, struct rn_mr_key *key)
{
	uintptr_t page = rn_mr_page(), a = (uintptr_t)addr;
	uintptr_t start = a & ~(page - 1), end;
	struct rn_mr_cache *c;
	struct rn_mr_ent *e;
	int rc = 0, i;

	if (!ctx || !ent || !key)
		return -EINVAL;
	if (len > UINTPTR_MAX - a - page) {
		RN_WARN("registration on %s: %p + %zu bytes wraps the address space", devname, addr,
			len);
		return -EINVAL;
	}
	end = (a + (len ? len : 1) + page - 1) & ~(page - 1);

	pthread_mutex_lock(&rn_mr_lock);
	c = rn_mr_cache_get(ctx, devname);
	if (!c) {
		rc = -ENOMEM;
		RN_WARN("registration on %s: out of memory", devname);
		goto out;
	}
	for (i = 0; i < c->n && c->ent[i]->start <= start; i++) {
		e = c->ent[i];
		if (e->end >= end) {
			e->refs++;
			c->st.hits++;
			*ent = e;
			key->lkey = e->mr->lkey;
			key->rkey = e->mr->rkey;
			goto out;
		}
	}
	if (c->n == c->cap) {
		int cap = c->cap ? 2 * c->cap : 16;
		struct rn_mr_ent **n = realloc(c->ent, (size_t)cap * sizeof(*n));

		if (!n) {
			rc = -ENOMEM;
			RN_WARN("registration on %s: out of memory", devname);
			goto out;
		}
		c->ent = n;
		c->cap = cap;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		rc = -ENOMEM;
		RN_WARN("registration on %s: out of memory", devname);
		goto out;
	}
	if (!c->pd) {
		rc = rn_pd_acquire(ctx, c->name, &c->pd);
		if (rc) {
			free(e);
			goto out;
		}
	}
	rc = rn_mr_register(c, start, end, fd, offset, &e->mr);
	if (rc) {
		c->st.failures++;
		RN_WARN("registering %zu bytes at %p on %s failed: %s%s", len, addr, c->name,
			strerror(-rc),
			fd >= 0 ? " (dma-buf registration: is the GPU's memory exportable and the "
				  "NIC's driver new enough?)"
				: "");
		free(e);
		if (c->n == 0) {
			rn_pd_release(c->pd);
			c->pd = NULL;
		}
		goto out;
	}
	e->cache = c;
	e->start = start;
	e->end = end;
	e->refs = 1;
	/* keep the array sorted by start */
	for (i = c->n; i > 0 && c->ent[i - 1]->start > start; i--)
		c->ent[i] = c->ent[i - 1];
	c->ent[i] = e;
	c->n++;
	c->st.regs++;
	c->st.entries = c->n;
	*ent = e;
	key->lkey = e->mr->lkey;
	key->rkey = e->mr->rkey;
out:
	pthread_mutex_unlock(&rn_mr_lock);
	return rc;
}

void rn_mr_put(struct rn_mr_ent *e)
{
	struct rn_mr_cache *c;
	int i, rc;

	if (!e)
		return;
	pthread_mutex_lock(&rn_mr_lock);
	c = e->cache;
	if (--e->refs > 0) {
		pthread_mutex_unlock(&rn_mr_lock);
		return;
	}
	for (i = 0; i < c->n && c->ent[i] != e; i++)
		;
	if (i < c->n) {
		memmove(&c->ent[i], &c->ent[i + 1], (size_t)(c->n - i - 1) * sizeof(c->ent[0]));
		c->n--;
	}
	rc = rn_verbs()->dereg_mr(e->mr);
	if (rc)
		RN_WARN("deregistering [%#lx, %#lx) on %s failed: %s", (unsigned long)e->start,
			(unsigned long)e->end, c->name, strerror(-rc));
	c->st.deregs++;
	c->st.entries = c->n;
	free(e);
	if (c->n == 0 && c->pd) {
		rn_pd_release(c->pd);
		c->pd = NULL;
	}
	pthread_mutex_unlock(&rn_mr_lock);
}

void rn_mr_totals(struct rn_mr_stats *out)
{
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&rn_mr_lock);
	for (struct rn_mr_cache *c = rn_mr_caches; c; c = c->next) {
		out->entries += c->st.entries;
		out->regs += c->st.regs;
		out->hits += c->st.hits;
		out->deregs += c->st.deregs;
		out->failures += c->st.failures;
	}
	pthread_mutex_unlock(&rn_mr_lock);
}

int rn_mr_ctx_close(struct ibv_context *ctx)
{
	struct rn_mr_cache **pp, *c;
	int left = 0;

	pthread_mutex_lock(&rn_mr_lock);
	for (pp = &rn_mr_caches; *pp && (*pp)->ctx != ctx; pp = &(*pp)->next)
		;
	c = *pp;
	if (c) {
		left = c->n;
		if (left) {
			/* NCCL did not deregister everything: free what we hold, say so */
			RN_WARN("%s: %d registration(s) still live when the device closes; "
				"deregistering them",
				c->name, left);
			for (int i = 0; i < c->n; i++) {
				rn_verbs()->dereg_mr(c->ent[i]->mr);
				free(c->ent[i]);
			}
			rn_pd_release(c->pd);
		}
		*pp = c->next;
		free(c->ent);
		free(c);
	}
	pthread_mutex_unlock(&rn_mr_lock);
	return left;
}
