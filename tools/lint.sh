#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# railnet lint, run by `make lint`: (1) the verbs seam rule -- only src/verbs.c (and the
# inlines of include/railnet/verbs.h) may call ibv_*/mlx5dv_*; the rule reads src/ and
# include/railnet/ only, so softverbs/, which implements ibv_*, is exempt; (2) clang-format on
# the C files changed since a base; (3) shellcheck on the shell scripts, when shellcheck exists.
# It changes nothing; it prints every problem as file:line and exits non-zero if any.
#
#   tools/lint.sh                   all three checks
#   tools/lint.sh --rule-only       only the verbs seam rule (ctest runs this)
#   tools/lint.sh --rule-selftest   prove the rule catches a planted call (ctest runs this)
#   tools/lint.sh --rule-dir DIR    the rule on DIR/src and DIR/include/railnet
#
# Environment: LINT_BASE=<commit> formats files changed since that commit (plus uncommitted
# and untracked ones); LINT_ALL=1 formats every C file; LINT_VERBOSE=1 prints clang-format's
# full diagnostics; CLANG_FORMAT / SHELLCHECK pick the binaries. Default base:
# `git merge-base HEAD origin/main` when origin/main exists, else the last commit.
set -u -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CLANG_FORMAT=${CLANG_FORMAT:-clang-format}
SHELLCHECK=${SHELLCHECK:-shellcheck}
FORMAT_DIRS=(src include softverbs tools test bench nccl_headers)

usage() {
	sed -n '4,19s/^# \{0,1\}//p' "$0"
}

# Print C source on stdin with comments and string/char literals blanked (line count kept),
# so that a mention in a comment or a log message is not taken for a call.
strip_c() {
	awk '
	{
		out = ""; i = 1; n = length($0)
		while (i <= n) {
			c = substr($0, i, 1); c2 = substr($0, i, 2)
			if (inc) {
				if (c2 == "*/") { inc = 0; out = out "  "; i += 2 } else { out = out " "; i++ }
				continue
			}
			if (ins) {
				if (c == "\\") { out = out "  "; i += 2; continue }
				if (c == q) { ins = 0; out = out c } else { out = out " " }
				i++
				continue
			}
			if (c2 == "/*") { inc = 1; out = out "  "; i += 2; continue }
			if (c2 == "//") break
			if (c == "\"" || c == "\047") { ins = 1; q = c; out = out c; i++; continue }
			out = out c; i++
		}
		ins = 0
		print out
	}'
}

