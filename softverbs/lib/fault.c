// SPDX-License-Identifier: Apache-2.0
/*
 * Fault injection from the environment (documented in docs/softverbs.md): fail the Nth call of
 * a named verb with an errno, move QPs to error after N completed work requests, take a port
 * down and up at given times, cut QP links, drop packets above a link MTU, delay completions. Parsed once at init; malformed
 * settings are reported on stderr and ignored. Schedules are applied by the NIC (tick).
 */
#include "nic.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SV_MAX_FAIL 16

struct sv_fail_rule {
	char verb[48];
	uint32_t nth;
	int err;
	uint32_t calls; /* atomic */
};

static struct sv_fail_rule sv_fail_rules[SV_MAX_FAIL];
static int sv_nfail;
int sv_fault_any;
uint32_t sv_fault_qp_err_after;
uint32_t sv_fault_drop_ack;
static uint32_t sv_fault_imm_seen; /* atomic: requests with immediate data executed */
uint64_t sv_fault_cqe_delay_ns;
uint64_t sv_fault_event_delay_ns;
struct sv_port_fault sv_fault_ports[8];
int sv_fault_nports;
struct sv_mtu_fault sv_fault_mtus[8];
int sv_fault_nmtus;
uint64_t sv_fault_cut_ns;
uint32_t sv_fault_cut_qpn;

static const struct {
	const char *name;
	int err;
} sv_errnos[] = {
	{ "EPERM", EPERM },
	{ "ENOENT", ENOENT },
	{ "EIO", EIO },
	{ "EAGAIN", EAGAIN },
	{ "ENOMEM", ENOMEM },
	{ "EACCES", EACCES },
	{ "EFAULT", EFAULT },
	{ "EBUSY", EBUSY },
	{ "EEXIST", EEXIST },
	{ "ENODEV", ENODEV },
	{ "EINVAL", EINVAL },
	{ "ENOSPC", ENOSPC },
	{ "ENOSYS", ENOSYS },
	{ "EOPNOTSUPP", EOPNOTSUPP },
	{ "ETIMEDOUT", ETIMEDOUT },
	{ "ECONNREFUSED", ECONNREFUSED },
	{ "ENODATA", ENODATA },
	{ "EPROTO", EPROTO },
};

static int sv_parse_errno(const char *s)
{
	size_t i;
	char *end;
	long v;

	for (i = 0; i < sizeof(sv_errnos) / sizeof(sv_errnos[0]); i++)
		if (!strcmp(s, sv_errnos[i].name))
			return sv_errnos[i].err;
	v = strtol(s, &end, 10);
	return (*s && !*end && v > 0 && v < 4096) ? (int)v : 0;
}

/* Calls each(rule) for every comma-separated rule of env (at most 1023 bytes of it). */
static void sv_each_rule(const char *env, void (*each)(const char *rule))
{
	char buf[1024], *tok, *save = NULL;

	snprintf(buf, sizeof(buf), "%s", env);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		each(tok);
}

/*
 * A rule "<dev>:<port>:<rest>": copies dev (at most 63 characters) and the port (>= 1);
 * returns rest, or NULL when the rule does not start that way.
 */
static const char *sv_dev_port(const char *rule, char dev[64], int *port)
{
	const char *colon = strchr(rule, ':');
	char *end;
	long v;

	if (!colon || colon == rule || colon - rule > 63)
		return NULL;
	memcpy(dev, rule, (size_t)(colon - rule));
	dev[colon - rule] = 0;
	v = strtol(colon + 1, &end, 10);
	if (end == colon + 1 || *end != ':' || v < 1 || v > 255)
		return NULL;
	*port = (int)v;
	return end + 1;
}

static void sv_fail_rule(const char *tok)
{
	char verb[48], nth[16], err[32];
	struct sv_fail_rule *r;

	if (sscanf(tok, "%47[^:]:%15[^:]:%31s", verb, nth, err) != 3 || atoi(nth) < 1 ||
	    !sv_parse_errno(err) || sv_nfail == SV_MAX_FAIL) {
		sv_log("SOFTVERBS_FAIL: \"%s\" ignored; want <verb>:<nth call>:<errno>, "
		       "e.g. ibv_create_qp:3:ENOMEM",
		       tok);
		return;
	}
	r = &sv_fail_rules[sv_nfail++];
	snprintf(r->verb, sizeof(r->verb), "%s", verb);
	r->nth = (uint32_t)atoi(nth);
	r->err = sv_parse_errno(err);
}

