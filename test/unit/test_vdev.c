// SPDX-License-Identifier: Apache-2.0
/*
 * Merge rules over tables of ports (vdev.h): PCI roots and sibling functions, the checks of
 * a merge (link layer, root, duplicates, size), railnet's own grouping for RAILNET_MERGE and
 * the properties of a merged device (name, speed sum, common pciPath, rail), the two
 * numberings built from one discovery, and makeVDevice under RAILNET_MERGE through net.h over
 * a softverbs view (one NIC of two ports on one PCIe root).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "railnet/net.h"
#include "railnet/pci.h"
#include "railnet/vdev.h"
#include "rn_test.h"
#include "rn_test_sv.h"

#define ROOT0 "/sys/devices/pci0000:00/0000:00:01.1"
#define ROOT1 "/sys/devices/pci0000:80/0000:80:01.1"

static struct rn_port port(const char *name, int num, int ll, char *path, const char *root,
			   int speed, int rail)
{
	struct rn_port p;

	memset(&p, 0, sizeof(p));
	snprintf(p.name, sizeof(p.name), "%s", name);
	p.port = num;
	p.nccl_port = num;
	p.link_layer = ll;
	p.pci_path = path;
	snprintf(p.pci_root, sizeof(p.pci_root), "%s", root);
	p.speed = speed;
	p.max_qp = 1000 + speed / 1000;
	p.rail_id = rail;
	p.plane_id = -1;
	p.sys_image_guid = 0xb8ce;
	return p;
}

static void test_pci(void **state)
{
	char root[32];

	(void)state;
	assert_int_equal(rn_pci_root(ROOT0 "/0000:0c:00.0", root, sizeof(root)), 0);
	assert_string_equal(root, "0000:00:01.1");
	assert_int_equal(rn_pci_root("/v/devices/pci0000:80/0000:80:01.1/0000:81:00.0/0000:82:00.1",
				     root, sizeof(root)),
			 0);
	assert_string_equal(root, "0000:80:01.1");
	assert_int_equal(rn_pci_root("/sys/devices/pci0000:00/0000:00:02.0", root, sizeof(root)),
			 -ENOENT); /* on the host bridge itself */
	assert_int_equal(rn_pci_root("/sys/devices/virtual/net", root, sizeof(root)), -ENOENT);
	assert_true(rn_pci_same_device(ROOT0 "/0000:0c:00.0", ROOT0 "/0000:0c:00.1"));
	assert_false(rn_pci_same_device(ROOT0 "/0000:0c:00.0", ROOT0 "/0000:0c:01.0"));
	assert_false(rn_pci_same_device(ROOT0 "/0000:0c:00.0", ROOT0 "/0000:0d:00.1"));
	assert_false(rn_pci_same_device(NULL, ROOT0 "/0000:0c:00.1"));
}

