#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The doctor Job for one node, made from the MPIJob you will run there.

    doctor-job.py MPIJOB.yaml NODE [--name NAME] [--image IMAGE]
    doctor-job.py docker/k8s/mpijob-sriov.yaml gpu-node-01 | kubectl apply -f -

The Job's pod gets exactly what that MPIJob's worker gets: the same namespace, rail networks
(the Multus annotation), device resources (GPUs, RDMA devices, VFs), DRA claims, tolerations,
host network and IPC_LOCK. So railnet-doctor judges the node as a worker will see it, before
the job is submitted, and the Job's status is the verdict: Complete = fit (exit 0), Failed =
problems found (1, each with its fix in the JSON log), a usage error (2) or could not run (3).
The image is the railnet image of the worker's railnet-install init container (it carries
libibverbs and the mlx5 provider), unless --image names another. The pod needs the node
idle: it asks for a whole worker's devices.

Exit status: 0 the Job was printed; 2 usage error or an MPIJob this cannot read (its reason
on stderr). Needs python3 and PyYAML (python3-yaml).
"""
import argparse
import copy
import re
import sys

try:
    import yaml
except ImportError:
    sys.stderr.write("doctor-job.py: PyYAML is needed (apt-get install python3-yaml, or "
                     "pip install pyyaml)\n")
    sys.exit(2)

DOCTOR = "/usr/lib/railnet/railnet-doctor"
# Resources that are not devices: the doctor needs little of them.
NOT_DEVICES = ("cpu", "memory", "ephemeral-storage", "hugepages-")
NODE_RE = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


class Unreadable(Exception):
    pass


class Dumper(yaml.SafeDumper):
    """Block sequences indented under their key, multi-line strings as literal blocks: the
    layout of the manifests here (yamllint --strict with docker/k8s/.yamllint)."""

    def increase_indent(self, flow=False, indentless=False):
        return super().increase_indent(flow, False)


def _str(dumper, data):
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


Dumper.add_representer(str, _str)


def find_worker(docs):
    jobs = [d for d in docs if isinstance(d, dict) and d.get("kind") == "MPIJob"]
    if len(jobs) != 1:
        raise Unreadable("it holds %d MPIJob documents, want exactly 1" % len(jobs))
    job = jobs[0]
    specs = ((job.get("spec") or {}).get("mpiReplicaSpecs") or {})
    worker = specs.get("Worker")
    if not isinstance(worker, dict) or not isinstance(worker.get("template"), dict):
        raise Unreadable("its MPIJob has no spec.mpiReplicaSpecs.Worker.template")
    return job, worker["template"]


def railnet_image(pod):
    for c in pod.get("initContainers") or []:
        if c.get("name") == "railnet-install" and c.get("image"):
            return c["image"]
    raise Unreadable("its worker has no railnet-install init container to take the railnet "
                     "image from: pass --image")


def device_limits(pod):
    """The worker's device resources: the largest request of any of its containers."""
    want = {}
    for c in (pod.get("containers") or []) + (pod.get("initContainers") or []):
        for r, v in (((c.get("resources") or {}).get("limits")) or {}).items():
            if r.startswith(NOT_DEVICES):
                continue
            try:
                n = int(v)
            except (TypeError, ValueError):
                raise Unreadable("limit %s: %r is not a whole number" % (r, v))
            want[r] = max(want.get(r, 0), n)
    return want


def claims(pod):
    """The worker container's DRA claim names (resources.claims), if any."""
    for c in pod.get("containers") or []:
        cl = (c.get("resources") or {}).get("claims")
        if cl:
            return copy.deepcopy(cl)
    return None


def make_job(job, template, node, name, image):
    pod = template.get("spec") or {}
    meta = template.get("metadata") or {}
    ns = (job.get("metadata") or {}).get("namespace")  # none: kubectl -n decides, as for the job
    args = [DOCTOR, "--json"]
    res = {"limits": dict(device_limits(pod), cpu="500m", memory="256Mi")}
    cl = claims(pod)
    if cl:
        res["claims"] = cl
    container = {
        "name": "railnet-doctor",
        "image": image,
        "command": args,
        # IPC_LOCK so that the memlock verdict is the worker's
        "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}},
        "resources": res,
    }
    spec = {"restartPolicy": "Never", "nodeSelector": {"kubernetes.io/hostname": node}}
    for k in ("hostNetwork", "dnsPolicy", "tolerations", "resourceClaims"):
        if k in pod:
            spec[k] = copy.deepcopy(pod[k])
    spec["containers"] = [container]
    tmeta = {}
    ann = {k: v for k, v in (meta.get("annotations") or {}).items()
           if k == "k8s.v1.cni.cncf.io/networks"}
    if ann:
        tmeta["annotations"] = ann
    out = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        # one label for all of them: kubectl get/wait/delete jobs -l app.kubernetes.io/name=...
        "metadata": dict({"name": name}, **({"namespace": ns} if ns else {}),
                         labels={"app.kubernetes.io/name": "railnet-doctor"}),
        "spec": {
            "backoffLimit": 0,              # a verdict, not a service: never retry
            "activeDeadlineSeconds": 300,   # a pod stuck in ContainerCreating fails the Job
            "ttlSecondsAfterFinished": 86400,
            "template": dict(({"metadata": tmeta} if tmeta else {}), spec=spec),
        },
    }
    return out


def main(argv):
    ap = argparse.ArgumentParser(prog="doctor-job.py", description=__doc__.split("\n")[0])
    ap.add_argument("mpijob", help="the MPIJob manifest the node will run")
    ap.add_argument("node", help="the node's kubernetes.io/hostname")
    ap.add_argument("--name", help="the Job's name (default railnet-doctor-NODE)")
    ap.add_argument("--image", help="the image with railnet-doctor at %s" % DOCTOR)
    try:
        a = ap.parse_args(argv)
    except SystemExit as e:
        return 2 if e.code else 0
    if not NODE_RE.match(a.node):
        sys.stderr.write("doctor-job.py: node %r is not a Kubernetes node name (lower-case "
                         "letters, digits, '-' and '.')\n" % a.node)
        return 2
    name = a.name or ("railnet-doctor-" + a.node.replace(".", "-"))[:63].rstrip("-")
    try:
        with open(a.mpijob) as f:
            docs = list(yaml.safe_load_all(f))
        job, template = find_worker(docs)
        image = a.image or railnet_image(template.get("spec") or {})
        out = make_job(job, template, a.node, name, image)
    except OSError as e:
        sys.stderr.write("doctor-job.py: %s: %s\n" % (a.mpijob, e.strerror))
        return 2
    except yaml.YAMLError as e:
        sys.stderr.write("doctor-job.py: %s is not YAML: %s\n" % (a.mpijob, e))
        return 2
    except Unreadable as e:
        sys.stderr.write("doctor-job.py: %s: %s\n" % (a.mpijob, e))
        return 2
    sys.stdout.write("# railnet-doctor on %s, as a worker of %s sees it (doctor-job.py)\n---\n"
                     % (a.node, a.mpijob.rsplit("/", 1)[-1]))
    yaml.dump(out, sys.stdout, Dumper=Dumper, sort_keys=False, default_flow_style=False,
              width=96)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
