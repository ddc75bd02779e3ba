#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks docker/k8s/*.yaml against what railnet and its docs say.

  check_manifests.py [--selftest] [REPO]

Every YAML document parses. Then, over the parsed manifests (comments are free to mention
anything; values are checked):
  env        every NCCL_* / RAILNET_* variable a container sets or mpirun passes with -x is
             documented in docs/env.md or is one of the few NCCL core variables in ALLOW;
             the launcher passes every such variable it sets to the ranks with -x;
  forbidden  NCCL_IB_HCA and NCCL_IB_GID_INDEX appear in no value at all;
  privilege  hostNetwork, hostPID, hostIPC and privileged only in mpijob-hostnetwork.yaml
             (and privileged not even there); no capability added but IPC_LOCK;
  networks   every network a pod attaches is a NetworkAttachmentDefinition of its namespace
             whose config is valid JSON (a plugin or a chain) with whereabouts IPAM, or NVIDIA
             IPAM from an IPPool of the set (subnet, perNodeBlockSize, gateway checked; a
             node's block holds the addresses one pod takes from it); an ipvlan NAD's master is a
             rail PF (rdmaN) that a device-plugin resource the pod requests selects; a NAD's
             resourceName is a defined resource the pod requests once per attachment; every
             device resource a pod requests is defined by a device-plugin config; full-node
             jobs attach 16 rails (the InfiniBand job none);
  drop-in    each MPIJob worker has the railnet-install init container (railnet image,
             emptyDir at its target) followed by a railnet-doctor init container, and
             NCCL_NET_PLUGIN is the plugin's path in that emptyDir;
  mpijob     an MPIJob starts its launcher only when the workers are ready
             (launcherCreationPolicy WaitForWorkersReady), sets no OMPI_MCA_plm_rsh_args in
             the launcher's env (the operator appends its own) and passes an sshd port other
             than 22 with mpirun --mca plm_rsh_args; its workers tolerate the nvidia.com/gpu
             taint and keep off each other's nodes (required podAntiAffinity on the hostname);
  preflight  a launcher that runs railnet-preflight (a command list or an "sh -c" script)
             starts it with mpirun -np = the worker replicas and --npernode 1 (one rank per
             worker pod), from the workers' railnet emptyDir (it loads the plugin next to
             itself), and a --plugin, if given, names the plugin there;
             the set has such an MPIJob (mpijob-preflight.yaml);
  namespace  every namespace that runs a pod is a Namespace of the set with a Pod Security
             enforce label that admits its pods: privileged when one uses hostNetwork or adds
             IPC_LOCK, else baseline or privileged;
  plugins    every device plugin configuration (ConfigMap, or NicClusterPolicy member) is read:
             ConfigMaps under the name and namespace their plugin reads, one per plugin;
             PFs are selected by pciAddresses, never by pfNames without a VF range;
  dra        a ResourceClaimTemplate ties each GPU request to a NIC request with a
             matchAttribute on resource.kubernetes.io/pcieRoot; pods use templates of their
             namespace and containers only the claims their pod declares;
  kubelet    the KubeletConfiguration has topologyManagerPolicy restricted, scope pod;
  doctor     the doctor Job runs railnet-doctor --json; doctor-job.py's Job for each MPIJob
             passes every check above as that MPIJob's pods do, asks for the worker's device
             resources, networks, claims, tolerations and host network, and doctor-job.yaml is
             what it prints for mpijob-ipvlan.yaml.
--selftest plants one mistake of each kind in a copy of the manifests and checks that each
is reported. Exit: 0 ok, 1 problems, 77 PyYAML missing (Debian: python3-yaml).
"""

import copy
import glob
import json
import os
import re
import shlex
import sys

try:
    import yaml
except ImportError:
    print("SKIP: PyYAML is not installed for %s (Debian: apt-get install python3-yaml)"
          % sys.executable)
    sys.exit(77)

# NCCL core variables the manifests may set that docs/env.md need not list in a table.
ALLOW = {"NCCL_NET_PLUGIN", "NCCL_NET", "NCCL_DEBUG", "NCCL_DEBUG_SUBSYS",
         "NCCL_DEBUG_FILE", "NCCL_SOCKET_IFNAME"}
FORBIDDEN = ("NCCL_IB_HCA", "NCCL_IB_GID_INDEX")
HOSTNET_FILE = "mpijob-hostnetwork.yaml"
IB_FILE = "mpijob-infiniband.yaml"  # InfiniBand: GID 0 in every namespace, no per-pod rail NADs
DRA_FILE = "mpijob-dra.yaml"  # DRA: the claim's NIC driver moves the PFs in, no NADs
PCIE_ROOT = "resource.kubernetes.io/pcieRoot"
PLUGIN_FILE = "libnccl-net-railnet.so"
RAILNET_IMAGE_RE = re.compile(r"/railnet/railnet:[0-9][^:]*$")
FULL_NODE_RAILS = 16
NOT_DEVICES = {"cpu", "memory", "ephemeral-storage", "nvidia.com/gpu"}
NAME_RE = re.compile(r"^(NCCL|RAILNET)_[A-Z0-9_]+$")


def load_doctor_job():
    """docker/k8s/doctor-job.py as a module (its name has a dash)."""
    import importlib.util
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docker",
                        "k8s", "doctor-job.py")
    spec = importlib.util.spec_from_file_location("doctor_job", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


DOCTOR_JOB = load_doctor_job()
DOCTOR_JOB_FILE = "doctor-job.yaml"
DOCTOR_JOB_SOURCE = "mpijob-ipvlan.yaml"


def first_difference(a, b, path=""):
    """The path of the first place where two parsed documents differ, or None."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in list(a) + [k for k in b if k not in a]:
            if k not in a or k not in b:
                return "%s.%s" % (path, k)
            d = first_difference(a[k], b[k], "%s.%s" % (path, k))
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return "%s (%d against %d items)" % (path, len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, "%s[%d]" % (path, i))
            if d:
                return d
        return None
    return None if a == b else path or "."


