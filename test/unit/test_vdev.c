// SPDX-License-Identifier: Apache-2.0
/*
 * Merge rules over tables of ports (vdev.h): PCI roots and sibling functions, the checks of
 * a merge (link layer, root, duplicates, size), railnet's own grouping for RAILNET_MERGE and
 * the properties of a merged device (name, speed sum, common pciPath, rail), and the two
 * numberings built from one discovery.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "railnet/vdev.h"
#include "rn_test.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pci),
		cmocka_unit_test(test_check_and_groups),
		cmocka_unit_test(test_numbering),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
