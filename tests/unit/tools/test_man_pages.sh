#!/bin/sh
# Every tool's man page, made at build time by help2man from its --help and
# --version: it exists, its title names the tool and the project's version, and
# it documents --help and --version. Usage: test_man_pages.sh VERSION PAGE...
set -eu
VERSION=$1
shift
fail=0
for page in "$@"; do
	name=$(basename "$page" .1)
	if ! [ -s "$page" ]; then
		echo "FAIL: $page is missing or empty"
		fail=1
		continue
	fi
	upper=$(printf '%s' "$name" | tr 'a-z' 'A-Z')
	# help2man reads "NAME (neuronsim) VERSION" from --version as the source
	# ("neuronsim-fwd VERSION (...)" for the daemon)
	if ! grep -q "^\.TH $upper \"1\" .*\"\(neuronsim\|$name\) $VERSION[\" ]" "$page"; then
		echo "FAIL: $name.1 has no title with 'neuronsim $VERSION': $(grep '^\.TH' "$page")"
		fail=1
	fi
	for opt in help version; do
		if ! grep -q -- "\\\\-\\\\-$opt" "$page"; then
			echo "FAIL: $name.1 does not document --$opt"
			fail=1
		fi
	done
done
[ $fail = 0 ] && echo "ok: $# man pages for $VERSION"
exit $fail