static void sv_port_rule(const char *tok)
{
	struct sv_port_fault *f;
	double down = -1, up = 0;
	const char *rest;
	char dev[64];
	int port = 0, n = 0;

	rest = sv_dev_port(tok, dev, &port);
	if (rest)
		n = sscanf(rest, "%lf:%lf", &down, &up);
	if (n < 1 || down < 0 || (n == 2 && up <= down) || sv_fault_nports == 8) {
		sv_log("SOFTVERBS_PORT_DOWN: \"%s\" ignored; want <dev>:<port>:<down ms>"
		       "[:<up ms>], e.g. mlx5_0:1:100:300",
		       tok);
		return;
	}
	f = &sv_fault_ports[sv_fault_nports++];
	snprintf(f->dev, sizeof(f->dev), "%s", dev);
	f->port = port;
	f->down_ns = (uint64_t)(down * 1e6);
	f->up_ns = n == 2 ? (uint64_t)(up * 1e6) : 0;
}

static void sv_mtu_rule(const char *tok)
{
	struct sv_mtu_fault *f;
	const char *rest;
	char dev[64], extra;
	unsigned int mtu = 0;
	int port = 0;

	rest = sv_dev_port(tok, dev, &port);
	if (!rest || sscanf(rest, "%u%c", &mtu, &extra) != 1 || mtu < 576 || mtu > 65535 ||
	    sv_fault_nmtus == 8) {
		sv_log("SOFTVERBS_LINK_MTU: \"%s\" ignored; want <dev>:<port>:<bytes> with "
		       "bytes from 576 to 65535 (8 entries at most), e.g. mlx5_0:1:1500",
		       tok);
		return;
	}
	f = &sv_fault_mtus[sv_fault_nmtus++];
	snprintf(f->dev, sizeof(f->dev), "%s", dev);
	f->port = port;
	f->mtu = mtu;
}

bool sv_fault_frame_lost(const char *dev, int port, uint64_t len, int path_mtu)
{
	uint64_t pmtu = path_mtu >= IBV_MTU_256 && path_mtu <= IBV_MTU_4096 ? 128u << path_mtu
									    : 4096,
		 frame = (len < pmtu ? len : pmtu) + SV_ROCE_HDR;
	static int logged;

	for (int i = 0; i < sv_fault_nmtus; i++) {
		const struct sv_mtu_fault *f = &sv_fault_mtus[i];

		if (f->port != port || strcmp(f->dev, dev) || frame <= f->mtu)
			continue;
		if (!__atomic_exchange_n(&logged, 1, __ATOMIC_RELAXED))
			sv_log("SOFTVERBS_LINK_MTU: %s port %d drops a %llu-byte packet (link MTU "
			       "%u; path MTU %llu, %llu-byte message)",
			       dev, port, (unsigned long long)frame, f->mtu,
			       (unsigned long long)pmtu, (unsigned long long)len);
		return true;
	}
	return false;
}

void sv_fault_init(void)
{
	const char *e;

	e = getenv("SOFTVERBS_FAIL");
	if (e && *e) {
		sv_each_rule(e, sv_fail_rule);
		sv_fault_any = sv_nfail > 0;
	}
	e = getenv("SOFTVERBS_QP_ERR_AFTER");
	if (e && *e) {
		char *end;
		unsigned long v = strtoul(e, &end, 10);

		if (*end || !v || v > 0xffffffffu)
			sv_log("SOFTVERBS_QP_ERR_AFTER=%s ignored; want a count >= 1", e);
		else
			sv_fault_qp_err_after = (uint32_t)v;
	}
	e = getenv("SOFTVERBS_DROP_ACK");
	if (e && *e) {
		char *end;
		unsigned long v = strtoul(e, &end, 10);

		if (*end || !v || v > 0xffffffffu)
			sv_log("SOFTVERBS_DROP_ACK=%s ignored; want a count >= 1", e);
		else
			sv_fault_drop_ack = (uint32_t)v;
	}
	e = getenv("SOFTVERBS_CQE_DELAY_US");
	if (e && *e) {
		char *end;
		double v = strtod(e, &end);

		if (*end || v < 0)
			sv_log("SOFTVERBS_CQE_DELAY_US=%s ignored; want microseconds", e);
		else
			sv_fault_cqe_delay_ns = (uint64_t)(v * 1000);
	}
	e = getenv("SOFTVERBS_EVENT_DELAY_US");
	if (e && *e) {
		char *end;
		unsigned long v = strtoul(e, &end, 10);

		if (*end || e[0] == '-' || !v || v > 100000)
			sv_log("SOFTVERBS_EVENT_DELAY_US=%s ignored; want microseconds from 1 to "
			       "100000",
			       e);
		else
			sv_fault_event_delay_ns = v * 1000;
	}
	e = getenv("SOFTVERBS_PORT_DOWN");
	if (e && *e)
		sv_each_rule(e, sv_port_rule);
	e = getenv("SOFTVERBS_LINK_MTU");
	if (e && *e)
		sv_each_rule(e, sv_mtu_rule);
	e = getenv("SOFTVERBS_CUT_LINK");
	if (e && *e) {
		double ms = -1;
		unsigned int qpn = 0;

		if (sscanf(e, "%lf:%u", &ms, &qpn) < 1 || ms < 0)
			sv_log("SOFTVERBS_CUT_LINK=%s ignored; want <ms>[:<qpn>]", e);
		else {
			sv_fault_cut_ns = (uint64_t)(ms * 1e6) + 1;
			sv_fault_cut_qpn = qpn;
		}
	}
}

