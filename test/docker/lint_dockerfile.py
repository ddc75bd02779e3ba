#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Lints docker/Dockerfile with what Debian has (hadolint is not packaged in Debian 12).

  lint_dockerfile.py [--selftest] [REPO]

Structure (hadolint's rules that matter here, applied by hand):
  - every base image comes from an ARG with a default, or names an explicit tag (no :latest,
    no untagged image); every stage is named; COPY --from names an earlier stage;
  - every ARG is documented in the header comment and in docker/README.md;
  - apt-get: update and install in the same RUN, install with -y and --no-install-recommends,
    /var/lib/apt/lists removed in that RUN; no ADD (COPY only), no curl|sh;
  - WORKDIR is absolute; the final stage sets a non-root USER; ENTRYPOINT and CMD are in exec
    (JSON) form and the ENTRYPOINT is a file the final stage COPYs in;
  - COPY sources from the build context exist in the repository;
  - the artifacts the final image promises (libnccl-net-railnet.so, railnet-doctor,
    railnet-bench) are staged, and SHA256SUMS is written for docker/install.sh.
Shell: every RUN body, with the ARGs and ENVs in scope defined, passes shellcheck -s sh
(Docker runs RUN with /bin/sh -c).
--selftest plants one mistake of each kind and checks that each is reported.
Exit: 0 ok, 1 problems, 77 when the structural checks pass but shellcheck is missing.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ARTIFACTS = ("libnccl-net-railnet.so", "railnet-doctor", "railnet-bench")


def instructions(text):
    """[(line number, INSTRUCTION, arguments)], continuation lines joined, comments dropped."""
    out = []
    cur, start = None, 0
    for n, line in enumerate(text.split("\n"), 1):
        s = line.strip()
        if cur is None:
            if not s or s.startswith("#"):
                continue
            cur, start = "", n
        elif s.startswith("#"):
            continue  # a comment inside a continued instruction is dropped by Docker
        if line.rstrip().endswith("\\"):
            cur += line.rstrip()[:-1] + "\n"
            continue
        cur += line
        word, _, rest = cur.strip().partition(" ")
        out.append((start, word.upper(), rest.strip()))
        cur = None
    return out


def header_comment(text):
    lines = []
    for line in text.split("\n"):
        if line.startswith("#"):
            lines.append(line)
        elif line.strip():
            break
    return "\n".join(lines)


def lint(text, repo, readme):
    problems = []

    def bad(n, msg):
        problems.append("Dockerfile:%d: %s" % (n, msg))

    ins = instructions(text)
    header = header_comment(text)
    global_args = {}
    stages = []  # [(name, {args}, {env}, [instructions])]
    for n, word, rest in ins:
        if word == "ARG":
            name, _, default = rest.partition("=")
            if stages:
                stages[-1][1][name] = default
            else:
                global_args[name] = default
            if not re.search(r"^#\s+%s\b" % re.escape(name), header, re.M):
                bad(n, "ARG %s is not documented in the header comment" % name)
            if readme is not None and ("`%s`" % name) not in readme:
                bad(n, "ARG %s is not documented in docker/README.md" % name)
        elif word == "FROM":
            m = re.match(r"^(\S+)(?:\s+AS\s+(\S+))?$", rest, re.I)
            if not m or not m.group(2):
                bad(n, "FROM %s: every stage needs a name (AS name)" % rest)
                stages.append(("?", {}, {}, []))
                continue
            image = m.group(1)
            v = re.match(r"^\$\{?(\w+)\}?$", image)
            if v:
                if v.group(1) not in global_args or not global_args[v.group(1)]:
                    bad(n, "FROM %s: the ARG needs a default before the first FROM" % image)
                else:
                    image = global_args[v.group(1)]
            if image not in [s[0] for s in stages]:
                if ":" not in image.split("/")[-1] or image.endswith(":latest"):
                    bad(n, "FROM %s: pin a tag (not :latest, not untagged)" % image)
            stages.append((m.group(2), {}, {}, []))
        elif not stages:
            bad(n, "%s before the first FROM" % word)
            continue
        if word != "FROM" and stages:
            stages[-1][3].append((n, word, rest))
            if word == "ENV":
                k, _, v = rest.partition("=")
                stages[-1][2][k.strip()] = v.strip()
        if word == "ADD":
            bad(n, "ADD: use COPY (ADD fetches URLs and unpacks archives implicitly)")
        if word == "WORKDIR" and not rest.startswith("/"):
            bad(n, "WORKDIR %s is not absolute" % rest)
        if word == "RUN":
            body = rest
            if "apt-get install" in body:
                if "apt-get update" not in body:
                    bad(n, "apt-get install without apt-get update in the same RUN")
                if "--no-install-recommends" not in body:
                    bad(n, "apt-get install without --no-install-recommends")
                if not re.search(r"apt-get install[^;&|]*\s-y\b", body):
                    bad(n, "apt-get install without -y")
                if "rm -rf /var/lib/apt/lists" not in body:
                    bad(n, "apt-get install without rm -rf /var/lib/apt/lists/* in that RUN")
            if re.search(r"(curl|wget)[^|;]*\|\s*(ba)?sh", body):
                bad(n, "piping a download into a shell")
        if word == "COPY":
            parts = rest.split()
            flags = [p for p in parts if p.startswith("--")]
            paths = [p for p in parts if not p.startswith("--")]
            frm = [f.split("=", 1)[1] for f in flags if f.startswith("--from=")]
            if frm:
                if frm[0] not in [s[0] for s in stages[:-1]]:
                    bad(n, "COPY --from=%s: no earlier stage has that name" % frm[0])
            else:
                for src in paths[:-1]:
                    if not os.path.exists(os.path.join(repo, src)):
                        bad(n, "COPY %s: no such path in the repository" % src)
    if not stages:
        bad(1, "no FROM")
        return problems, stages, global_args
    final = stages[-1]
    words = [w for _, w, _ in final[3]]
    users = [r for _, w, r in final[3] if w == "USER"]
    if not users or users[-1].split(":")[0] in ("root", "0"):
        bad(ins[-1][0], "the final stage runs as root: set a non-root USER")
    copied = set()
    for _, w, r in final[3]:
        if w == "COPY":
            copied.add(r.split()[-1])
    for n, w, r in final[3]:
        if w in ("ENTRYPOINT", "CMD"):
            try:
                v = json.loads(r)
                assert isinstance(v, list)
            except (ValueError, AssertionError):
                bad(n, "%s %s: use the exec (JSON array) form" % (w, r))
                continue
            if w == "ENTRYPOINT" and (not v or v[0] not in copied):
                bad(n, "ENTRYPOINT %s is not a file this stage COPYs in" % (v[:1]))
    if "ENTRYPOINT" not in words:
        bad(ins[-1][0], "the final stage has no ENTRYPOINT")
    for a in ARTIFACTS:
        if a not in text:
            bad(1, "the image does not stage %s" % a)
    if "SHA256SUMS" not in text:
        bad(1, "no SHA256SUMS is written for docker/install.sh to verify against")
    return problems, stages, global_args


def shellcheck_runs(stages, global_args, shellcheck):
    problems = []
    for name, args, env, ins in stages:
        scope = dict(global_args)
        for n, word, rest in ins:
            if word == "ARG":
                k, _, v = rest.partition("=")
                scope[k] = v
            if word == "ENV":
                k, _, v = rest.partition("=")
                scope[k.strip()] = v.strip()
            if word != "RUN" or rest.startswith("["):
                continue
            script = "#!/bin/sh\n"
            for k, v in scope.items():
                script += "export %s=%s\n" % (k, shquote(v))
            script += rest + "\n"
            with tempfile.NamedTemporaryFile("w", suffix=".sh", delete=False) as f:
                f.write(script)
                path = f.name
            try:
                r = subprocess.run([shellcheck, "-s", "sh", "-f", "gcc", path],
                                   capture_output=True, text=True)
            finally:
                os.unlink(path)
            if r.returncode != 0:
                for line in r.stdout.splitlines():
                    problems.append("Dockerfile:%d (stage %s, RUN): %s"
                                    % (n, name, line.split(":", 3)[-1].strip()))
    return problems


def shquote(v):
    return "'" + v.replace("'", "'\\''") + "'"


GOOD_TAIL = """
COPY --from=builder /stage/ /usr/lib/railnet/
COPY docker/install.sh /usr/local/bin/railnet-install
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/railnet-install"]
"""


def selftest(repo):
    base = ("# libnccl-net-railnet.so railnet-doctor railnet-bench SHA256SUMS\n"
            "#   BASE   the base\n")
    cases = [
        ("untagged image", base + "ARG BASE=ubuntu\nFROM ${BASE} AS builder\n" + GOOD_TAIL,
         "pin a tag"),
        ("latest tag", base + "ARG BASE=ubuntu:latest\nFROM ${BASE} AS b\n" + GOOD_TAIL,
         "pin a tag"),
        ("undocumented ARG", base + "ARG BASE=ubuntu:22.04\nFROM ${BASE} AS builder\n"
         "ARG SECRET_KNOB=1\n" + GOOD_TAIL, "ARG SECRET_KNOB is not documented"),
        ("unnamed stage", base + "FROM ubuntu:22.04\n" + GOOD_TAIL, "needs a name"),
        ("apt without cleanup", base + "FROM ubuntu:22.04 AS builder\n"
         "RUN apt-get update && apt-get install -y --no-install-recommends cmake\n" +
         GOOD_TAIL, "rm -rf /var/lib/apt/lists"),
        ("apt with recommends", base + "FROM ubuntu:22.04 AS builder\n"
         "RUN apt-get update && apt-get install -y cmake && rm -rf /var/lib/apt/lists/*\n" +
         GOOD_TAIL, "--no-install-recommends"),
        ("ADD", base + "FROM ubuntu:22.04 AS builder\nADD https://x/y.tgz /y\n" + GOOD_TAIL,
         "ADD: use COPY"),
        ("root user", base + "FROM ubuntu:22.04 AS builder\n" +
         GOOD_TAIL.replace("USER 65532:65532", "USER root"), "runs as root"),
        ("shell-form entrypoint", base + "FROM ubuntu:22.04 AS builder\n" +
         GOOD_TAIL.replace('["/usr/local/bin/railnet-install"]', "/usr/local/bin/x"),
         "exec (JSON array) form"),
        ("copy from unknown stage", base + "FROM ubuntu:22.04 AS builder\n" +
         GOOD_TAIL.replace("--from=builder", "--from=nope"), "no earlier stage"),
        ("missing context path", base + "FROM ubuntu:22.04 AS builder\nCOPY nope.sh /x\n" +
         GOOD_TAIL, "COPY nope.sh: no such path"),
    ]
    failed = 0
    for name, text, want in cases:
        got, _, _ = lint(text, repo, None)
        if any(want in p for p in got):
            print("selftest ok: %s -> reported" % name)
        else:
            print("selftest FAIL: %s: want %r, got %s" % (name, want, got))
            failed += 1
    sc = shutil.which(os.environ.get("SHELLCHECK", "shellcheck"))
    if sc:
        _, stages, ga = lint(base + "FROM ubuntu:22.04 AS builder\nRUN for f in $(ls *.so); "
                             "do cp $f /x; done\n" + GOOD_TAIL, repo, None)
        got = shellcheck_runs(stages, ga, sc)
        if any("SC2045" in p or "SC2086" in p for p in got):
            print("selftest ok: unquoted RUN shell -> shellcheck reports it")
        else:
            print("selftest FAIL: shellcheck did not report a bad RUN: %s" % got)
            failed += 1
    print("selftest: %d failed" % failed)
    return 1 if failed else 0


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    repo = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                             "..")
    repo = os.path.abspath(repo)
    if "--selftest" in argv:
        return selftest(repo)
    text = open(os.path.join(repo, "docker", "Dockerfile"), encoding="utf-8").read()
    readme_path = os.path.join(repo, "docker", "README.md")
    readme = open(readme_path, encoding="utf-8").read() if os.path.exists(readme_path) else ""
    problems, stages, ga = lint(text, repo, readme)
    for p in problems:
        print("FAIL: " + p)
    if problems:
        return 1
    print("ok: structure (%d stages: %s)" % (len(stages), ", ".join(s[0] for s in stages)))
    sc = shutil.which(os.environ.get("SHELLCHECK", "shellcheck"))
    if not sc:
        print("SKIP: shellcheck not installed: the RUN scripts were not checked "
              "(apt-get install shellcheck)")
        return 77
    sp = shellcheck_runs(stages, ga, sc)
    for p in sp:
        print("FAIL: " + p)
    if sp:
        return 1
    nrun = sum(1 for s in stages for i in s[3] if i[1] == "RUN")
    print("ok: shellcheck -s sh on %d RUN scripts" % nrun)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
