// SPDX-License-Identifier: Apache-2.0
/*
 * Link model: a queue per port at the port's rate (Gb/s from the view's rate file, or
 * SOFTVERBS_RATE), shared by every context of the process, plus a fixed one-way latency
 * (config latency_us=, or SOFTVERBS_LATENCY_US). SOFTVERBS_RATE=off turns the rate model off
 * for raw-speed runs. It only computes times; the NIC does the waiting.
 */
#include "sv.h"

/*
 * Idle credit, in time: a port's queue may start this far in the past. It absorbs the NIC
 * thread coming back late after a WR left (the next WR of that QP is queued then), which would
 * otherwise be lost link time; after an idle spell it lets that much through at once.
 */
#define SV_DEPTH_NS 4000000ull

/*
 * Queues bytes on the port after everything queued before (a NIC serialises its QPs' messages
 * in the order it takes them) and returns when their last byte leaves: the WR is sent then, not
 * before. Without a rate model, now.
 */
uint64_t sv_rate_reserve(struct sv_device *dev, int port, uint64_t bytes, uint64_t now)
{
	struct sv_port *p;
	uint64_t end;
	double gbps;

	if (sv_g.rate_gbps < 0 || port < 1 || port > dev->nports)
		return now;
	p = &dev->port[port];
	gbps = sv_g.rate_gbps > 0 ? sv_g.rate_gbps : p->gbps;
	if (!(gbps > 0))
		return now;
	pthread_mutex_lock(&p->rate_lock);
	if (p->next_free_ns + SV_DEPTH_NS < now)
		p->next_free_ns = now - SV_DEPTH_NS;
	end = p->next_free_ns + (uint64_t)((double)bytes * 8 / gbps);
	p->next_free_ns = end;
	pthread_mutex_unlock(&p->rate_lock);
	return end;
}

uint64_t sv_link_latency_ns(struct sv_device *dev, int port)
{
	double us;

	if (sv_g.latency_us >= 0)
		us = sv_g.latency_us;
	else if (port >= 1 && port <= dev->nports)
		us = dev->port[port].latency_us;
	else
		us = 0;
	return (uint64_t)(us * 1000);
}