# The verbs seam: calls of ibv_*( / _ibv_*( / mlx5dv_*( outside verbs.c and verbs.h. Type
# names (struct/union/enum ibv_*), IBV_* constants and rn_ibv_* identifiers do not match.
rule_check() {
	local root=$1 f rel hits bad=0 dirs=()

	[[ -d $root/src ]] && dirs+=("$root/src")
	[[ -d $root/include/railnet ]] && dirs+=("$root/include/railnet")
	if ((${#dirs[@]} == 0)); then
		echo "lint: verbs rule: neither $root/src nor $root/include/railnet exists" >&2
		return 2
	fi
	while IFS= read -r -d '' f; do
		rel=${f#"$root"/}
		case $rel in
		src/verbs.c | include/railnet/verbs.h) continue ;;
		esac
		hits=$(strip_c <"$f" | awk -v file="$rel" '
			/(^|[^A-Za-z0-9_])_?(ibv|mlx5dv)_[A-Za-z0-9_]*[ \t]*\(/ {
				match($0, /(^|[^A-Za-z0-9_])_?(ibv|mlx5dv)_[A-Za-z0-9_]*[ \t]*\(/)
				name = substr($0, RSTART, RLENGTH - 1)
				sub(/^[^A-Za-z0-9_]/, "", name)
				sub(/[ \t]+$/, "", name)
				printf "%s:%d: calls %s()\n", file, FNR, name
			}')
		if [[ -n $hits ]]; then
			printf '%s\n' "$hits"
			bad=1
		fi
	done < <(find "${dirs[@]}" -type f \( -name '*.c' -o -name '*.h' \) -print0 | sort -z)
	if ((bad)); then
		echo "lint: verbs rule: only src/verbs.c may call ibv_*/mlx5dv_*;" \
			"call through rn_verbs()->... (include/railnet/verbs.h) instead" >&2
		return 1
	fi
	echo "lint: verbs rule: ok"
	return 0
}

# Plant a call in a scratch tree and make sure the rule fails on it, and passes on the
# forms that are allowed everywhere.
rule_selftest() {
	local tmp rc

	tmp=$(mktemp -d) || return 2
	rule_selftest_in "$tmp"
	rc=$?
	rm -rf "$tmp"
	return $rc
}

rule_selftest_in() {
	local tmp=$1 out want rc=0

	mkdir -p "$tmp/src" "$tmp/include/railnet"
	cat >"$tmp/src/allowed.c" <<-'EOF'
		/* ibv_open_device() is called by verbs.c only; "ibv_post_send(" in a comment */
		#include "railnet/verbs.h"
		static int rn_ibv_helper(struct ibv_context *ctx) { return ctx != 0; }
		int rn_allowed(struct ibv_qp *qp, union ibv_gid *gid, enum ibv_mtu mtu)
		{
			const struct rn_verbs_ops *v = rn_verbs();
			struct ibv_qp_attr attr = { .qp_state = IBV_QPS_RTS };

			RN_WARN("ibv_modify_qp(%p) failed", (void *)qp); // ibv_modify_qp(qp)
			return v->modify_qp(qp, &attr, IBV_QP_STATE) + (int)sizeof(struct ibv_wc) +
			       rn_ibv_helper(qp->context) + (int)mtu + gid->raw[0];
		}
	EOF
	cat >"$tmp/src/verbs.c" <<-'EOF'
		int rn_seam(void) { return ibv_fork_init(); }
	EOF
	if ! out=$(rule_check "$tmp" 2>&1); then
		printf '%s\n' "$out"
		echo "lint: rule self-test: FAILED: the rule rejected allowed forms" >&2
		return 1
	fi
	cat >"$tmp/src/device.c" <<-'EOF'
		#include "railnet/verbs.h"
		int rn_device_open(struct ibv_device *dev, struct ibv_context **ctx)
		{
			*ctx = ibv_open_device (dev);
			return mlx5dv_is_supported(dev) + _ibv_query_gid_ex(*ctx, 1, 0, 0, 0, 0);
		}
	EOF
	out=$(rule_check "$tmp" 2>&1) && rc=1
	for want in "src/device.c:4: calls ibv_open_device()" \
		"src/device.c:5: calls mlx5dv_is_supported()"; do
		if ! grep -qF "$want" <<<"$out"; then
			echo "lint: rule self-test: expected '$want'" >&2
			rc=1
		fi
	done
	if ((rc)); then
		printf '%s\n' "$out"
		echo "lint: rule self-test: FAILED: a planted call was not reported" >&2
		return 1
	fi
	echo "lint: rule self-test: ok (planted calls reported, allowed forms accepted)"
	return 0
}

# C/H files to format-check, one per line, relative to ROOT.
format_files() {
	local base

	if [[ ${LINT_ALL:-0} == 1 ]] || ! git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
		find "${FORMAT_DIRS[@]}" -type f \( -name '*.c' -o -name '*.h' \) 2>/dev/null
		return
	fi
	if [[ -n ${LINT_BASE:-} ]]; then
		base=$LINT_BASE
	elif git rev-parse -q --verify origin/main >/dev/null; then
		base=$(git merge-base HEAD origin/main) || return 1
	elif git rev-parse -q --verify HEAD~1 >/dev/null; then
		base=HEAD~1
	else
		base=
	fi
	{
		if [[ -n $base ]]; then
			git diff --name-only --diff-filter=d "$base" -- || return 1
		else
			git ls-files
		fi
		git ls-files --others --exclude-standard
	} | grep -E '\.(c|h)$' | sort -u
}

format_check() {
	local files=() f out n first bad=0

	if ! command -v "$CLANG_FORMAT" >/dev/null; then
		echo "lint: clang-format: '$CLANG_FORMAT' not found (apt-get install clang-format)" >&2
		return 1
	fi
	while IFS= read -r f; do
		[[ -f $f ]] && files+=("$f")
	done < <(format_files)
	if ((${#files[@]} == 0)); then
		echo "lint: clang-format: no changed C files"
		return 0
	fi
	for f in "${files[@]}"; do
		if out=$("$CLANG_FORMAT" --dry-run -Werror --style=file "$f" 2>&1); then
			continue
		fi
		bad=$((bad + 1))
		if [[ ${LINT_VERBOSE:-0} == 1 ]]; then
			printf '%s\n' "$out"
			continue
		fi
		n=$(grep -c 'error:' <<<"$out")
		first=$(grep -m1 -oE '^[^ ]+:[0-9]+:[0-9]+' <<<"$out")
		first=${first#"$f":}
		echo "$f: $n formatting difference(s), first at line:col ${first:-?}"
	done
	if ((bad)); then
		echo "lint: clang-format: $bad of ${#files[@]} files differ from .clang-format;" \
			"see them with LINT_VERBOSE=1, fix with: $CLANG_FORMAT -i FILE" >&2
		return 1
	fi
	echo "lint: clang-format: ok (${#files[@]} files)"
	return 0
}

shell_check() {
	local scripts=()

	if ! command -v "$SHELLCHECK" >/dev/null; then
		echo "lint: shellcheck: not installed, skipped"
		return 0
	fi
	shopt -s nullglob globstar
	scripts=(tools/*.sh test/**/*.sh softverbs/**/*.sh bench/**/*.sh)
	[[ -f .ci/run ]] && scripts+=(.ci/run)
	shopt -u nullglob globstar
	if ((${#scripts[@]} == 0)); then
		echo "lint: shellcheck: no scripts"
		return 0
	fi
	if ! "$SHELLCHECK" "${scripts[@]}"; then
		echo "lint: shellcheck: problems above" >&2
		return 1
	fi
	echo "lint: shellcheck: ok (${#scripts[@]} scripts)"
	return 0
}

main() {
	local failed=()

	cd "$ROOT" || exit 2
	case ${1:-} in
	--rule-only)
		rule_check "$ROOT"
		exit
		;;
	--rule-selftest)
		rule_selftest
		exit
		;;
	--rule-dir)
		[[ -n ${2:-} ]] || {
			usage >&2
			exit 2
		}
		rule_check "$2"
		exit
		;;
	-h | --help)
		usage
		exit 0
		;;
	"") ;;
	*)
		usage >&2
		exit 2
		;;
	esac
	rule_check "$ROOT" || failed+=("verbs rule")
	format_check || failed+=("clang-format")
	shell_check || failed+=("shellcheck")
	if ((${#failed[@]})); then
		echo "lint: FAILED: ${failed[*]}" >&2
		exit 1
	fi
	echo "lint: ok"
}

main "$@"
