// SPDX-License-Identifier: Apache-2.0
/*
 * A tiny stand-in for libibverbs, built by test/unit/verbs.cmake into several shared libraries
 * that differ only in their version scripts and in which symbols they define (FAKE_OMIT_*,
 * FAKE_OPTIONAL). test_verbs.c loads them through src/verbs.c to check symbol binding and the
 * conversion of each return convention; fake_verbs_fail() chooses the next results. It moves
 * no data and is not softverbs. Its one device has FAKE_VERBS_PORTS ports (default 2) whose
 * link layer is FAKE_VERBS_LINK_LAYER (an ibv_port_attr.link_layer value, default Ethernet):
 * answers softverbs cannot give, for railnet-doctor's "left out" kinds (doctor_text.sh).
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

/* How a failing call fails (fake_verbs_fail's style argument). */
enum fake_style {
	FAKE_CONV = 0,	  /* the function's rdma-core convention */
	FAKE_MINUS1 = 1,  /* int functions: -1 with errno set */
	FAKE_NEGERR = 2,  /* int functions: -err */
	FAKE_NOERRNO = 3, /* -1 / NULL and errno left 0 */
};

void fake_verbs_fail(int err, int style);
int fake_verbs_acks(void);
int ibv_query_port_speed(struct ibv_context *ctx, uint32_t port, uint64_t *speed);

static int fake_err;
static int fake_style;
static int fake_ack_count;

static struct ibv_device fake_dev = { .name = "fake0", .node_type = IBV_NODE_CA };
static struct ibv_context fake_ctx = { .device = &fake_dev };
static struct ibv_pd fake_pd = { .context = &fake_ctx, .handle = 1 };
static struct ibv_mr fake_mr = { .context = &fake_ctx, .pd = &fake_pd, .lkey = 7, .rkey = 8 };
static struct ibv_cq fake_cq = { .context = &fake_ctx, .cqe = 16 };
static struct ibv_qp fake_qp = { .context = &fake_ctx, .pd = &fake_pd, .qp_num = 99 };

void fake_verbs_fail(int err, int style)
{
	fake_err = err;
	fake_style = style;
}

int fake_verbs_acks(void)
{
	return fake_ack_count;
}

/* Result of a failing call of an int function whose rdma-core convention is `conv_minus1`. */
static int fake_int_fail(int conv_minus1)
{
	switch (fake_style) {
	case FAKE_MINUS1:
		errno = fake_err;
		return -1;
	case FAKE_NEGERR:
		return -fake_err;
	case FAKE_NOERRNO:
		errno = 0;
		return -1;
	default:
		if (conv_minus1) {
			errno = fake_err;
			return -1;
		}
		return fake_err;
	}
}

/* An integer from the environment (tests that load this library by path set it), else def. */
static int fake_env_int(const char *name, int def)
{
	const char *v = getenv(name);

	return v && *v ? atoi(v) : def;
}

static void *fake_ptr_fail(void)
{
	errno = fake_style == FAKE_NOERRNO ? 0 : fake_err;
	return NULL;
}

struct ibv_device **ibv_get_device_list(int *num)
{
	struct ibv_device **l;

	if (fake_err)
		return fake_ptr_fail();
	l = calloc(2, sizeof(*l));
	if (!l)
		return NULL;
	l[0] = &fake_dev;
	if (num)
		*num = 1;
	return l;
}

void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

const char *ibv_get_device_name(struct ibv_device *dev)
{
	return dev->name;
}

#ifndef FAKE_OMIT_OPEN_DEVICE
struct ibv_context *ibv_open_device(struct ibv_device *dev)
{
	if (fake_err)
		return fake_ptr_fail();
	fake_ctx.device = dev;
	return &fake_ctx;
}
#endif

int ibv_close_device(struct ibv_context *ctx)
{
	return fake_err ? fake_int_fail(0) : 0;
}

int ibv_get_async_event(struct ibv_context *ctx, struct ibv_async_event *ev)
{
	if (fake_err) {
		ev->event_type = IBV_EVENT_DEVICE_FATAL; /* garbage the wrapper must not copy */
		return fake_int_fail(1);
	}
	ev->event_type = IBV_EVENT_PORT_ACTIVE;
	ev->element.port_num = 1;
	return 0;
}

void ibv_ack_async_event(struct ibv_async_event *ev)
{
	fake_ack_count++;
}

int ibv_query_device(struct ibv_context *ctx, struct ibv_device_attr *attr)
{
	attr->max_qp = 1; /* written even on failure, as a careless provider might */
	if (fake_err)
		return fake_int_fail(0);
	attr->max_qp = 42;
	attr->phys_port_cnt = (uint8_t)fake_env_int("FAKE_VERBS_PORTS", 2);
	return 0;
}

