#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Skips are a contract: compare the tests a ctest run skipped (its JUnit file, which `make
# test` writes to BUILD/ctest-junit.xml) with the lines of .ci/skips-allowed for SUITE. Prints
# each skip with its reason; exits 1 when a test skipped that is not allowed, or an allowed
# skip ran, 2 on usage errors.
# Usage: tools/check-skips.sh SUITE JUNIT_XML [ALLOW_FILE]
set -euo pipefail
suite=${1:-} junit=${2:-}
allow=${3:-$(dirname "$0")/../.ci/skips-allowed}
if [ -z "$suite" ] || [ -z "$junit" ]; then
	echo "usage: check-skips.sh SUITE JUNIT_XML [ALLOW_FILE]" >&2
	exit 2
fi
[ -f "$junit" ] || { echo "check-skips: $junit does not exist (did ctest run with --output-junit?)" >&2; exit 2; }
[ -f "$allow" ] || { echo "check-skips: $allow does not exist" >&2; exit 2; }
python3 - "$suite" "$junit" "$allow" <<'PY'
import sys
import xml.etree.ElementTree as ET

suite, junit, allow = sys.argv[1:4]
allowed = {}
for n, line in enumerate(open(allow), 1):
    line = line.split("#", 1)[0].strip()
    if not line:
        continue
    f = line.split(None, 2)
    if len(f) < 3:
        print(f"check-skips: {allow}:{n}: want 'SUITE TEST WHY'", file=sys.stderr)
        sys.exit(2)
    if f[0] in ("*", suite):
        allowed[f[1]] = f[2]
skipped = {}
ran = set()
for tc in ET.parse(junit).getroot().iter("testcase"):
    name = tc.get("name")
    if tc.get("status") == "notrun" or tc.find("skipped") is not None:
        out = (tc.findtext("system-out") or "").strip().splitlines()
        why = next((l for l in reversed(out) if "SKIP" in l.upper()), out[-1] if out else "")
        skipped[name] = why.strip()
    else:
        ran.add(name)
bad = 0
for name in sorted(skipped):
    if name in allowed:
        print(f"skip ({suite}, allowed): {name}: {skipped[name]}")
    else:
        print(f"FAIL: {name} skipped in the {suite} suite, and .ci/skips-allowed does not allow it: {skipped[name]}")
        bad = 1
for name in sorted(allowed):
    if name in ran:
        print(f"FAIL: {name} is allowed to skip in the {suite} suite but ran: delete its line in .ci/skips-allowed")
        bad = 1
print(f"check-skips: {suite}: {len(skipped)} skipped, {len(ran)} ran" + ("" if bad else ", as allowed"))
sys.exit(bad)
PY