static void test_check_and_groups(void **state)
{
	char a[] = ROOT0 "/0000:0c:00.0", b[] = ROOT0 "/0000:0c:00.1", c[] = ROOT0 "/0000:0c:00.2",
	     d[] = ROOT1 "/0000:88:00.0", e[] = ROOT1 "/0000:88:00.1";
	struct rn_port p[] = {
		port("mlx5_0", 1, 2, a, "0000:00:01.1", 100000, 1),
		port("mlx5_1", 1, 2, b, "0000:00:01.1", 100000, 1),
		port("mlx5_2", 1, 1, c, "0000:00:01.1", 200000, -1), /* IB function */
		port("mlx5_3", 1, 2, d, "0000:80:01.1", 50000, -1),
		port("mlx5_3", 2, 2, d, "0000:80:01.1", 50000, -1), /* second port */
		port("mlx5_4", 1, 2, e, "0000:80:01.1", 50000, -1),
	};
	int group[6], idx[3];
	char why[256];
	struct rn_nic nic;

	(void)state;
	idx[0] = 0, idx[1] = 1;
	assert_int_equal(rn_vdev_check(p, idx, 2, 8, why, sizeof(why)), 0);
	idx[1] = 2;
	assert_int_equal(rn_vdev_check(p, idx, 2, 8, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "mixed link layers"));
	idx[1] = 3;
	assert_int_equal(rn_vdev_check(p, idx, 2, 8, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "different PCIe roots"));
	idx[1] = 0;
	assert_int_equal(rn_vdev_check(p, idx, 2, 8, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "listed twice"));
	idx[1] = 1;
	assert_int_equal(rn_vdev_check(p, idx, 2, 1, why, sizeof(why)), -EINVAL);

	/* mlx5_0+mlx5_1 (PFs), mlx5_2 alone (IB), mlx5_3:1+mlx5_3:2+mlx5_4 (one device) */
	assert_int_equal(rn_vdev_groups(p, 6, group), 3);
	assert_int_equal(group[0], group[1]);
	assert_int_not_equal(group[2], group[0]);
	assert_int_equal(group[3], group[4]);
	assert_int_equal(group[4], group[5]);

	idx[0] = 0, idx[1] = 1;
	assert_int_equal(rn_nic_init(&nic, p, 6, idx, 2), 0);
	assert_string_equal(nic.name, "mlx5_0+mlx5_1");
	assert_int_equal(nic.speed, 200000);
	assert_string_equal(nic.pci_path, ROOT0 "/0000:0c:00.0");
	assert_int_equal(nic.rail_id, 1);
	assert_int_equal(nic.nports, 2);
	rn_nic_fini(&nic);
	idx[0] = 3, idx[1] = 4, idx[2] = 5;
	assert_int_equal(rn_nic_init(&nic, p, 6, idx, 3), 0);
	assert_string_equal(nic.name, "mlx5_3:1+mlx5_3:2+mlx5_4");
	assert_int_equal(nic.speed, 150000);
	assert_string_equal(nic.pci_path, ROOT1 "/0000:88:00.0");
	assert_int_equal(nic.max_comms, 1050);
	rn_nic_fini(&nic);
	idx[0] = 4; /* a single port of a two-port device keeps a unique name */
	assert_int_equal(rn_nic_init(&nic, p, 6, idx, 1), 0);
	assert_string_equal(nic.name, "mlx5_3:2");
	rn_nic_fini(&nic);
	idx[0] = 0, idx[1] = 3; /* different roots: the common path is their parent */
	assert_int_equal(rn_nic_init(&nic, p, 6, idx, 2), 0);
	assert_string_equal(nic.pci_path, "/sys/devices");
	assert_int_equal(nic.rail_id, -1);
	rn_nic_fini(&nic);
}

/* A RoCE port whose GID stands for a.b.c.d/prefix, or an IB port with GID prefix hi. */
static struct rn_port rail_port(const char *name, uint8_t a, uint8_t b, uint8_t c, int prefix,
				int hca_rail)
{
	struct rn_port p = port(name, 1, 2, NULL, "", 100000, hca_rail);

	memset(p.gid.raw, 0, 16);
	p.gid.raw[10] = p.gid.raw[11] = 0xff;
	p.gid.raw[12] = a, p.gid.raw[13] = b, p.gid.raw[14] = c, p.gid.raw[15] = 7;
	p.gid.prefix = prefix;
	return p;
}

/*
 * Rails: NCCL_IB_HCA's when given, else the subnet (its number's low 15 bits), the same on
 * every node whatever the local order; no rail where the subnet cannot tell rails apart.
 */
