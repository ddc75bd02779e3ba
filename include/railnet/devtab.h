/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The device table (src/devtab.c): what the first init acquires and the last finalize
 * releases about devices — the discovery, both numberings (enum rn_net_view) and the virtual
 * devices makeVDevice adds, the device contexts connections use, the bootstrap interface, the
 * PCIe topology and GDR probe, each device's NCCL_PTR_* — and the parameters a connection on a
 * device is made with.
 *
 * Threads: none of these functions locks; net.c calls every one of them under its lock, after
 * checking NCCL's arguments (a view and dev given here are valid unless said otherwise).
 * Errors: 0 or -errno after one WARN.
 */
#ifndef RAILNET_DEVTAB_H
#define RAILNET_DEVTAB_H

#include <stdbool.h>

#include "railnet/config.h"
#include "railnet/conn.h"
#include "railnet/types.h"
#include "railnet/vdev.h"
#include "railnet/xfer.h"

/*
 * First init, with the verbs library loaded: discover, build both numberings, load the
 * topology and probe GDR. 0, -RN_ECONFIG, -ENOMEM (nothing kept on failure).
 */
int rn_devtab_start(const struct rn_config *cfg);
/* Last finalize: close the device contexts, free everything start made. */
void rn_devtab_stop(void);

/* Devices of a view. */
int rn_devtab_count(enum rn_net_view view);
/* The one accessor of a device: dev of a view, NULL when out of range. */
const struct rn_nic *rn_devtab_nic(enum rn_net_view view, int dev);
/* Its index in the table (what rn_xfer_params.nic holds), -1 when out of range. */
int rn_devtab_nic_index(enum rn_net_view view, int dev);
/* dev is a base device of the view (listed before any makeVDevice device). */
bool rn_devtab_is_base(enum rn_net_view view, int dev);
/* Port i of the discovery. */
const struct rn_port *rn_devtab_port(int i);

/* NCCL_PTR_* of table entry nic, computed once and explained in one INFO line. */
int rn_devtab_ptr_support(int nic);
/* The properties of dev of a view (strings owned by the table). */
void rn_devtab_props(enum rn_net_view view, int dev, struct rn_props *props);
/*
 * makeVDevice's merge under RAILNET_MERGE `merge`: props->devs validated (net.h's rules) and
 * appended as a virtual device of RN_NET_VIEW_VDEV; *dev its index. -EINVAL, -ENOSPC, -ENOMEM.
 */
int rn_devtab_make_vdevice(const struct rn_vprops *props, int merge, int *dev);

/*
 * What a connection on dev of a view is made with: the QP-layer ports (when with_ports; the
 * device contexts are opened on first use and kept until stop), the connection parameters of
 * role RN_CONN_SEND or RN_CONN_RECV (the listener's bootstrap interface is found once) and the
 * data-path parameters. fn names the caller in WARNs.
 */
int rn_devtab_conn_setup(const char *fn, enum rn_net_view view, int dev, int traffic_class,
			 int role, bool with_ports, struct rn_qp_port *ports, int *nports,
			 struct rn_conn_params *cp, struct rn_xfer_params *xp);

/* RAILNET_GDR_POLICY for a CUDA buffer registered on table entry nic (gdr.h). 0 or -EPERM. */
int rn_devtab_gdr_check(int nic, const void *data);

#endif /* RAILNET_DEVTAB_H */
