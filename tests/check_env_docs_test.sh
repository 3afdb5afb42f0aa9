#!/bin/sh
# check_env_docs.sh's own test: on a copy of the tree it passes; with a
# variable taken out of docs/env.md, and with a planted getenv and env_bool
# of undocumented names, it fails and names each of them.
# Usage: check_env_docs_test.sh CHECK_ENV_DOCS SOURCE_ROOT.
set -eu
check=$1
root=$2
tmp=$(mktemp -d /tmp/nsim-envdocs-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; [ ! -f "$tmp/out" ] || cat "$tmp/out"; exit 1; }

mkdir "$tmp/docs" "$tmp/tools"
for d in runtime common compiler pjrt driver firmware-sim frontends include; do
	[ ! -d "$root/$d" ] || ln -s "$root/$d" "$tmp/$d"
done
for f in "$root"/tools/*; do ln -s "$f" "$tmp/tools/"; done
cp "$root/docs/env.md" "$tmp/docs/env.md"

sh "$check" "$tmp" >"$tmp/out" 2>&1 || fail "the unchanged tree does not pass"

# One documented variable dropped from the page.
grep -v NEURONSIM_PJRT_TRACE "$root/docs/env.md" >"$tmp/docs/env.md"
if sh "$check" "$tmp" >"$tmp/out" 2>&1; then fail "passed without NEURONSIM_PJRT_TRACE on the page"; fi
grep -q "MISSING: NEURONSIM_PJRT_TRACE" "$tmp/out" || fail "the dropped variable is not named"

# Planted reads of names the page does not have.
cp "$root/docs/env.md" "$tmp/docs/env.md"
cat >"$tmp/tools/planted.c" <<'C'
#include <stdlib.h>
static int env_bool(const char *name, int def) { return getenv(name) ? 1 : def; }
int planted(void) { return getenv("NEURON_PLANTED_ONE") != NULL && env_bool("XLA_PLANTED_TWO", 0); }
C
if sh "$check" "$tmp" >"$tmp/out" 2>&1; then fail "passed with planted undocumented variables"; fi
for v in NEURON_PLANTED_ONE XLA_PLANTED_TWO; do
	grep -q "MISSING: $v" "$tmp/out" || fail "the planted $v is not named"
done
grep -q "2 of" "$tmp/out" || fail "more than the two planted names reported"
echo "PASS"
