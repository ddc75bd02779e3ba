/* SPDX-License-Identifier: Apache-2.0 */
/*
 * railnet-doctor's alignment section (docs/doctor.md): which of the pod's rails sit on the
 * PCIe root of one of its GPUs (GPUDirect RDMA) and which do not (host memory, or idle), per
 * GPU the NICs on its root and elsewhere, a predicted all-reduce busbw range from the link
 * speeds, and the fix. Built from the plugin's own discovery and topology (topo.h); the rule
 * is rn_topo_ptr_support's, so the doctor and the plugin cannot disagree. Single-threaded.
 */
#ifndef RAILNET_DOCTOR_ALIGN_H
#define RAILNET_DOCTOR_ALIGN_H

#include <stdbool.h>
#include <stdio.h>

#include "railnet/device.h"
#include "railnet/gdr.h"
#include "railnet/topo.h"

#define RN_ALIGN_MAX 64

/* One rail (a usable port of the pod). */
struct rn_align_rail {
	char name[RN_DEV_NAME_MAX]; /* the host netdev when the topology names it ("rdma4"),
				     * else the RDMA device ("mlx5_4") */
	char device[RN_DEV_NAME_MAX];
	char root[RN_BUSID_MAX]; /* "" unknown */
	int speed;		 /* Mbps */
	bool gpudirect;		 /* a GPU of this pod shares its root */
};

struct rn_align_gpu {
	const struct rn_topo_dev *dev;
	int on_root[RN_ALIGN_MAX]; /* rails[] on its root */
	int non_root;
	int elsewhere[RN_ALIGN_MAX]; /* rails[] on other roots */
	int nelsewhere;
	char not_given[512]; /* NICs on its root that the pod was not given, "" none */
};

enum rn_align_verdict {
	RN_ALIGN_UNKNOWN,     /* which GPUs are the pod's is not known */
	RN_ALIGN_NO_GPU,      /* the pod has no GPU */
	RN_ALIGN_ALIGNED,     /* every GPU has a rail on its root, every rail a GPU */
	RN_ALIGN_MISALIGNED,  /* another choice of the same number of PFs would align */
	RN_ALIGN_UNALIGNABLE, /* more PFs than the GPUs' roots hold: TM restricted rejects */
	RN_ALIGN_NO_RAIL,     /* the pod has GPUs but no usable rail: nothing to align */
};

struct rn_align {
	const struct rn_topo *topo;
	struct rn_gdr gdr;
	struct rn_align_rail rails[RN_ALIGN_MAX];
	int nrails;
	struct rn_align_gpu gpus[RN_ALIGN_MAX];
	int ngpus;
	int ngdr;			       /* rails with gpudirect */
	double low_gbs, high_gbs, aligned_gbs; /* predicted busbw (GB/s); aligned: if aligned */
	int verdict;			       /* enum rn_align_verdict */
	char request[512];		       /* PFs to request instead ("rdma7, rdma8"), "" */
	char fix[2048];			       /* "" when nothing to fix */
};

/* Build from the discovery's ports, the topology (visible GPUs set) and the GDR probe. */
void rn_align_build(struct rn_align *a, const struct rn_discovery *d, const struct rn_topo *topo,
		    const struct rn_gdr *gdr);
const char *rn_align_verdict_str(int verdict);
void rn_align_text(const struct rn_align *a, FILE *o);
/* The "alignment" member's value (an object), without a trailing comma. */
void rn_align_json(const struct rn_align *a, FILE *o, void (*json_str)(FILE *o, const char *s));

#endif /* RAILNET_DOCTOR_ALIGN_H */