int sv_fault_check(const char *verb)
{
	int i;

	for (i = 0; i < sv_nfail; i++) {
		struct sv_fail_rule *r = &sv_fail_rules[i];

		if (strcmp(r->verb, verb))
			continue;
		if (__atomic_add_fetch(&r->calls, 1, __ATOMIC_RELAXED) == r->nth) {
			sv_log("SOFTVERBS_FAIL: call %u of %s fails with %s", r->nth, verb,
			       strerror(r->err));
			return r->err;
		}
	}
	return 0;
}

/*
 * SOFTVERBS_DROP_ACK=n: the responder QP that executes the process's n-th request carrying
 * immediate data (WRITE_WITH_IMM, SEND_WITH_IMM) delivers it, completes its receive, and from
 * then on acknowledges nothing: its requester's retries run out (RETRY_EXC_ERR), as when the
 * ACKs are lost on the wire after the data landed.
 */
bool sv_fault_ack_dropped(struct sv_qp *qp)
{
	if (qp->ack_drop)
		return true;
	if (!sv_fault_drop_ack ||
	    __atomic_add_fetch(&sv_fault_imm_seen, 1, __ATOMIC_RELAXED) != sv_fault_drop_ack)
		return false;
	sv_log("SOFTVERBS_DROP_ACK=%u: QP %u acknowledges nothing from now on", sv_fault_drop_ack,
	       qp->qpn);
	qp->ack_drop = true;
	return true;
}

/* Port went down in this context's view: event, and its QPs lose their link. */
static void sv_port_went_down(struct sv_ctx *ctx, int port)
{
	for (struct sv_qp *qp = ctx->qps; qp; qp = qp->next) {
		int qport;

		pthread_mutex_lock(&qp->lock);
		qport = qp->attr.port_num;
		pthread_mutex_unlock(&qp->lock);
		if (qport != port)
			continue;
		sv_qp_detach_conns(qp);
		pthread_mutex_lock(&qp->lock);
		if (qp->state != IBV_QPS_RESET && qp->state != IBV_QPS_ERR)
			sv_qp_to_err(qp, IBV_WC_RETRY_EXC_ERR);
		pthread_mutex_unlock(&qp->lock);
	}
	/* after the QPs: whoever handles the event sees them in error already */
	sv_async_post(ctx, IBV_EVENT_PORT_ERR, (uint64_t)port);
}

uint64_t sv_fault_tick(struct sv_ctx *ctx, uint64_t now)
{
	uint64_t rel = now - sv_g.t0_ns, next = UINT64_MAX;
	int i;

	for (i = 0; i < sv_fault_nports; i++) {
		struct sv_port_fault *f = &sv_fault_ports[i];
		bool down;

		if (strcmp(f->dev, ctx->dev->dev.name) || f->port > ctx->dev->nports)
			continue;
		down = rel >= f->down_ns && (!f->up_ns || rel < f->up_ns);
		__atomic_store_n(&ctx->dev->port[f->port].fault_down, down, __ATOMIC_RELEASE);
		if (down != (ctx->port_seen_down[f->port] != 0)) {
			ctx->port_seen_down[f->port] = down;
			if (down)
				sv_port_went_down(ctx, f->port);
			else
				sv_async_post(ctx, IBV_EVENT_PORT_ACTIVE, (uint64_t)f->port);
		}
		if (rel < f->down_ns && sv_g.t0_ns + f->down_ns < next)
			next = sv_g.t0_ns + f->down_ns;
		if (f->up_ns && rel < f->up_ns && sv_g.t0_ns + f->up_ns < next)
			next = sv_g.t0_ns + f->up_ns;
	}
	if (sv_fault_cut_ns && !ctx->cut_done) {
		if (rel + 1 >= sv_fault_cut_ns) {
			ctx->cut_done = true;
			for (struct sv_qp *qp = ctx->qps; qp; qp = qp->next) {
				if (sv_fault_cut_qpn && qp->qpn != sv_fault_cut_qpn)
					continue;
				if (qp->out || qp->in)
					sv_log("SOFTVERBS_CUT_LINK: QP %u link cut", qp->qpn);
				sv_qp_detach_conns(qp);
				pthread_mutex_lock(&qp->lock);
				if (!qp->link_dead_ns)
					qp->link_dead_ns = now;
				pthread_mutex_unlock(&qp->lock);
			}
		} else if (sv_g.t0_ns + sv_fault_cut_ns < next) {
			next = sv_g.t0_ns + sv_fault_cut_ns;
		}
	}
	return next;
}
