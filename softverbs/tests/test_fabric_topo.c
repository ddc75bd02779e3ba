// SPDX-License-Identifier: Apache-2.0
/*
 * hwloc XML tests: every node of every fixture is loaded with libhwloc (the version the
 * plugin will link); each spec root must appear as a PCI bridge below a host bridge, local to
 * its NUMA node's package, holding exactly the spec's NICs (class 0x0207, vendor 0x15b3, with
 * the ib device and its netdevs as OS devices) and GPUs (class 0x0302, vendor 0x10de). Then
 * the fixtures' "gdr" answers — which of a pod's PFs share a PCIe root with one of its GPUs —
 * are recomputed from the XML alone and compared.
 */
#include <dirent.h>
#include <hwloc.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fabric.h"
#include "rn_test.h"

static char outroot[PATH_MAX];

static hwloc_topology_t load(const char *path)
{
	hwloc_topology_t t;

	assert_int_equal(hwloc_topology_init(&t), 0);
	if (hwloc_topology_set_xml(t, path))
		fail_msg("hwloc_topology_set_xml(%s) failed", path);
	hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_ALL);
	if (hwloc_topology_load(t))
		fail_msg("hwloc_topology_load(%s) failed", path);
	return t;
}

static hwloc_obj_t pci_obj(hwloc_topology_t t, const struct sv_pci *p)
{
	return hwloc_get_pcidev_by_busid(t, p->domain, p->bus, p->dev, p->fn);
}

/* The root port above a PCI device: the bridge whose parent is a host bridge. */
static hwloc_obj_t root_port(hwloc_obj_t o)
{
	for (o = o->parent; o; o = o->parent)
		if (o->type == HWLOC_OBJ_BRIDGE && o->parent &&
		    o->parent->type == HWLOC_OBJ_BRIDGE &&
		    o->parent->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST)
			return o;
	return NULL;
}

static int has_osdev(hwloc_obj_t o, const char *name)
{
	for (hwloc_obj_t c = o->io_first_child; c; c = c->next_sibling)
		if (c->type == HWLOC_OBJ_OS_DEVICE && !strcmp(c->name, name))
			return 1;
	return 0;
}

static void check_node(const struct sv_node *n, const char *xml)
{
	hwloc_topology_t t = load(xml);
	int r, i, k;

	for (r = 0; r < n->nroots; r++) {
		const struct sv_root *rt = &n->roots[r];
		hwloc_obj_t br = NULL, anc;
		int children = 0, want = 0;

		while ((br = hwloc_get_next_bridge(t, br)))
			if (br->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI &&
			    br->attr->pcidev.domain == rt->port.domain &&
			    br->attr->pcidev.bus == rt->port.bus &&
			    br->attr->pcidev.dev == rt->port.dev &&
			    br->attr->pcidev.func == rt->port.fn)
				break;
		if (!br)
			fail_msg("%s: root %s has no PCI bridge", xml, rt->name);
		assert_int_equal(br->parent->attr->bridge.upstream_type, HWLOC_OBJ_BRIDGE_HOST);
		anc = hwloc_get_non_io_ancestor_obj(t, br);
		assert_non_null(anc);
		assert_int_equal(anc->type, HWLOC_OBJ_PACKAGE);
		assert_int_equal((int)anc->os_index, rt->numa);
		/* below the port, or below its switch (upstream, then downstream port) */
		for (int lvl = 0; rt->has_switch && lvl < 2; lvl++) {
			const struct sv_pci *sw = lvl ? &rt->down : &rt->up;
			hwloc_obj_t c = br->io_first_child;

			assert_non_null(c);
			assert_int_equal(c->type, HWLOC_OBJ_BRIDGE);
			assert_int_equal(c->attr->pcidev.bus, sw->bus);
			assert_int_equal(c->attr->pcidev.domain, sw->domain);
			br = c;
		}
		for (hwloc_obj_t c = br->io_first_child; c; c = c->next_sibling)
			children += c->type == HWLOC_OBJ_PCI_DEVICE;
		for (i = 0; i < n->nnics; i++)
			want += n->nics[i].root == r;
		for (i = 0; i < n->ngpus; i++)
			want += n->gpus[i].root == r;
		if (children != want)
			fail_msg("%s: root %s has %d PCI devices, want %d", xml, rt->name, children,
				 want);
	}
	for (i = 0; i < n->nnics; i++) {
		const struct sv_nic *c = &n->nics[i];
		hwloc_obj_t o = pci_obj(t, &c->pci);

		if (!o)
			fail_msg("%s: no PCI object for %s", xml, c->name);
		assert_int_equal(o->attr->pcidev.class_id, 0x0207);
		assert_int_equal(o->attr->pcidev.vendor_id, 0x15b3);
		assert_int_equal(root_port(o)->attr->pcidev.bus, n->roots[c->root].port.bus);
		assert_true(has_osdev(o, c->name));
		for (k = 0; k < c->nports; k++)
			if (!c->ports[k].ib && c->ports[k].moved_to < 0)
				assert_true(has_osdev(o, c->ports[k].netdev));
	}
	for (i = 0; i < n->ngpus; i++) {
		hwloc_obj_t o = pci_obj(t, &n->gpus[i].pci);

		if (!o)
			fail_msg("%s: no PCI object for %s", xml, n->gpus[i].name);
		assert_int_equal(o->attr->pcidev.class_id, 0x0302);
		assert_int_equal(o->attr->pcidev.vendor_id, 0x10de);
	}
	hwloc_topology_destroy(t);
}