static void test_rails(void **state)
{
	struct rn_port p[4];

	(void)state;
	/* seeds-like /16 rails, listed in another order: ids follow the subnet, not the order */
	p[0] = rail_port("mlx5_0", 10, 11, 1, 16, RN_RAIL_FROM_SUBNET);
	p[1] = rail_port("mlx5_1", 10, 10, 1, 16, RN_RAIL_FROM_SUBNET);
	rn_rail_derive(p, 2);
	assert_int_equal(p[0].rail_id, 0x0a0b);
	assert_int_equal(p[1].rail_id, 0x0a0a);
	assert_string_equal(p[0].rail_net, "10.11.0.0/16");
	assert_int_not_equal(p[0].rail_key, 0);
	assert_int_not_equal(p[0].rail_key, p[1].rail_key);
	assert_int_equal(p[0].rail_key & 0x80000000u, 0);
	/* the key is a pure function of the subnet: another node, another host address */
	p[2] = rail_port("mlx5_7", 10, 11, 200, 16, RN_RAIL_FROM_SUBNET);
	rn_rail_derive(&p[2], 1);
	assert_int_equal(p[2].rail_key, p[0].rail_key);
	assert_int_equal(p[2].rail_id, p[0].rail_id);

	/* /24 rails 10.0.R.0: consecutive ids */
	p[0] = rail_port("a", 10, 0, 3, 24, RN_RAIL_FROM_SUBNET);
	p[1] = rail_port("b", 10, 0, 4, 24, RN_RAIL_FROM_SUBNET);
	rn_rail_derive(p, 2);
	assert_int_equal(p[0].rail_id, 3);
	assert_int_equal(p[1].rail_id, 4);

	/* subnets that differ only above the id's 15 bits: one id, two keys (docs/data-path.md) */
	p[0] = rail_port("a", 10, 0, 1, 24, RN_RAIL_FROM_SUBNET);
	p[1] = rail_port("b", 12, 0, 1, 24, RN_RAIL_FROM_SUBNET);
	rn_rail_derive(p, 2);
	assert_int_equal(p[0].rail_id, 1);
	assert_int_equal(p[1].rail_id, 1);
	assert_int_not_equal(p[0].rail_key, 0);
	assert_int_not_equal(p[1].rail_key, 0);
	assert_int_not_equal(p[0].rail_key, p[1].rail_key);

	/* two NICs per rail (run-2pod.spec): each subnet holds two ports, still rails */
	p[0] = rail_port("a", 10, 20, 1, 16, RN_RAIL_FROM_SUBNET);
	p[1] = rail_port("b", 10, 21, 1, 16, RN_RAIL_FROM_SUBNET);
	p[2] = rail_port("c", 10, 20, 2, 16, RN_RAIL_FROM_SUBNET);
	p[3] = rail_port("d", 10, 21, 2, 16, RN_RAIL_FROM_SUBNET);
	rn_rail_derive(p, 4);
	assert_int_equal(p[0].rail_id, p[2].rail_id);
	assert_int_equal(p[1].rail_id, p[3].rail_id);
	assert_int_not_equal(p[0].rail_id, p[1].rail_id);
	assert_int_equal(p[0].rail_key, p[2].rail_key);

	/* every port in one big subnet (one rail network, routed): no rail */
	p[0] = rail_port("a", 10, 224, 1, 12, RN_RAIL_FROM_SUBNET);
	p[1] = rail_port("b", 10, 225, 1, 12, RN_RAIL_FROM_SUBNET);
	rn_rail_derive(p, 2);
	assert_int_equal(p[0].rail_id, -1);
	assert_int_equal(p[1].rail_key, 0);
	assert_non_null(strstr(p[0].rail_why, "same subnet"));

	/* NCCL_IB_HCA's rail wins; unknown netmask: no rail */
	p[0] = rail_port("a", 10, 10, 1, 16, 5);
	p[1] = rail_port("b", 10, 11, 1, -1, RN_RAIL_FROM_SUBNET);
	rn_rail_derive(p, 2);
	assert_int_equal(p[0].rail_id, 5);
	assert_int_equal(p[0].rail_key, 0x80000005u);
	assert_int_equal(p[1].rail_id, -1);
	assert_int_equal(p[1].rail_key, 0);
	assert_non_null(strstr(p[1].rail_why, "netmask"));

	/* per-link /31 subnets of L3 fabrics name a link, not a rail */
	p[0] = rail_port("a", 10, 0, 3, 31, RN_RAIL_FROM_SUBNET);
	rn_rail_derive(p, 1);
	assert_int_equal(p[0].rail_id, -1);
	assert_int_equal(p[0].rail_key, 0);
	assert_non_null(strstr(p[0].rail_why, "point-to-point"));

	/* InfiniBand: the GID prefix, except the default fe80::/64 */
	p[0] = port("ib0", 1, 1, NULL, "", 200000, RN_RAIL_FROM_SUBNET);
	p[1] = p[0];
	memset(p[0].gid.raw, 0, 16);
	p[0].gid.raw[0] = 0xfe, p[0].gid.raw[1] = 0x80;
	memcpy(p[1].gid.raw, p[0].gid.raw, 16);
	p[1].gid.raw[0] = 0xfd, p[1].gid.raw[7] = 0x02;
	rn_rail_derive(p, 2);
	assert_int_equal(p[0].rail_id, -1);
	assert_non_null(strstr(p[0].rail_why, "fe80"));
	assert_int_equal(p[1].rail_id, 2);
}

