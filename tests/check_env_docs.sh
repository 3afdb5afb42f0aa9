#!/bin/sh
# Every environment variable the project's code reads is named in docs/env.md
# (issue #14: the page lists, per variable, what matches the Neuron tools and
# what neuronsim adds). Looked for in the C sources outside tests/:
#   getenv("NAME") and secure_getenv("NAME");
#   env_*("NAME", ...), the parsing helpers of runtime/ (env_u32, env_bool, ...);
#   "NAME_%s" formats whose expansion is read (NEURON_RT_LOG_LEVEL_<COMPONENT>):
#     the prefix must be on the page;
#   runtime/env.c's tables of the Neuron Runtime's documented variables
#     (implemented, not implemented, removed; "NAME_*" stands for a family);
#   any "NEURONSIM_..." string (neuronsim's names are variables, also when a
#     constant holds the name before getenv reads it);
# and in the torch_neuronsim package: os.environ.get("NAME"), os.getenv("NAME")
# and any 'NEURONSIM_...' string.
# Names of the C library and the terminal (HOME, PATH, TMPDIR) need no entry.
# Usage: check_env_docs.sh SOURCE_ROOT. Exit 0 all named, 1 some missing (listed).
set -eu
root=$1
doc="$root/docs/env.md"
[ -f "$doc" ] || { echo "FAIL: $doc does not exist"; exit 1; }

c_dirs=""
for d in runtime common tools compiler pjrt driver firmware-sim frontends include; do
	[ -d "$root/$d" ] && c_dirs="$c_dirs $root/$d"
done
# shellcheck disable=SC2086 # c_dirs is a list of directories
c_files=$(find -L $c_dirs -type f \( -name '*.c' -o -name '*.h' -o -name '*.cc' -o -name '*.cpp' \) \
	-not -path '*/tests/*' | sort)
py_files=""
[ -d "$root/frontends/torch/torch_neuronsim" ] &&
	py_files=$(find -L "$root/frontends/torch/torch_neuronsim" -type f -name '*.py' | sort)

names=$(mktemp)
trap 'rm -f "$names"' EXIT
{
	# shellcheck disable=SC2086
	[ -z "$c_files" ] || grep -hoE '\b(secure_)?getenv\("[A-Za-z_][A-Za-z0-9_]*"|\benv_[a-z0-9_]+\("[A-Za-z_][A-Za-z0-9_]*"' \
		$c_files 2>/dev/null | sed -E 's/.*\("//; s/"$//'
	# shellcheck disable=SC2086
	[ -z "$c_files" ] || grep -hoE '"(NEURON|NEURONSIM|XLA)_[A-Z0-9_]*_%s"' $c_files 2>/dev/null |
		sed -E 's/^"//; s/%s"$/*/'
	[ ! -f "$root/runtime/env.c" ] || grep -hoE '"(NEURON|NEURONSIM|XLA)_[A-Z0-9_]+\*?"' "$root/runtime/env.c" |
		tr -d '"'
	# shellcheck disable=SC2086
	[ -z "$c_files" ] || grep -hoE '"NEURONSIM_[A-Z0-9_]+"' $c_files 2>/dev/null | tr -d '"'
	# shellcheck disable=SC2086
	[ -z "$py_files" ] || grep -hoE "[\"']NEURONSIM_[A-Z0-9_]+[\"']" $py_files 2>/dev/null | tr -d "\"'"
	# shellcheck disable=SC2086
	[ -z "$py_files" ] || grep -hoE "(environ\.get|getenv)\([\"'][A-Za-z_][A-Za-z0-9_]*[\"']" $py_files 2>/dev/null |
		sed -E "s/.*\([\"']//; s/[\"']$//"
} | sort -u >"$names"

missing=0
checked=0
while IFS= read -r name; do
	case "$name" in
	HOME | PATH | TMPDIR | USER | SHELL | LANG | LC_*) continue ;;
	esac
	checked=$((checked + 1))
	case "$name" in
	*\*)
		# a family: its prefix on the page
		if ! grep -qF -- "${name%\*}" "$doc"; then
			echo "MISSING: the variables $name (read by the code) are not in docs/env.md"
			missing=$((missing + 1))
		fi
		;;
	*)
		if ! grep -qw -- "$name" "$doc"; then
			echo "MISSING: $name (read by the code) is not in docs/env.md"
			missing=$((missing + 1))
		fi
		;;
	esac
done <"$names"

if [ "$checked" -lt 20 ]; then
	echo "FAIL: found only $checked variable names in $root: the patterns no longer match the code"
	exit 1
fi
if [ "$missing" -gt 0 ]; then
	echo "FAIL: $missing of $checked variable names missing from docs/env.md"
	exit 1
fi
echo "PASS: all $checked variable names the code reads are in docs/env.md"