def doctor_jobs(files, bad):
    """[(MPIJob file, [its doctor Job])] from doctor-job.py, each compared with its worker;
    and doctor-job.yaml against the one for DOCTOR_JOB_SOURCE."""
    out = []
    for fname, docs in files:
        if not any(d.get("kind") == "MPIJob" for d in docs):
            continue
        try:
            job, template = DOCTOR_JOB.find_worker(docs)
            node = "gpu-node-01"
            gen = DOCTOR_JOB.make_job(job, template, node, "railnet-doctor-" + node,
                                      DOCTOR_JOB.railnet_image(template.get("spec") or {}))
        except DOCTOR_JOB.Unreadable as e:
            bad(fname, "doctor-job.py cannot make its doctor Job: %s" % e)
            continue
        wspec, gspec = template.get("spec") or {}, gen["spec"]["template"]["spec"]
        wmeta = template.get("metadata") or {}
        gmeta = gen["spec"]["template"].get("metadata") or {}
        where = "doctor-job.py's Job for %s" % fname
        if attached_networks(wmeta) != attached_networks(gmeta):
            bad(fname, "%s attaches %s, the worker %s" % (where, attached_networks(gmeta),
                                                          attached_networks(wmeta)))
        glim = limits(gspec["containers"][0])
        for c in containers(wspec):
            for r, v in limits(c).items():
                if r not in ("cpu", "memory", "ephemeral-storage") and \
                        int(glim.get(r, 0)) < int(v):
                    bad(fname, "%s asks for %s of %s, the worker %s" % (where, glim.get(r, 0),
                                                                      r, v))
        for k in ("tolerations", "hostNetwork", "resourceClaims"):
            if wspec.get(k) != gspec.get(k):
                bad(fname, "%s has %s %r, the worker %r" % (where, k, gspec.get(k),
                                                           wspec.get(k)))
        out.append((fname, [gen]))
        if fname == DOCTOR_JOB_SOURCE:
            static = [d for f, ds in files if f == DOCTOR_JOB_FILE for d in ds
                      if d.get("kind") == "Job"]
            if len(static) != 1:
                bad(DOCTOR_JOB_FILE, "holds %d Jobs, want the one doctor-job.py prints for %s"
                    % (len(static), DOCTOR_JOB_SOURCE))
            else:
                diff = first_difference(static[0], gen)
                if diff:
                    bad(DOCTOR_JOB_FILE, "differs from `doctor-job.py %s %s` at %s: "
                        "regenerate it" % (DOCTOR_JOB_SOURCE, node, diff))
    return out


def documented_vars(repo):
    text = open(os.path.join(repo, "docs", "env.md"), encoding="utf-8").read()
    return set(re.findall(r"`((?:NCCL|RAILNET)_[A-Z0-9_]+)`", text))


def load(repo):
    """[(file name, [docs])]; raises on a parse error."""
    out = []
    for path in sorted(glob.glob(os.path.join(repo, "docker", "k8s", "*.yaml"))):
        with open(path, encoding="utf-8") as f:
            docs = [d for d in yaml.safe_load_all(f) if d is not None]
        out.append((os.path.basename(path), docs))
    return out


