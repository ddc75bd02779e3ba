#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Validates docker/k8s/*.yaml against JSON Schemas of the custom resources they use.

  check_schemas.py [--selftest] [REPO]

No packaged schema exists for these CRDs, so test/docker/schemas/ holds our own, written from
the CRDs' fields (types, enums, required members, and no unknown member where a typo would
silently change behaviour, such as a misspelt launcherCreationPolicy):
  MPIJob kubeflow.org/v2beta1, NetworkAttachmentDefinition k8s.cni.cncf.io/v1,
  NicClusterPolicy mellanox.com/v1alpha1, IPPool nv-ipam.nvidia.com/v1alpha1, and DRA's
  ResourceClaimTemplate resource.k8s.io/v1 (the fields used).
Every document of one of those kinds must validate; a document of such an apiVersion whose
kind has no schema is an error too. Core kinds (Job, ConfigMap, Namespace,
KubeletConfiguration) are left to check_manifests.py. --selftest plants one mistake per
schema and checks that each is reported.
Exit: 0 ok, 1 problems, 77 PyYAML or jsonschema missing (Debian: python3-yaml,
python3-jsonschema).
"""

import glob
import json
import os
import sys

try:
    import yaml
    import jsonschema
    from check_manifests import run_planted  # the planted-mistake runner, beside this file
except ImportError as e:
    print("SKIP: %s is not installed for %s (Debian: apt-get install python3-yaml "
          "python3-jsonschema)" % (e.name, sys.executable))
    sys.exit(77)

SCHEMAS = {
    ("kubeflow.org/v2beta1", "MPIJob"): "mpijob-v2beta1.json",
    ("k8s.cni.cncf.io/v1", "NetworkAttachmentDefinition"): "networkattachmentdefinition-v1.json",
    ("mellanox.com/v1alpha1", "NicClusterPolicy"): "nicclusterpolicy-v1alpha1.json",
    ("nv-ipam.nvidia.com/v1alpha1", "IPPool"): "ippool-v1alpha1.json",
    ("resource.k8s.io/v1", "ResourceClaimTemplate"): "resourceclaimtemplate-v1.json",
}
GROUPS = {api for api, _ in SCHEMAS}


def load(repo):
    files = []
    for path in sorted(glob.glob(os.path.join(repo, "docker", "k8s", "*.yaml"))):
        with open(path, encoding="utf-8") as f:
            files.append((os.path.basename(path), [d for d in yaml.safe_load_all(f) if d]))
    return files


def schemas(repo):
    out = {}
    for key, name in SCHEMAS.items():
        with open(os.path.join(repo, "test", "docker", "schemas", name), encoding="utf-8") as f:
            s = json.load(f)
        jsonschema.Draft7Validator.check_schema(s)
        out[key] = jsonschema.Draft7Validator(s)
    return out


def check(files, validators):
    problems, counts = [], {}
    for fname, docs in files:
        for d in docs:
            key = (d.get("apiVersion"), d.get("kind"))
            name = (d.get("metadata") or {}).get("name")
            if key not in validators:
                if key[0] in GROUPS:
                    problems.append("%s: %s %s: no schema for kind %s of %s"
                                    % (fname, key[1], name, key[1], key[0]))
                continue
            counts[key[1]] = counts.get(key[1], 0) + 1
            for e in sorted(validators[key].iter_errors(d), key=lambda e: list(e.path)):
                where = "/".join(str(p) for p in e.path) or "(document)"
                problems.append("%s: %s %s: %s: %s" % (fname, key[1], name, where, e.message))
    return problems, counts


def selftest(files, validators):
    def doc(fs, fname, kind):
        for f, docs in fs:
            for d in docs:
                if f == fname and d.get("kind") == kind:
                    return d
        raise KeyError((fname, kind))

    cases = [
        ("misspelt launcherCreationPolicy", "'launcherCreationPolicys' was unexpected",
         lambda fs: doc(fs, "mpijob-ipvlan.yaml", "MPIJob")["spec"].__setitem__(
             "launcherCreationPolicys", "WaitForWorkersReady")),
        ("bad cleanPodPolicy", "'Sometimes' is not one of",
         lambda fs: doc(fs, "mpijob-sriov.yaml", "MPIJob")["spec"]["runPolicy"].__setitem__(
             "cleanPodPolicy", "Sometimes")),
        ("slotsPerWorker as a string", "'8' is not of type 'integer'",
         lambda fs: doc(fs, "mpijob-infiniband.yaml", "MPIJob")["spec"].__setitem__(
             "slotsPerWorker", "8")),
        ("NAD config not a string", "is not of type 'string'",
         lambda fs: doc(fs, "rails-ipvlan.yaml", "NetworkAttachmentDefinition")["spec"]
         .__setitem__("config", {"type": "ipvlan"})),
        ("NicClusterPolicy plugin without its version", "'version' is a required property",
         lambda fs: doc(fs, "nicclusterpolicy.yaml", "NicClusterPolicy")["spec"][
             "sriovDevicePlugin"].pop("version")),
        ("IPPool without a block size", "'perNodeBlockSize' is a required property",
         lambda fs: doc(fs, "rails-ipvlan-nvipam.yaml", "IPPool")["spec"].pop(
             "perNodeBlockSize")),
        ("DRA request without a device class", "'deviceClassName' is a required property",
         lambda fs: doc(fs, "mpijob-dra.yaml", "ResourceClaimTemplate")["spec"]["spec"][
             "devices"]["requests"][0]["exactly"].pop("deviceClassName")),
        ("unknown kind of a known group", "no schema for kind MPIJobs",
         lambda fs: doc(fs, "mpijob-macvlan.yaml", "MPIJob").__setitem__("kind", "MPIJobs")),
    ]
    return run_planted(cases, files, lambda fs: check(fs, validators)[0])


def main(argv):
    args = [a for a in argv[1:] if a != "--selftest"]
    repo = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                             "..")
    files = load(repo)
    validators = schemas(repo)
    problems, counts = check(files, validators)
    if "--selftest" in argv:
        if problems:
            print("selftest: the real manifests must validate first:\n  " +
                  "\n  ".join(problems))
            return 1
        return selftest(files, validators)
    for p in problems:
        print("FAIL: " + p)
    if problems:
        return 1
    print("ok: %s validate against test/docker/schemas/"
          % ", ".join("%d %s" % (n, k) for k, n in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