static int nic_by_name(const struct sv_node *n, const char *name)
{
	for (int i = 0; i < n->nnics; i++) {
		if (!strcmp(n->nics[i].name, name))
			return i;
		for (int k = 0; k < n->nics[i].nports; k++)
			if (!strcmp(n->nics[i].ports[k].netdev, name))
				return i;
	}
	return -1;
}

/* gdr <node> <pod> <names>: recomputed from the XML (root ports of the pod's GPUs and NICs). */
static void check_gdr(const struct sv_fabric *f, const char *out, char *line, const char *where)
{
	char *save = NULL, *kw = strtok_r(line, " \n", &save);
	char *node = strtok_r(NULL, " \n", &save), *podname = strtok_r(NULL, " \n", &save);
	char *list = strtok_r(NULL, " \n", &save), xml[PATH_MAX * 2];
	const struct sv_node *n = NULL;
	const struct sv_pod *p = NULL;
	int want[256] = { 0 }, got[256] = { 0 }, i, j;
	hwloc_topology_t t;

	if (!kw || strcmp(kw, "gdr"))
		return;
	assert_non_null(list);
	for (i = 0; i < f->nnodes; i++)
		if (!strcmp(f->nodes[i].name, node))
			n = &f->nodes[i];
	assert_non_null(n);
	assert_true(n->nnics < 256);
	for (i = 0; i < n->npods; i++)
		if (!strcmp(n->pods[i].name, podname))
			p = &n->pods[i];
	if (!p)
		fail_msg("%s: no pod %s", where, podname);
	for (char *s = NULL, *it = strtok_r(list, ",", &s); it; it = strtok_r(NULL, ",", &s)) {
		int c = nic_by_name(n, it);

		if (c < 0 && strcmp(it, "-"))
			fail_msg("%s: unknown device %s", where, it);
		if (c >= 0)
			want[c] = 1;
	}
	sv_pathf(xml, sizeof(xml), "%s/%s/topo.xml", out, n->name);
	t = load(xml);
	for (i = 0; i < p->nnics; i++) {
		hwloc_obj_t nr = root_port(pci_obj(t, &n->nics[p->nics[i]].pci));

		for (j = 0; j < p->ngpus; j++)
			if (root_port(pci_obj(t, &n->gpus[p->gpus[j]].pci)) == nr)
				got[p->nics[i]] = 1;
	}
	hwloc_topology_destroy(t);
	for (i = 0; i < n->nnics; i++)
		if (want[i] != got[i])
			fail_msg("%s: %s is %s next to a GPU of pod %s in the XML", where,
				 n->nics[i].name, got[i] ? "" : "not", podname);
}

static void test_fixtures(void **state)
{
	char dir[PATH_MAX];
	struct dirent *e;
	DIR *d;
	int nodes = 0;

	(void)state;
	sv_pathf(dir, sizeof(dir), "%s/test/fixtures", rn_test_source_dir());
	d = opendir(dir);
	assert_non_null(d);
	while ((e = readdir(d))) {
		char spec[PATH_MAX * 2], out[PATH_MAX * 2], xml[PATH_MAX * 3], line[4096];
		char where[600];
		size_t l = strlen(e->d_name);
		struct sv_fabric *f;
		FILE *fp;
		int ln = 0;

		if (l < 6 || strcmp(e->d_name + l - 5, ".spec"))
			continue;
		sv_pathf(spec, sizeof(spec), "%s/%s", dir, e->d_name);
		sv_pathf(out, sizeof(out), "%s/%.*s", outroot, (int)(l - 5), e->d_name);
		assert_int_equal(sv_fabric_parse_file(spec, stderr, &f), 0);
		assert_int_equal(sv_build(f, out), 0);
		for (int i = 0; i < f->nnodes; i++, nodes++) {
			sv_pathf(xml, sizeof(xml), "%s/%s/topo.xml", out, f->nodes[i].name);
			check_node(&f->nodes[i], xml);
		}
		sv_pathf(spec, sizeof(spec), "%s/%.*s.expect", dir, (int)(l - 5), e->d_name);
		fp = fopen(spec, "r");
		while (fp && fgets(line, sizeof(line), fp)) {
			sv_pathf(where, sizeof(where), "%s:%d", spec, ++ln);
			check_gdr(f, out, line, where);
		}
		if (fp)
			fclose(fp);
		sv_fabric_destroy(f);
	}
	closedir(d);
	assert_true(nodes >= 12);
}

static int setup(void **state)
{
	(void)state;
	sv_pathf(outroot, sizeof(outroot), "%s/sv-fabric-topo.XXXXXX", rn_test_tmp_dir());
	return mkdtemp(outroot) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	sv_pathf(cmd, sizeof(cmd), "rm -rf '%s'", outroot);
	return system(cmd) ? -1 : 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixtures),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