def strings(node):
    """Every string value (and key) in a parsed document."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield str(k)
            yield from strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from strings(v)
    elif isinstance(node, str):
        yield node


def pod_specs(doc):
    """[(label, pod metadata, pod spec, role)] for the pod templates in a document."""
    kind = doc.get("kind")
    name = doc.get("metadata", {}).get("name", "?")
    out = []
    if kind == "MPIJob":
        for role, rs in doc.get("spec", {}).get("mpiReplicaSpecs", {}).items():
            t = rs.get("template", {})
            out.append(("%s/%s" % (name, role), t.get("metadata", {}) or {}, t.get("spec", {}),
                        role))
    elif kind == "Job":
        t = doc.get("spec", {}).get("template", {})
        out.append((name, t.get("metadata", {}) or {}, t.get("spec", {}), "Job"))
    elif kind == "Pod":
        out.append((name, doc.get("metadata", {}), doc.get("spec", {}), "Pod"))
    elif kind in ("DaemonSet", "Deployment", "StatefulSet"):
        t = doc.get("spec", {}).get("template", {})
        out.append((name, t.get("metadata", {}) or {}, t.get("spec", {}), kind))
    return out


def containers(spec):
    return list(spec.get("initContainers", []) or []) + list(spec.get("containers", []) or [])


def limits(c):
    r = c.get("resources", {}) or {}
    out = dict(r.get("requests", {}) or {})
    out.update(r.get("limits", {}) or {})
    return out


def attached_networks(meta):
    ann = (meta.get("annotations") or {}).get("k8s.v1.cni.cncf.io/networks")
    if not ann:
        return []
    ann = ann.strip()
    if ann.startswith("["):
        return [n["name"] for n in json.loads(ann)]
    return [re.sub(r"@.*$", "", x.strip()).split("/")[-1] for x in ann.split(",") if x.strip()]


# Where each device plugin reads its configuration when deployed on its own (the NVIDIA
# Network Operator renders its own from a NicClusterPolicy instead).
PLUGIN_CONFIGMAPS = {"sriov": ("kube-system", "sriovdp-config"),
                     "rdma-shared": ("kube-system", "rdma-devices")}


def plugin_configs(files):
    """[(fname, plugin, where, config dict)]: every device plugin configuration of the set."""
    out = []
    for fname, docs in files:
        for d in docs:
            md = d.get("metadata", {}) or {}
            if d.get("kind") == "ConfigMap" and "config.json" in (d.get("data") or {}):
                cfg = json.loads(d["data"]["config.json"])
                plugin = "rdma-shared" if "configList" in cfg else "sriov"
                out.append((fname, plugin, "ConfigMap %s/%s" % (md.get("namespace", "default"),
                                                               md.get("name")), cfg,
                            (md.get("namespace", "default"), md.get("name"))))
            if d.get("kind") == "NicClusterPolicy":
                spec = d.get("spec", {}) or {}
                for member, plugin in (("sriovDevicePlugin", "sriov"),
                                       ("rdmaSharedDevicePlugin", "rdma-shared")):
                    if member in spec and "config" in spec[member]:
                        out.append((fname, plugin, "NicClusterPolicy %s.%s" % (
                            md.get("name"), member), json.loads(spec[member]["config"]), None))
    return out


def device_plugin_resources(files, source=None):
    """{resource name: set of rail PFs it selects} from every device plugin configuration
    (or only those of one source, "ConfigMap" or "NicClusterPolicy"): pfNames (VFs of those
    PFs), pciAddresses (PFs, in rail order: rdma0 first), ifNames (the RDMA shared device
    plugin)."""
    res = {}
    for _, plugin, where, cfg, _ in plugin_configs(files):
        if source and not where.startswith(source):
            continue
        if plugin == "rdma-shared":
            for r in cfg.get("configList", []):
                full = "rdma/%s" % r["resourceName"]
                res.setdefault(full, set()).update(r.get("selectors", {}).get("ifNames", []))
            continue
        for r in cfg.get("resourceList", []):
            full = "%s/%s" % (r.get("resourcePrefix", "intel.com"), r["resourceName"])
            pfs = set()
            sel = r.get("selectors", {})
            for p in sel.get("pfNames", []):
                pfs.add(p.split("#")[0])
            for i, _ in enumerate(sel.get("pciAddresses", [])):
                pfs.add("rdma%d" % i)
            res.setdefault(full, set()).update(pfs)
    return res


def check_plugin_configs(files, bad):
    """One configuration per plugin and reader, under the name that reader uses; PFs selected
    by pciAddresses (a PF has no PF name, so pfNames without a VF range matches none)."""
    seen = {}
    for fname, plugin, where, cfg, key in plugin_configs(files):
        if key is not None:
            if key != PLUGIN_CONFIGMAPS[plugin]:
                bad(fname, "%s: the %s device plugin reads %s/%s; this one is read by nothing"
                    % (where, plugin, *PLUGIN_CONFIGMAPS[plugin]))
            if key in seen:
                bad(fname, "%s is also defined in %s: applying both overwrites one"
                    % (where, seen[key]))
            seen[key] = fname
        for r in cfg.get("resourceList", []) if plugin == "sriov" else []:
            for p in r.get("selectors", {}).get("pfNames", []):
                if "#" not in p:
                    bad(fname, "%s: resource %s selects %r by pfNames, which matches VFs of "
                        "that PF only (a PF has no PF name): select PFs with pciAddresses"
                        % (where, r.get("resourceName"), p))


def check(files, documented):
    problems = []

    def bad(fname, msg):
        problems.append("%s: %s" % (fname, msg))

    known = documented | ALLOW
    nads = {}
    nv_ipam_uses = []
    pools = {}
    for fname, docs in files:
        for d in docs:
            if d.get("kind") == "IPPool":
                pools[d.get("metadata", {}).get("name")] = (fname, d)
                check_ippool(fname, d, bad)
    for fname, docs in files:
        for d in docs:
            if d.get("kind") == "NetworkAttachmentDefinition":
                md = d.get("metadata", {})
                key = (md.get("namespace", "default"), md.get("name"))
                try:
                    cfg = json.loads(d.get("spec", {}).get("config", ""))
                except ValueError as e:
                    bad(fname, "NAD %s: config is not JSON: %s" % (key[1], e))
                    continue
                if cfg.get("name") != key[1]:
                    bad(fname, "NAD %s: config name is %r" % (key[1], cfg.get("name")))
                if "plugins" in cfg:  # a chain (conflist): the first plugin makes the interface
                    chain = cfg.get("plugins") or [{}]
                    cfg = dict(chain[0], name=cfg.get("name"), chain=[c.get("type")
                                                                       for c in chain])
                nads[key] = (fname, md.get("annotations") or {}, cfg)
                ipam = cfg.get("ipam", {})
                if ipam.get("type") == "nv-ipam":
                    nv_ipam_uses.append((fname, key[1], ipam.get("poolName")))
                elif ipam.get("type") != "whereabouts" or "range" not in ipam:
                    bad(fname, "NAD %s: IPAM is neither a whereabouts pool with a range nor an "
                        "NVIDIA IPAM pool" % key[1])
                if cfg.get("type") in ("ipvlan", "macvlan") and \
                        not re.match(r"^rdma\d+$", cfg.get("master", "")):
                    bad(fname, "NAD %s: %s master %r is not a rail PF rdmaN"
                        % (key[1], cfg.get("type"), cfg.get("master")))
    for fname, nad, pool in nv_ipam_uses:
        if pool not in pools:
            bad(fname, "NAD %s: NVIDIA IPAM pool %r is no IPPool of the set" % (nad, pool))
    dp = device_plugin_resources(files)
    dp_sources = {src: device_plugin_resources(files, src)
                  for src in ("ConfigMap", "NicClusterPolicy")}
    check_plugin_configs(files, bad)
    for (ns, name), (fname, ann, cfg) in nads.items():
        rn = ann.get("k8s.v1.cni.cncf.io/resourceName")
        if rn and rn not in dp:
            bad(fname, "NAD %s: resourceName %s is defined by no device plugin config"
                % (name, rn))

    plugin_path = None
    ns_need, ns_where, namespaces = {}, {}, {}
    claim_templates = {}
    for fname, docs in files:
        for d in docs:
            if d.get("kind") == "ResourceClaimTemplate":
                md = d.get("metadata", {}) or {}
                claim_templates[(md.get("namespace", "default"), md.get("name"))] = d
                check_claim_template(fname, d, bad)
    kubelet_seen = False
    doctor_job_seen = False
    preflight_seen = False
    # the doctor Jobs doctor-job.py makes are checked as that MPIJob's pods are
    files = files + doctor_jobs(files, bad)
    for fname, docs in files:
        for d in docs:
            for s in strings(d):
                for f in FORBIDDEN:
                    if re.search(r"(^|[^A-Z0-9_])%s([^A-Z0-9_]|$)" % f, s):
                        bad(fname, "%s appears in a value (%r): railnet picks rails and GIDs "
                            "itself; a fixed value is wrong for some pods" % (f, s[:60]))
            if d.get("kind") == "KubeletConfiguration":
                kubelet_seen = True
                if d.get("topologyManagerPolicy") != "restricted":
                    bad(fname, "topologyManagerPolicy is %r, want restricted"
                        % d.get("topologyManagerPolicy"))
                if d.get("topologyManagerScope") != "pod":
                    bad(fname, "topologyManagerScope is %r, want pod"
                        % d.get("topologyManagerScope"))
            ns = d.get("metadata", {}).get("namespace", "default")
            for label, meta, spec, role in pod_specs(d):
                where = "%s %s" % (d.get("kind"), label)
                host = [k for k in ("hostNetwork", "hostPID", "hostIPC") if spec.get(k)]
                if host and fname != HOSTNET_FILE:
                    bad(fname, "%s uses %s: only %s may" % (where, ", ".join(host),
                                                            HOSTNET_FILE))
                for c in containers(spec):
                    sc = c.get("securityContext", {}) or {}
                    if sc.get("privileged"):
                        bad(fname, "%s container %s is privileged: railnet never needs it"
                            % (where, c.get("name")))
                    added = set((sc.get("capabilities", {}) or {}).get("add", []) or [])
                    if added - {"IPC_LOCK"}:
                        bad(fname, "%s container %s adds capabilities %s: only IPC_LOCK"
                            % (where, c.get("name"), sorted(added - {"IPC_LOCK"})))
                    names = [e.get("name", "") for e in c.get("env", []) or []]
                    cmd = [str(x) for x in (c.get("command", []) or []) +
                           (c.get("args", []) or [])]
                    passed = [cmd[i + 1] for i in range(len(cmd) - 1) if cmd[i] == "-x"]
                    passed = [p.split("=")[0] for p in passed]
                    for n in names + passed:
                        if NAME_RE.match(n) and n not in known:
                            bad(fname, "%s container %s: %s is neither documented in "
                                "docs/env.md nor an NCCL core variable" % (where,
                                                                          c.get("name"), n))
                    if "mpirun" in cmd[:1]:
                        for n in names:
                            if NAME_RE.match(n) and n not in passed:
                                bad(fname, "%s: %s is set on the launcher but not passed "
                                    "to the ranks with mpirun -x" % (where, n))
                    for e in c.get("env", []) or []:
                        if e.get("name") == "NCCL_NET_PLUGIN":
                            plugin_path = e.get("value")
                            if not str(e.get("value", "")).endswith("/" + PLUGIN_FILE):
                                bad(fname, "%s: NCCL_NET_PLUGIN=%r does not name %s"
                                    % (where, e.get("value"), PLUGIN_FILE))
                    if "railnet-doctor" in " ".join(cmd) and role == "Job":
                        doctor_job_seen = True
                        if "--json" not in cmd:
                            bad(fname, "%s: the doctor Job should print --json" % where)

                # Networks and device resources.
                nets = attached_networks(meta)
                want = {}
                for c in containers(spec):
                    for r, v in limits(c).items():
                        if r in NOT_DEVICES:
                            continue
                        want[r] = max(want.get(r, 0), int(v))
                for r in want:
                    if r not in dp:
                        bad(fname, "%s requests %s, which no device plugin config defines"
                            % (where, r))
                        continue
                    # device-plugins.yaml and nicclusterpolicy.yaml are alternatives: each
                    # must produce every resource on its own
                    for src, res in dp_sources.items():
                        if res and r not in res:
                            bad(fname, "%s requests %s, which the %s configuration does not "
                                "define (it is an alternative to the other)" % (where, r, src))
                used = {}
                for n in nets:
                    if (ns, n) not in nads:
                        bad(fname, "%s attaches network %s, which is no NAD of namespace %s"
                            % (where, n, ns))
                        continue
                    _, ann, cfg = nads[(ns, n)]
                    rn = ann.get("k8s.v1.cni.cncf.io/resourceName")
                    if rn:
                        used[rn] = used.get(rn, 0) + 1
                    if cfg.get("type") in ("ipvlan", "macvlan"):
                        master = cfg.get("master")
                        if not any(master in dp.get(r, ()) for r in want):
                            bad(fname, "%s attaches %s (%s on %s) but requests no device "
                                "resource that selects %s" % (where, n, cfg.get("type"),
                                                              master, master))
                per_pool = {}
                for n in nets:
                    ipam = nads.get((ns, n), (None, None, {}))[2].get("ipam", {})
                    if ipam.get("type") == "nv-ipam":
                        per_pool[ipam.get("poolName")] = per_pool.get(ipam.get("poolName"), 0) + 1
                for pool, k in per_pool.items():
                    size = ((pools.get(pool, (None, {}))[1].get("spec") or {})
                            .get("perNodeBlockSize", 0))
                    if isinstance(size, int) and size < k:
                        bad(fname, "%s takes %d addresses from NVIDIA IPAM pool %s, whose "
                            "perNodeBlockSize is %d: not one such pod fits on a node"
                            % (where, k, pool, size))
                for rn, k in used.items():
                    if want.get(rn, 0) < k:
                        bad(fname, "%s attaches %d network(s) of resource %s but requests %d"
                            % (where, k, rn, want.get(rn, 0)))
                if role == "Worker" and fname == IB_FILE and nets:
                    bad(fname, "%s attaches %d networks: InfiniBand needs none (GID 0 is in "
                        "every namespace)" % (where, len(nets)))
                if role == "Worker" and fname not in (HOSTNET_FILE, IB_FILE, DRA_FILE) and \
                        len(nets) != FULL_NODE_RAILS:
                    bad(fname, "%s attaches %d rails, want %d (full node)"
                        % (where, len(nets), FULL_NODE_RAILS))

                # DRA claims: each one a template of the namespace, used by the containers
                check_claims(fname, where, ns, spec, claim_templates, bad)
                # The drop-in.
                if role == "Worker":
                    check_dropin(fname, where, spec, bad)
                    check_worker_placement(fname, where, spec, bad)
                # What Pod Security must admit in this namespace.
                needs = pod_security_need(spec)
                ns_need[ns] = max(ns_need.get(ns, 0), needs)
                ns_where.setdefault(ns, (fname, where))
            if d.get("kind") == "MPIJob":
                check_mpijob(fname, d, bad)
                preflight_seen |= check_preflight(fname, d, bad)
            if d.get("kind") == "Namespace":
                md = d.get("metadata", {}) or {}
                namespaces[md.get("name")] = (md.get("labels") or {}).get(
                    "pod-security.kubernetes.io/enforce")
    for ns, need in sorted(ns_need.items()):
        fname, where = ns_where[ns]
        if ns not in namespaces:
            bad(fname, "%s runs in namespace %s, which no Namespace of the set defines (with "
                "its Pod Security labels)" % (where, ns))
            continue
        level = namespaces[ns]
        if PSA_LEVELS.get(level, -1) < need:
            bad(fname, "namespace %s enforces Pod Security %r, which rejects its pods (they "
                "need %s: IPC_LOCK or hostNetwork)" % (ns, level,
                                                        [k for k, v in PSA_LEVELS.items()
                                                         if v == need][0]))
    if not kubelet_seen:
        problems.append("docker/k8s: no KubeletConfiguration (the Topology Manager settings)")
    if not doctor_job_seen:
        problems.append("docker/k8s: no Job running railnet-doctor")
    if not preflight_seen:
        problems.append("docker/k8s: no MPIJob whose launcher runs railnet-preflight")
    if not plugin_path:
        problems.append("docker/k8s: no container sets NCCL_NET_PLUGIN")
    return problems


def check_ippool(fname, d, bad):
    """NVIDIA IPAM's IPPool (nv-ipam.nvidia.com/v1alpha1): the fields it needs, checked
    against the CRD's meaning (no packaged schema exists)."""
    import ipaddress
    name = d.get("metadata", {}).get("name")
    spec = d.get("spec") or {}
    if d.get("apiVersion") != "nv-ipam.nvidia.com/v1alpha1":
        bad(fname, "IPPool %s: apiVersion %r, want nv-ipam.nvidia.com/v1alpha1"
            % (name, d.get("apiVersion")))
    try:
        net = ipaddress.ip_network(spec.get("subnet", ""), strict=True)
    except ValueError as e:
        bad(fname, "IPPool %s: subnet %r is not a network: %s" % (name, spec.get("subnet"), e))
        return
    size = spec.get("perNodeBlockSize")
    if not isinstance(size, int) or size < 2 or size > net.num_addresses:
        bad(fname, "IPPool %s: perNodeBlockSize %r must be an integer from 2 to the subnet's "
            "%d addresses" % (name, size, net.num_addresses))
    gw = spec.get("gateway")
    if gw is not None and ipaddress.ip_address(gw) not in net:
        bad(fname, "IPPool %s: gateway %s is outside %s" % (name, gw, net))
    extra = set(spec) - {"subnet", "perNodeBlockSize", "gateway", "nodeSelector", "exclusions",
                         "defaultGateway", "staticAllocations"}
    if extra:
        bad(fname, "IPPool %s: unknown spec fields %s" % (name, sorted(extra)))