/* A merged device: NCCL IB's rail (common or -1) and plane mask (virtual bit | 1 << index). */
static void test_vdev_planes(void **state)
{
	struct rn_port p[3] = {
		port("mlx5_0", 1, 2, NULL, "", 100000, 4),
		port("mlx5_1", 1, 2, NULL, "", 100000, 4),
		port("mlx5_2", 1, 2, NULL, "", 100000, 6),
	};
	int idx[3] = { 0, 1, 2 };
	struct rn_nic nic;

	(void)state;
	assert_int_equal(rn_nic_init(&nic, p, 3, idx, 2), 0);
	assert_int_equal(nic.rail_id, 4);
	assert_int_equal(nic.plane_id, RN_PLANE_VIRT_BIT | 1); /* undefined planes: index 0 */
	rn_nic_fini(&nic);
	assert_int_equal(rn_nic_init(&nic, p, 3, idx, 3), 0);
	assert_int_equal(nic.rail_id, -1);
	rn_nic_fini(&nic);
	/* planes 9 and 3 (NCCL_IB_HCA): indices 1 and 2 in port order */
	p[0].plane_id = 9, p[1].plane_id = 3, p[2].plane_id = 9;
	assert_int_equal(rn_nic_init(&nic, p, 3, idx, 3), 0);
	assert_int_equal(nic.plane_id, RN_PLANE_VIRT_BIT | 1 << 1 | 1 << 2);
	rn_nic_fini(&nic);
	assert_int_equal(rn_nic_init(&nic, p, 3, &idx[1], 1), 0);
	assert_int_equal(nic.plane_id, 3); /* a lone port keeps its own */
	rn_nic_fini(&nic);
}

/* Both numberings from one discovery (what net.c offers and the doctor prints). */
static void test_numbering(void **state)
{
	char a[] = ROOT0 "/0000:0c:00.0", b[] = ROOT0 "/0000:0c:00.1", c[] = ROOT1 "/0000:88:00.0";
	struct rn_port p[3] = {
		port("mlx5_0", 1, 2, a, "0000:00:01.1", 100000, -1),
		port("mlx5_1", 1, 2, b, "0000:00:01.1", 100000, -1),
		port("mlx5_2", 1, 2, c, "0000:80:01.1", 100000, -1),
	};
	struct rn_discovery d = { .ports = p, .nports = 3 };
	struct rn_numbering num;
	const struct rn_view *vdev = &num.view[RN_NET_VIEW_VDEV];
	const struct rn_view *self = &num.view[RN_NET_VIEW_SELF];

	(void)state;
	assert_int_equal(rn_numbering_build(&d, RN_MERGE_AUTO, &num), 0);
	assert_int_equal(vdev->n, 3);
	assert_int_equal(vdev->nbase, 3);
	assert_int_equal(self->n, 2);
	assert_string_equal(num.nics[self->nic[0]].name, "mlx5_0+mlx5_1");
	assert_int_equal(self->nic[1], vdev->nic[2]); /* a lone port: one device in both views */
	assert_int_equal(num.nnics, 4);
	rn_numbering_fini(&num);

	assert_int_equal(rn_numbering_build(&d, RN_MERGE_PORTS, &num), 0);
	assert_int_equal(vdev->n, 2);
	assert_int_equal(self->n, 2);
	assert_string_equal(num.nics[vdev->nic[0]].name, num.nics[self->nic[0]].name);
	assert_int_equal(vdev->nic[1], self->nic[1]); /* only lone ports are shared */
	assert_int_equal(num.nnics, 3);
	rn_numbering_fini(&num);

	assert_int_equal(rn_numbering_build(&d, RN_MERGE_NONE, &num), 0);
	assert_int_equal(vdev->n, 3);
	assert_int_equal(self->n, 3);
	assert_int_equal(num.nnics, 3);
	assert_string_equal(num.nics[self->nic[2]].name, "mlx5_2");
	rn_numbering_fini(&num);

	d.nports = 0;
	assert_int_equal(rn_numbering_build(&d, RN_MERGE_AUTO, &num), 0);
	assert_int_equal(vdev->n + self->n + num.nnics, 0);
	rn_numbering_fini(&num);
}

