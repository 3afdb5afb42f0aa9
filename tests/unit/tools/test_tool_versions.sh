#!/bin/sh
# Every tool answers --version with the project's one version ("PROG (neuronsim)
# VERSION" first, as help2man reads it), exits 0, and lists --version in --help.
# Usage: test_tool_versions.sh VERSION TOOL...
set -eu
VERSION=$1
shift
fail=0
for tool in "$@"; do
	name=$(basename "$tool")
	out=$("$tool" --version) || { echo "FAIL: $name --version exits $?"; fail=1; continue; }
	first=$(printf '%s\n' "$out" | head -n 1)
	if [ "$first" != "$name (neuronsim) $VERSION" ]; then
		echo "FAIL: $name --version says '$first', expected '$name (neuronsim) $VERSION'"
		fail=1
	fi
	if ! "$tool" --help | grep -q -- '--version'; then
		echo "FAIL: $name --help does not list --version"
		fail=1
	fi
done
[ $fail = 0 ] && echo "ok: $# tools report $VERSION"
exit $fail