def check_claim_template(fname, d, bad):
    """A DRA claim that aligns GPUs and NICs: every request that asks for GPUs is in a
    matchAttribute constraint on resource.kubernetes.io/pcieRoot with a request for NICs."""
    name = d.get("metadata", {}).get("name")
    devs = ((d.get("spec") or {}).get("spec") or {}).get("devices") or {}
    reqs = {r.get("name"): (r.get("exactly") or {}).get("deviceClassName", "")
            for r in devs.get("requests") or []}
    gpus = {n for n, c in reqs.items() if c.startswith("gpu.")}
    paired = set()
    for c in devs.get("constraints") or []:
        names = set(c.get("requests") or [])
        if c.get("matchAttribute") == PCIE_ROOT and names & gpus and names - gpus:
            paired |= names & gpus
        for n in names - set(reqs):
            bad(fname, "ResourceClaimTemplate %s: constraint names request %s, which it does "
                "not make" % (name, n))
    for n in sorted(gpus - paired):
        bad(fname, "ResourceClaimTemplate %s: GPU request %s shares no %s constraint with a NIC "
            "request: its GPUs and NICs may sit on different roots" % (name, n, PCIE_ROOT))


def check_claims(fname, where, ns, spec, templates, bad):
    claims = {c.get("name"): c for c in spec.get("resourceClaims") or []}
    for n, c in claims.items():
        t = c.get("resourceClaimTemplateName")
        if t and (ns, t) not in templates:
            bad(fname, "%s: claim %s uses ResourceClaimTemplate %s, which namespace %s does not "
                "have" % (where, n, t, ns))
    for c in containers(spec):
        for r in (c.get("resources") or {}).get("claims") or []:
            if r.get("name") not in claims:
                bad(fname, "%s container %s uses claim %s, which the pod does not declare"
                    % (where, c.get("name"), r.get("name")))