/* Devices of a view after a fresh init under RAILNET_MERGE=merge (NULL: unset). */
static struct rn_net_ctx *init_with_merge(const char *merge, int *nvdev, int *nself)
{
	struct rn_net_ctx *ctx = NULL;

	if (merge)
		setenv("RAILNET_MERGE", merge, 1);
	else
		unsetenv("RAILNET_MERGE");
	rn_test_log_capture();
	assert_int_equal(rn_net_init(NULL, 1, RN_TRAFFIC_CLASS_UNDEF, &ctx), 0);
	RN_ASSERT_NO_WARN();
	assert_int_equal(rn_net_devices_in(RN_NET_VIEW_VDEV, nvdev), 0);
	assert_int_equal(rn_net_devices_in(RN_NET_VIEW_SELF, nself), 0);
	return ctx;
}

/*
 * docs/env.md, RAILNET_MERGE: `none` gives one device per port in both numberings and refuses
 * makeVDevice with one WARN naming the setting; by default the same request, for the two ports
 * of one NIC, makes virtual device 2.
 */
static void test_make_vdevice_merge(void **state)
{
	const struct rn_vprops both = { .ndevs = 2, .devs = { 0, 1 } };
	char dir[256], lib[512], xml[512];
	struct rn_net_ctx *ctx;
	struct rn_props props;
	int nvdev = -1, nself = -1, dev = -1;

	(void)state;
	assert_int_equal(rn_test_sv_mkview_lo("vdev", 2, "pci0000:00/0000:00:01.1/0000:0c:00.0",
					      dir, sizeof(dir)),
			 0);
	snprintf(lib, sizeof(lib), "%s/softverbs/libibverbs.so.1", rn_test_build_dir());
	snprintf(xml, sizeof(xml), "%s/test/fixtures/topo/switch.xml", rn_test_source_dir());
	setenv("RAILNET_IBVERBS_LIB", lib, 1);
	setenv("SOFTVERBS_VIEW", dir, 1);
	setenv("RAILNET_SYSFS_ROOT", dir, 1);
	setenv("RAILNET_TOPO_XML", xml,
	       1); /* not this machine's: no WARN where hwloc sees no PCI */
	setenv("NCCL_SOCKET_IFNAME", "lo", 1);

	ctx = init_with_merge(NULL, &nvdev, &nself);
	assert_int_equal(nvdev, 2); /* NCCL >= 2.24: one device per port, makeVDevice merges */
	assert_int_equal(nself, 1); /* older NCCL: railnet merged the two ports itself */
	assert_int_equal(rn_net_make_vdevice(&both, &dev), 0);
	RN_ASSERT_NO_WARN();
	assert_int_equal(dev, 2);
	assert_int_equal(rn_net_get_properties(dev, &props), 0);
	assert_int_equal(props.vprops.ndevs, 2);
	assert_int_equal(rn_net_finalize(ctx), 0);

	ctx = init_with_merge("none", &nvdev, &nself);
	assert_int_equal(nvdev, 2);
	assert_int_equal(nself, 2); /* nothing merged for older NCCL either */
	dev = -1;
	assert_int_equal(rn_net_make_vdevice(&both, &dev), -EINVAL);
	assert_int_equal(dev, -1);
	assert_int_equal(rn_test_log.warns, 1);
	assert_non_null(strstr(rn_test_log.last_warn, "makeVDevice: RAILNET_MERGE=none"));
	assert_int_equal(rn_net_devices(&nvdev), 0);
	assert_int_equal(nvdev, 2); /* no device was added */
	assert_int_equal(rn_net_get_properties(2, &props), -EINVAL);
	assert_int_equal(rn_net_finalize(ctx), 0);

	unsetenv("RAILNET_MERGE");
	unsetenv("RAILNET_IBVERBS_LIB");
	unsetenv("SOFTVERBS_VIEW");
	unsetenv("RAILNET_SYSFS_ROOT");
	unsetenv("RAILNET_TOPO_XML");
	unsetenv("NCCL_SOCKET_IFNAME");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pci),	    cmocka_unit_test(test_check_and_groups),
		cmocka_unit_test(test_numbering),   cmocka_unit_test(test_rails),
		cmocka_unit_test(test_vdev_planes), cmocka_unit_test(test_make_vdevice_merge),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
