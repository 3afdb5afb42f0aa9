#!/bin/sh
# libnrt carries the real Neuron Runtime library's SONAME (libnrt.so.1): the PJRT
# plugin and the tools need it by that name, a program that loads "libnrt.so.1"
# (as the SDK's nrtpy does) gets ours, and nrt_get_version names the project's
# version. Usage: test_packaging.sh VERSION LIBNRT PJRT_PLUGIN TOOL...
set -eu
VERSION=$1
LIBNRT=$2
PLUGIN=$3
shift 3
fail=0
soname=$(readelf -d "$LIBNRT" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
if [ "$soname" != libnrt.so.1 ]; then
	echo "FAIL: $LIBNRT has SONAME '$soname', expected libnrt.so.1"
	fail=1
fi
for bin in "$PLUGIN" "$@"; do
	needs=$(readelf -d "$bin" | sed -n 's/.*Shared library: \[\(libnrt[^]]*\)\]/\1/p')
	if [ -n "$needs" ] && [ "$needs" != libnrt.so.1 ]; then
		echo "FAIL: $(basename "$bin") needs $needs, expected libnrt.so.1"
		fail=1
	fi
done
if ! readelf -d "$PLUGIN" | grep -q 'Shared library: \[libnrt.so.1\]'; then
	echo "FAIL: $(basename "$PLUGIN") does not link libnrt.so.1"
	fail=1
fi
# Loaded by its SONAME from the build directory, as a program built against the
# real runtime would.
# A sanitizer build's libnrt cannot be loaded into an uninstrumented python (ASan
# insists on coming first), so that build checks the ELF names only.
PY=/usr/bin/python3
detail=skipped
if [ "${NEURONSIM_SANITIZE:-none}" != none ]; then
	echo "note: $NEURONSIM_SANITIZE build: libnrt.so.1 not loaded from python"
elif [ -x "$PY" ]; then
	detail=$(LD_LIBRARY_PATH=$(dirname "$LIBNRT") "$PY" -c '
import ctypes
lib = ctypes.CDLL("libnrt.so.1")
buf = ctypes.create_string_buffer(4 * 8 + 128 + 64)
assert lib.nrt_get_version(buf, ctypes.c_size_t(len(buf))) == 0
print(buf.raw[32:160].split(b"\0")[0].decode())') || { echo "FAIL: cannot load libnrt.so.1"; fail=1; }
	case "$detail" in
	"neuronsim $VERSION "*) ;;
	*) echo "FAIL: nrt_get_version rt_detail is '$detail', expected 'neuronsim $VERSION ...'"; fail=1 ;;
	esac
fi
[ $fail = 0 ] && echo "ok: SONAME libnrt.so.1, rt_detail '$detail'"
exit $fail
