// SPDX-License-Identifier: Apache-2.0
/*
 * Link model: a token bucket per port at the port's rate (Gb/s from the view's rate file, or
 * SOFTVERBS_RATE), shared by every context of the process, plus a fixed one-way latency
 * (config latency_us=, or SOFTVERBS_LATENCY_US). SOFTVERBS_RATE=off turns the rate model off
 * for raw-speed runs. It only computes times; the NIC does the waiting.
 */
#include "sv.h"

/* Bucket depth in time: idle credit a port may accumulate. It also absorbs the NIC thread
 * waking up late on a loaded machine, which would otherwise be lost link time. */
#define SV_DEPTH_NS 4000000ull

/* Reserves the link for bytes; *wait_ns = 0 when reserved, else how long to wait first. */
uint64_t sv_rate_reserve(struct sv_device *dev, int port, uint64_t bytes, uint64_t now,
			 uint64_t *wait_ns)
{
	struct sv_port *p;
	uint64_t start;
	double gbps;

	*wait_ns = 0;
	if (sv_g.rate_gbps < 0 || port < 1 || port > dev->nports)
		return now;
	p = &dev->port[port];
	gbps = sv_g.rate_gbps > 0 ? sv_g.rate_gbps : p->gbps;
	if (!(gbps > 0))
		return now;
	pthread_mutex_lock(&p->rate_lock);
	if (p->next_free_ns + SV_DEPTH_NS < now)
		p->next_free_ns = now - SV_DEPTH_NS;
	if (p->next_free_ns > now) {
		*wait_ns = p->next_free_ns - now;
		pthread_mutex_unlock(&p->rate_lock);
		return now;
	}
	start = p->next_free_ns;
	p->next_free_ns += (uint64_t)((double)bytes * 8 / gbps);
	pthread_mutex_unlock(&p->rate_lock);
	return start;
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
