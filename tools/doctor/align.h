/* SPDX-License-Identifier: Apache-2.0 */
/*
 * railnet-doctor's alignment section (docs/doctor.md): for each GPU of the pod, which rails NCCL
 * may drive with GPUDirect RDMA (the NIC within NCCL's GPUDirect level of the GPU, PXB by
 * default, and GPUDirect RDMA working) and which move its data through host memory; the rails
 * that are not the pod's to align (front-end NICs, and on hostNetwork the rails of other GPUs);
 * a verdict with the one fix that applies (Topology Manager only where it can help); and a
 * calibrated prediction of the all-reduce busbw (the model is docs/doctor.md's "Predicted
 * busbw"). Built from the plugin's own discovery and topology; GPUDirect is decided by
 * rn_gdr_level_allows, the rule the plugin applies. Single-threaded.
 */
#ifndef RAILNET_DOCTOR_ALIGN_H
#define RAILNET_DOCTOR_ALIGN_H

#include <stdbool.h>
#include <stdio.h>

#include "railnet/device.h"
#include "railnet/gdr.h"
#include "railnet/topo.h"

#define RN_ALIGN_MAX 64

/* A PCIe link: generation and width from sysfs (current_link_speed/width), GB/s from them or
 * from hwloc. */
struct rn_align_pcie {
	int gen, width; /* 0 unknown */
	double gbs;	/* 0 unknown */
};

/* One usable port of the pod. */
struct rn_align_rail {
	char name[RN_DEV_NAME_MAX]; /* the host netdev ("rdma4") on RoCE, else the RDMA device */
	char device[RN_DEV_NAME_MAX];
	int port;
	char ifname[RN_DEV_NAME_MAX]; /* the interface its GID's address is on, "" on InfiniBand */
	char root[RN_BUSID_MAX];      /* "" unknown */
	char busid[RN_BUSID_MAX];     /* its PCI function, "" unknown */
	int speed;		      /* Mbps */
	struct rn_align_pcie pcie;    /* its NIC's link */
	int path;		      /* NCCL path type to the nearest GPU of the pod, -1 none */
	bool near;		      /* within NCCL's GPUDirect level of a GPU of the pod */
	bool gpudirect;		      /* near, and GPUDirect RDMA works on this node */
	bool frontend;	  /* the pod's bootstrap interface, on no GPU's path: not a rail */
	bool other;	  /* hostNetwork: near only GPUs the pod was not given */
	bool host_netdev; /* its address is on the port's own PF netdev */
};

struct rn_align_gpu {
	const struct rn_topo_dev *dev;
	int host_index; /* among every GPU of the node in bus id order (nvidia-smi's index) */
	struct rn_align_pcie pcie;
	int gdr[RN_ALIGN_MAX]; /* rails[] it drives with GPUDirect */
	int ngdr;
	int near[RN_ALIGN_MAX]; /* rails[] within the GPUDirect level (gdr[] when GDR works) */
	int nnear;
	int host[RN_ALIGN_MAX]; /* the pod's rails outside its level: host memory if used */
	int nhost;
	char not_given[512];	  /* NICs within the level that the pod was not given, "" none */
	double low_gbs, high_gbs; /* predicted network rate through this GPU */
};

enum rn_align_verdict {
	RN_ALIGN_UNKNOWN,     /* which GPUs are the pod's is not known */
	RN_ALIGN_NO_GPU,      /* the pod has no GPU */
	RN_ALIGN_ALIGNED,     /* every GPU has a rail within the level, every rail a GPU */
	RN_ALIGN_MISALIGNED,  /* another choice of the same number of PFs would align */
	RN_ALIGN_UNALIGNABLE, /* more PFs than the GPUs' roots hold: TM restricted rejects */
	RN_ALIGN_NO_RAIL,     /* the pod has GPUs but no usable rail: nothing to align */
};

/* Which prediction regime applied (docs/doctor.md, "Predicted busbw"). */
enum rn_align_regime {
	RN_REGIME_NO_GPU,    /* host memory at the rails' line rate */
	RN_REGIME_GPUDIRECT, /* every GPU has a GPUDirect rail */
	RN_REGIME_PACED,     /* some GPU has none: its host-staged channels pace the ring */
	RN_REGIME_STAGED,    /* no GPU has a rail within the level: staged across the CPU */
};

/* What the doctor knows of the pod beyond the discovery and the topology. */
struct rn_align_env {
	const char *sysfs_root;	  /* PCIe links from bus/pci/devices/<bdf>/current_link_* */
	const char *bootstrap_if; /* the out-of-band interface, NULL unknown */
	bool kubernetes;	  /* KUBERNETES_SERVICE_HOST is set: kubelet advice applies */
};

struct rn_align {
	const struct rn_topo *topo;
	struct rn_gdr gdr;
	struct rn_align_rail rails[RN_ALIGN_MAX];
	int nrails;
	struct rn_align_gpu gpus[RN_ALIGN_MAX];
	int ngpus;
	int ngdr;		  /* rails with gpudirect */
	int nnear;		  /* rails near a GPU of the pod */
	int nfrontend, nother;	  /* rails[] set aside (not counted in nrails' verdict) */
	bool hostnetwork;	  /* every RoCE rail's address is on its own PF netdev */
	bool tm_applies;	  /* Topology Manager can align this pod (see align.c) */
	double low_gbs, high_gbs; /* predicted busbw (GB/s) */
	double aligned_gbs;	  /* the same rails, all with GPUDirect */
	int regime;		  /* enum rn_align_regime */
	int pace;		  /* gpus[] that paces the ring, -1 none */
	char basis[512];	  /* the model's sentence: regime, limiter, coefficients */
	int verdict;		  /* enum rn_align_verdict */
	char what[1024];	  /* the problem, "" when aligned */
	char request[512];	  /* PFs to request instead ("rdma7, rdma8"), "" */
	char fix[2048];		  /* "" when nothing to fix */
};

/* Build from the discovery's ports, the topology (visible GPUs set) and the GDR probe. */
void rn_align_build(struct rn_align *a, const struct rn_discovery *d, const struct rn_topo *topo,
		    const struct rn_gdr *gdr, const struct rn_align_env *env);
const char *rn_align_verdict_str(int verdict);
/* NCCL_NET_GDR_LEVEL in force: "PXB", ..., "none" when GPUDirect is never allowed */
const char *rn_align_level_str(const struct rn_topo *t);
const char *rn_align_regime_str(int regime);
/* "GPU 2 (host GPU 4, 0000:8d:00.0)" */
const char *rn_align_gpu_label(const struct rn_align_gpu *g, char *buf, size_t len);
void rn_align_text(const struct rn_align *a, FILE *o);
/* The "alignment" member's value (an object), without a trailing comma. */
void rn_align_json(const struct rn_align *a, FILE *o, void (*json_str)(FILE *o, const char *s));

/*
 * The busbw model on its own (docs/doctor.md): rails[] and gpus[] filled (near, gpudirect,
 * other, frontend, pcie, the GPU lists), it sets the prediction members. Exposed for tests.
 */
void rn_align_predict(struct rn_align *a);

#endif /* RAILNET_DOCTOR_ALIGN_H */