PSA_LEVELS = {"restricted": 0, "baseline": 1, "privileged": 2}


def pod_security_need(spec):
    """The least Pod Security level that admits this pod spec (as PSA_LEVELS' values)."""
    if spec.get("hostNetwork") or spec.get("hostPID") or spec.get("hostIPC"):
        return PSA_LEVELS["privileged"]
    for c in containers(spec):
        sc = c.get("securityContext", {}) or {}
        if sc.get("privileged") or set((sc.get("capabilities", {}) or {}).get("add", []) or []) \
                - BASELINE_CAPS:
            return PSA_LEVELS["privileged"]
    return PSA_LEVELS["baseline"]


# Capabilities Pod Security's Baseline lets a container add.
BASELINE_CAPS = {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
                 "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}


def check_worker_placement(fname, where, spec, bad):
    tol = spec.get("tolerations", []) or []
    if not any(t.get("key") == "nvidia.com/gpu" and t.get("operator") == "Exists"
               for t in tol):
        bad(fname, "%s: no toleration of the nvidia.com/gpu taint (GPU nodes commonly carry "
            "it)" % where)
    req = (((spec.get("affinity") or {}).get("podAntiAffinity") or {})
           .get("requiredDuringSchedulingIgnoredDuringExecution") or [])
    if not any(r.get("topologyKey") == "kubernetes.io/hostname" for r in req):
        bad(fname, "%s: no required podAntiAffinity on kubernetes.io/hostname (two workers "
            "on one node would share its rails)" % where)


def check_mpijob(fname, d, bad):
    spec = d.get("spec", {}) or {}
    name = d.get("metadata", {}).get("name")
    if spec.get("launcherCreationPolicy") != "WaitForWorkersReady":
        bad(fname, "MPIJob %s: launcherCreationPolicy is %r, want WaitForWorkersReady (the "
            "launcher runs mpirun once, maybe before the workers are up)"
            % (name, spec.get("launcherCreationPolicy")))
    reps = spec.get("mpiReplicaSpecs", {}) or {}
    lspec = ((reps.get("Launcher") or {}).get("template") or {}).get("spec") or {}
    wspec = ((reps.get("Worker") or {}).get("template") or {}).get("spec") or {}
    port = None
    for c in containers(wspec):
        cmd = [str(x) for x in (c.get("command", []) or []) + (c.get("args", []) or [])]
        if cmd and cmd[0].endswith("sshd") and "-p" in cmd[:-1]:
            port = cmd[cmd.index("-p") + 1]
    for c in containers(lspec):
        if any(e.get("name") == "OMPI_MCA_plm_rsh_args" for e in c.get("env", []) or []):
            bad(fname, "MPIJob %s: OMPI_MCA_plm_rsh_args in the launcher's env is lost (the "
                "MPI Operator appends its own); pass --mca plm_rsh_args to mpirun" % name)
        cmd = [str(x) for x in (c.get("command", []) or []) + (c.get("args", []) or [])]
        if port and port != "22" and "mpirun" in cmd[:1]:
            ok = any(cmd[i] == "--mca" and cmd[i + 1] == "plm_rsh_args" and
                     re.search(r"-p\s*%s\b" % port, cmd[i + 2])
                     for i in range(len(cmd) - 2))
            if not ok:
                bad(fname, "MPIJob %s: the workers' sshd listens on %s but mpirun has no "
                    "--mca plm_rsh_args \"-p %s\"" % (name, port, port))


def preflight_command(cmd):
    """(mpirun's options, railnet-preflight and its options) of the mpirun that runs
    railnet-preflight in a launcher command (a list, or a "sh -c" script), or None."""
    if len(cmd) >= 3 and cmd[0].endswith("sh") and cmd[1] == "-c":
        try:
            cmd = shlex.split(cmd[2])
        except ValueError:
            return None
    at = [i for i, x in enumerate(cmd) if x.endswith("/railnet-preflight") or
          x == "railnet-preflight"]
    runs = [i for i, x in enumerate(cmd) if x == "mpirun" or x.endswith("/mpirun")]
    if not at or not [i for i in runs if i < at[0]]:
        return None
    start = max(i for i in runs if i < at[0])
    end = next((i for i in range(at[0], len(cmd)) if cmd[i] in ("&&", "||", ";", "|")),
               len(cmd))
    return cmd[start + 1:at[0]], cmd[at[0]:end]


def option(args, *names):
    """The value of the first of names in an argument list (--opt V or --opt=V), or None."""
    for i, a in enumerate(args):
        for n in names:
            if a == n and i + 1 < len(args):
                return args[i + 1]
            if a.startswith(n + "="):
                return a[len(n) + 1:]
    return None


def check_preflight(fname, d, bad):
    """A launcher that runs railnet-preflight runs one rank in every worker pod (-np = the
    worker replicas, one per node) from the workers' copy, and a --plugin, if it names one,
    is the workers' copy too (without it, the preflight loads the plugin next to itself).
    True when it runs railnet-preflight."""
    spec = d.get("spec", {}) or {}
    name = d.get("metadata", {}).get("name")
    reps = spec.get("mpiReplicaSpecs", {}) or {}
    lspec = ((reps.get("Launcher") or {}).get("template") or {}).get("spec") or {}
    worker = reps.get("Worker") or {}
    wspec = (worker.get("template") or {}).get("spec") or {}
    inits = wspec.get("initContainers", []) or []
    inst = [c for c in inits if c.get("name") == "railnet-install"]
    plugin_dir = None
    if inst:
        target = (inst[0].get("args") or ["/opt/railnet"])[-1]
        vol = {m["mountPath"]: m["name"] for m in inst[0].get("volumeMounts", []) or []}.get(
            target)
        for c in wspec.get("containers", []) or []:
            for m in c.get("volumeMounts", []) or []:
                if vol and m.get("name") == vol:
                    plugin_dir = m.get("mountPath")
    seen = False
    for c in containers(lspec):
        cmd = [str(x) for x in (c.get("command", []) or []) + (c.get("args", []) or [])]
        got = preflight_command(cmd)
        if not got:
            continue
        seen = True
        mpi, pf = got
        where = "MPIJob %s: railnet-preflight" % name
        np = option(mpi, "-np", "--np", "-n", "-c")
        if str(np) != str(worker.get("replicas", 1)):
            bad(fname, "%s runs with -np %s but the job has %s workers: one rank per worker "
                "pod tests every pair" % (where, np, worker.get("replicas", 1)))
        ppr = option(mpi, "--npernode", "-npernode", "-N")
        mapby = option(mpi, "--map-by", "-map-by") or ""
        if ppr != "1" and not mapby.lower().startswith("ppr:1:node"):
            bad(fname, "%s is not started one rank per worker pod (mpirun --npernode 1): "
                "ranks that share a pod share its rails" % where)
        plugin = option(pf[1:], "--plugin")
        if plugin is not None and plugin_dir and plugin != "%s/%s" % (plugin_dir, PLUGIN_FILE):
            bad(fname, "%s --plugin %s but the workers have the plugin at %s/%s"
                % (where, plugin, plugin_dir, PLUGIN_FILE))
        if plugin_dir and not pf[0].startswith(plugin_dir + "/"):
            bad(fname, "%s runs %s, not the copy in the workers' %s"
                % (where, pf[0], plugin_dir))
    return seen


def check_dropin(fname, where, spec, bad):
    inits = spec.get("initContainers", []) or []
    vols = {v["name"]: v for v in spec.get("volumes", []) or []}
    names = [c.get("name") for c in inits]
    if "railnet-install" not in names or "railnet-doctor" not in names:
        bad(fname, "%s: init containers %s, want railnet-install then railnet-doctor"
            % (where, names))
        return
    if names.index("railnet-install") > names.index("railnet-doctor"):
        bad(fname, "%s: railnet-doctor runs before railnet-install" % where)
    inst = inits[names.index("railnet-install")]
    if not RAILNET_IMAGE_RE.search(inst.get("image", "")):
        bad(fname, "%s: railnet-install image %r is not the railnet image"
            % (where, inst.get("image")))
    target = (inst.get("args") or ["/opt/railnet"])[-1]
    mounts = {m["mountPath"]: m["name"] for m in inst.get("volumeMounts", []) or []}
    vol = mounts.get(target)
    if not vol or "emptyDir" not in vols.get(vol, {}):
        bad(fname, "%s: railnet-install's target %s is not an emptyDir mount" % (where, target))
        return
    doctor = inits[names.index("railnet-doctor")]
    dcmd = " ".join(str(x) for x in (doctor.get("command") or []) + (doctor.get("args") or []))
    if "railnet-doctor" not in dcmd:
        bad(fname, "%s: the railnet-doctor init container does not run it" % where)
    for c in spec.get("containers", []) or []:
        cm = {m["name"]: m["mountPath"] for m in c.get("volumeMounts", []) or []}
        if vol not in cm:
            bad(fname, "%s: container %s does not mount the %s emptyDir"
                % (where, c.get("name"), vol))
            continue
        for e in c.get("env", []) or []:
            if e.get("name") == "NCCL_NET_PLUGIN" and e.get("value") != "%s/%s" % (
                    cm[vol], PLUGIN_FILE):
                bad(fname, "%s: NCCL_NET_PLUGIN=%s but the plugin is at %s/%s"
                    % (where, e.get("value"), cm[vol], PLUGIN_FILE))


# ---- self-test ---------------------------------------------------------------------------
def find(files, fname, kind, role=None):
    for f, docs in files:
        if f != fname:
            continue
        for d in docs:
            if d.get("kind") != kind:
                continue
            if role:
                return d["spec"]["mpiReplicaSpecs"][role]["template"]
            return d
    raise KeyError((fname, kind, role))


def selftest(files, documented):
    base = check(files, documented)
    if base:
        print("selftest: the real manifests must be clean first:\n  " + "\n  ".join(base))
        return 1

    def worker(fs):
        return find(fs, "mpijob-ipvlan.yaml", "MPIJob", "Worker")["spec"]

    def launcher(fs):
        return find(fs, "mpijob-ipvlan.yaml", "MPIJob", "Launcher")["spec"]

    def preflight(fs):
        return find(fs, "mpijob-preflight.yaml", "MPIJob", "Launcher")["spec"]["containers"][
            0]["command"]

    cases = [
        ("NCCL_IB_GID_INDEX set", "NCCL_IB_GID_INDEX appears",
         lambda fs: worker(fs)["containers"][0]["env"].append(
             {"name": "NCCL_IB_GID_INDEX", "value": "3"})),
        ("NCCL_IB_HCA in mpirun -x", "NCCL_IB_HCA appears",
         lambda fs: launcher(fs)["containers"][0]["command"].extend(["-x", "NCCL_IB_HCA=mlx5"])),
        ("undocumented variable", "RAILNET_TURBO is neither documented",
         lambda fs: worker(fs)["containers"][0]["env"].append(
             {"name": "RAILNET_TURBO", "value": "1"})),
        ("launcher variable not passed", "NCCL_IB_TIMEOUT is set on the launcher but not passed",
         lambda fs: launcher(fs)["containers"][0]["env"].append(
             {"name": "NCCL_IB_TIMEOUT", "value": "20"})),
        ("hostNetwork outside its variant", "uses hostNetwork",
         lambda fs: worker(fs).__setitem__("hostNetwork", True)),
        ("privileged", "is privileged",
         lambda fs: worker(fs)["containers"][0]["securityContext"].__setitem__(
             "privileged", True)),
        ("extra capability", "adds capabilities ['SYS_ADMIN']",
         lambda fs: worker(fs)["containers"][0]["securityContext"]["capabilities"]["add"]
         .append("SYS_ADMIN")),
        ("unknown network", "attaches network rail-ipvlan-99",
         lambda fs: find(fs, "mpijob-ipvlan.yaml", "MPIJob", "Worker")["metadata"][
             "annotations"].__setitem__("k8s.v1.cni.cncf.io/networks",
                                        "rail-ipvlan-99," + ",".join(
                                            "rail-ipvlan-%02d" % r for r in range(1, 16)))),
        ("SR-IOV resource not requested", "of resource nvidia.com/rail03_vf but requests 0",
         lambda fs: [c["resources"]["limits"].pop("nvidia.com/rail03_vf", None) for c in containers(
             find(fs, "mpijob-sriov.yaml", "MPIJob", "Worker")["spec"])]),
        ("ipvlan without the PF resource", "requests no device resource that selects rdma0",
         lambda fs: [c["resources"]["limits"].pop("nvidia.com/hostdev") for c in containers(
             worker(fs)) if "nvidia.com/hostdev" in c.get("resources", {}).get("limits", {})]),
        ("NCCL_NET_PLUGIN elsewhere", "but the plugin is at /opt/railnet/",
         lambda fs: [e.__setitem__("value", "/usr/lib/" + PLUGIN_FILE) for e in
                     worker(fs)["containers"][0]["env"] if e["name"] == "NCCL_NET_PLUGIN"]),
        ("no doctor init step", "want railnet-install then railnet-doctor",
         lambda fs: worker(fs)["initContainers"].pop()),
        ("launcher at startup", "launcherCreationPolicy is 'AtStartup'",
         lambda fs: find(fs, "mpijob-ipvlan.yaml", "MPIJob")["spec"].__setitem__(
             "launcherCreationPolicy", "AtStartup")),
        ("ssh port in the env", "OMPI_MCA_plm_rsh_args in the launcher's env is lost",
         lambda fs: launcher(fs)["containers"][0]["env"].append(
             {"name": "OMPI_MCA_plm_rsh_args", "value": "-p 2222"})),
        ("ssh port not passed", "listens on 2222 but mpirun has no --mca plm_rsh_args",
         lambda fs: [c.__setitem__("command", [x for x in c["command"]
                                               if x not in ("--mca", "plm_rsh_args", "-p 2222")])
                     for c in containers(find(fs, "mpijob-hostnetwork.yaml", "MPIJob",
                                              "Launcher")["spec"])]),
        ("preflight -np not the worker count", "railnet-preflight runs with -np 3 but the "
         "job has 2 workers",
         lambda fs: preflight(fs).__setitem__(preflight(fs).index("-np") + 1, "3")),
        ("preflight without --npernode 1", "railnet-preflight is not started one rank per "
         "worker pod",
         lambda fs: preflight(fs).__setitem__(preflight(fs).index("--npernode") + 1, "8")),
        ("preflight --plugin elsewhere", "but the workers have the plugin at",
         lambda fs: preflight(fs).__setitem__(preflight(fs).index("--plugin") + 1,
                                              "/src/build/libnccl-net-railnet.so")),
        ("no GPU toleration", "no toleration of the nvidia.com/gpu taint",
         lambda fs: worker(fs).pop("tolerations")),
        ("no anti-affinity", "no required podAntiAffinity on kubernetes.io/hostname",
         lambda fs: worker(fs).pop("affinity")),
        ("no Namespace", "which no Namespace of the set defines",
         lambda fs: [docs.clear() for f, docs in fs if f == "namespace.yaml"]),
        ("Baseline namespace", "enforces Pod Security 'baseline', which rejects its pods",
         lambda fs: find(fs, "namespace.yaml", "Namespace")["metadata"]["labels"].__setitem__(
             "pod-security.kubernetes.io/enforce", "baseline")),
        ("PFs by pfNames", "selects 'rdma0' by pfNames, which matches VFs of that PF only",
         lambda fs: find(fs, "device-plugins.yaml", "ConfigMap")["data"].__setitem__(
             "config.json", json.dumps({"resourceList": [
                 dict(r, selectors={"pfNames": ["rdma%d" % i for i in range(16)]})
                 if r["resourceName"] == "hostdev" else r for r in json.loads(
                     find(fs, "device-plugins.yaml", "ConfigMap")["data"]["config.json"])[
                         "resourceList"]]}))),
        ("shared plugin without a rail", "requests no device resource that selects rdma3",
         lambda fs: [d["data"].__setitem__("config.json", d["data"]["config.json"].replace(
             '"rdma3",', '')) for f, docs in fs if f == "device-plugins.yaml" for d in docs
             if d["metadata"]["name"] == "rdma-devices"] and
         [d["spec"]["rdmaSharedDevicePlugin"].__setitem__(
             "config", d["spec"]["rdmaSharedDevicePlugin"]["config"].replace('"rdma3",', ''))
          for f, docs in fs if f == "nicclusterpolicy.yaml" for d in docs]),
        ("resource missing from one alternative", "the NicClusterPolicy configuration does "
         "not define",
         lambda fs: [d["spec"]["rdmaSharedDevicePlugin"].__setitem__(
             "config", d["spec"]["rdmaSharedDevicePlugin"]["config"].replace(
                 "rdma_shared_device_a", "rdma_shared_device_b"))
          for f, docs in fs if f == "nicclusterpolicy.yaml" for d in docs]),
        ("macvlan on a non-rail", "macvlan master 'eth0' is not a rail PF rdmaN",
         lambda fs: [d["spec"].__setitem__("config", d["spec"]["config"].replace(
             '"master": "rdma0"', '"master": "eth0"')) for f, docs in fs
             if f == "rails-macvlan.yaml" for d in docs
             if d["metadata"]["name"] == "rail-macvlan-00"]),
        ("InfiniBand job with rail NADs", "InfiniBand needs none",
         lambda fs: find(fs, "mpijob-infiniband.yaml", "MPIJob", "Worker").setdefault(
             "metadata", {}).setdefault("annotations", {}).__setitem__(
                 "k8s.v1.cni.cncf.io/networks", "rail-ipvlan-00")),
        ("NVIDIA IPAM block too small", "whose perNodeBlockSize is 8",
         lambda fs: find(fs, "rails-ipvlan-nvipam.yaml", "IPPool")["spec"].__setitem__(
             "perNodeBlockSize", 8)),
        ("NVIDIA IPAM pool missing", "NVIDIA IPAM pool 'rdma-ipvlan-pool' is no IPPool",
         lambda fs: [docs.remove(d) for f, docs in fs if f == "rails-ipvlan-nvipam.yaml"
                     for d in list(docs) if d.get("kind") == "IPPool"]),
        ("IPPool subnet", "subnet '10.239.255.1/24' is not a network",
         lambda fs: find(fs, "rails-ipvlan-nvipam.yaml", "IPPool")["spec"].__setitem__(
             "subnet", "10.239.255.1/24")),
        ("DRA GPUs not tied to a NIC's root", "GPU request gpus-b shares no",
         lambda fs: find(fs, "mpijob-dra.yaml", "ResourceClaimTemplate")["spec"]["spec"][
             "devices"]["constraints"].pop()),
        ("DRA claim of an unknown template", "which namespace llm-training does not have",
         lambda fs: find(fs, "mpijob-dra.yaml", "MPIJob", "Worker")["spec"][
             "resourceClaims"][0].__setitem__("resourceClaimTemplateName", "nope")),
        ("ConfigMap nobody reads", "the sriov device plugin reads kube-system/sriovdp-config",
         lambda fs: find(fs, "device-plugins.yaml", "ConfigMap")["metadata"].__setitem__(
             "namespace", "nvidia-network-operator")),
        ("ConfigMap defined twice", "is also defined in",
         lambda fs: fs.append(("rails-extra.yaml", [copy.deepcopy(
             find(fs, "device-plugins.yaml", "ConfigMap"))]))),
        ("doctor-job.yaml edited by hand", "differs from `doctor-job.py mpijob-ipvlan.yaml "
         "gpu-node-01` at .spec.template.spec.containers[0].resources.limits.nvidia.com/gpu",
         lambda fs: find(fs, "doctor-job.yaml", "Job")["spec"]["template"]["spec"][
             "containers"][0]["resources"]["limits"].pop("nvidia.com/gpu")),
        ("doctor Job of a job with no railnet image", "doctor-job.py cannot make its doctor "
         "Job: its worker has no railnet-install init container",
         lambda fs: [c.__setitem__("name", "copy-plugin") for c in find(
             fs, "mpijob-sriov.yaml", "MPIJob", "Worker")["spec"]["initContainers"]
             if c["name"] == "railnet-install"]),
        ("Topology Manager best-effort", "topologyManagerPolicy is 'best-effort'",
         lambda fs: find(fs, "kubelet-topology.yaml", "KubeletConfiguration")
         .__setitem__("topologyManagerPolicy", "best-effort")),
    ]
    return run_planted(cases, files, lambda fs: check(fs, documented))


def run_planted(cases, files, problems_of):
    """Plants each (name, wanted text, mutation) in a copy of files and checks that
    problems_of(copy) reports it; prints a line per case. 0 when all were reported, else 1.
    Shared with check_schemas.py."""
    failed = 0
    for name, want, mutate in cases:
        fs = copy.deepcopy(files)
        mutate(fs)
        got = problems_of(fs)
        if any(want in p for p in got):
            print("selftest ok: %s -> reported" % name)
        else:
            print("selftest FAIL: %s: no problem containing %r; got: %s" % (name, want, got))
            failed += 1
    print("selftest: %d passed, %d failed" % (len(cases) - failed, failed))
    return 1 if failed else 0


def main(argv):
    args = [a for a in argv[1:] if a != "--selftest"]
    repo = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                             "..")
    try:
        files = load(repo)
    except yaml.YAMLError as e:
        print("FAIL: a manifest does not parse: %s" % e)
        return 1
    if not files:
        print("FAIL: no manifests under %s/docker/k8s" % repo)
        return 1
    documented = documented_vars(repo)
    ndocs = sum(len(d) for _, d in files)
    print("parsed %d documents in %d files" % (ndocs, len(files)))
    if "--selftest" in argv:
        return selftest(files, documented)
    problems = check(files, documented)
    for p in problems:
        print("FAIL: " + p)
    if problems:
        return 1
    print("ok: env names, forbidden variables, privileges, networks and resources, the "
          "drop-in, MPIJob launch and placement, the preflight launcher, namespaces, kubelet "
          "and doctor checks all pass")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