int(ibv_query_port)(struct ibv_context *ctx, uint8_t port, struct _compat_ibv_port_attr *cattr)
{
	struct ibv_port_attr *attr = (struct ibv_port_attr *)cattr;

	if (fake_err)
		return fake_int_fail(0);
	attr->state = IBV_PORT_ACTIVE;
	attr->gid_tbl_len = 16;
	attr->link_layer = (uint8_t)fake_env_int("FAKE_VERBS_LINK_LAYER", IBV_LINK_LAYER_ETHERNET);
	attr->lid = port;
	return 0;
}

int ibv_query_gid(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid)
{
	if (fake_err)
		return fake_int_fail(1);
	memset(gid, 0, sizeof(*gid));
	gid->raw[15] = (uint8_t)index;
	return 0;
}

int ibv_query_pkey(struct ibv_context *ctx, uint8_t port, int index, __be16 *pkey)
{
	if (fake_err)
		return fake_int_fail(1);
	*pkey = htobe16(0x8001);
	return 0;
}

int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
		 struct ibv_qp_init_attr *init_attr)
{
	if (fake_err)
		return fake_int_fail(0);
	attr->qp_state = IBV_QPS_RTS;
	init_attr->qp_type = IBV_QPT_RC;
	return 0;
}

struct ibv_pd *ibv_alloc_pd(struct ibv_context *ctx)
{
	return fake_err ? fake_ptr_fail() : &fake_pd;
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
	return fake_err ? fake_int_fail(0) : 0;
}

struct ibv_mr *(ibv_reg_mr)(struct ibv_pd *pd, void *addr, size_t len, int access)
{
	return fake_err ? fake_ptr_fail() : &fake_mr;
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	return fake_err ? fake_int_fail(0) : 0;
}

struct ibv_cq *ibv_create_cq(struct ibv_context *ctx, int cqe, void *cq_context,
			     struct ibv_comp_channel *channel, int comp_vector)
{
	return fake_err ? fake_ptr_fail() : &fake_cq;
}

int ibv_destroy_cq(struct ibv_cq *cq)
{
	return fake_err ? fake_int_fail(0) : 0;
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	return fake_err ? fake_ptr_fail() : &fake_qp;
}

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	return fake_err ? fake_int_fail(0) : 0;
}

int ibv_destroy_qp(struct ibv_qp *qp)
{
	return fake_err ? fake_int_fail(0) : 0;
}

int ibv_fork_init(void)
{
	return fake_err ? fake_int_fail(0) : 0;
}

const char *ibv_event_type_str(enum ibv_event_type event)
{
	return "fake event";
}

const char *ibv_wc_status_str(enum ibv_wc_status status)
{
	return "fake status";
}

#ifdef FAKE_OPTIONAL
struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t len, uint64_t iova,
				unsigned int access)
{
	return fake_err ? fake_ptr_fail() : &fake_mr;
}

struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t len, uint64_t iova,
				 int fd, int access)
{
	return fake_err ? fake_ptr_fail() : &fake_mr;
}

int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	if (fake_err)
		return fake_int_fail(0);
	ece->vendor_id = 0x15b3;
	ece->options = 3;
	return 0;
}

int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	return fake_err ? fake_int_fail(0) : 0;
}

int _ibv_query_gid_ex(struct ibv_context *ctx, uint32_t port, uint32_t index,
		      struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
	if (fake_err)
		return fake_int_fail(0);
	if (flags || entry_size != sizeof(*entry))
		return EINVAL;
	memset(entry, 0, sizeof(*entry));
	entry->gid.raw[15] = (uint8_t)index;
	entry->gid_index = index;
	entry->port_num = port;
	entry->gid_type = IBV_GID_TYPE_ROCE_V2;
	entry->ndev_ifindex = 3;
	return 0;
}

ssize_t _ibv_query_gid_table(struct ibv_context *ctx, struct ibv_gid_entry *entries,
			     size_t max_entries, uint32_t flags, size_t entry_size)
{
	if (fake_err)
		return -fake_err;
	if (max_entries < 2)
		return -EINVAL;
	for (uint32_t i = 0; i < 2; i++)
		_ibv_query_gid_ex(ctx, 1, i, &entries[i], 0, sizeof(*entries));
	return 2;
}

int ibv_query_port_speed(struct ibv_context *ctx, uint32_t port, uint64_t *speed)
{
	if (fake_err)
		return fake_int_fail(0);
	*speed = 2000; /* 100 Mb/s units: 200 Gb/s */
	return 0;
}
#endif
