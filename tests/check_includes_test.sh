#!/bin/sh
# The include check's own test: a small tree that follows the rules passes, and
# each planted violation (a tool including a private header, directly or by a
# relative path; a layer including one above it; a public header including a
# private one; the runtime or a tool including firmware-sim's private headers
# instead of include/fwsim/; meson handing a layer another layer's folder, a private dependency or a
# library it may not link) fails, naming the file and line.
# Usage: check_includes_test.sh CHECK_INCLUDES_SH
set -eu
CHECK=$1

dir=$(mktemp -d /tmp/check-includes-test-XXXXXX)
trap 'rm -rf "$dir"' EXIT INT TERM

# A miniature neuronsim: every layer, its public headers, its meson file.
clean=$dir/clean
mkdir -p "$clean"
cd "$clean"
mkdir -p include/ncc include/nrt include/neuronsim include/fwsim include/uapi/linux common \
	firmware-sim/fwd runtime compiler/hlo compiler/interp pjrt tools driver
printf '#include <stdint.h>\n' > include/neuronsim/isa.h
printf '#include "neuronsim/isa.h"\n' > include/neuronsim/neff.h
printf '#include <stddef.h>\n' > include/ncc/ncc.h
printf '#include "ncc/ncc.h"\n' > include/ncc/ncc_interp.h
printf '#include "nrt/nrt_status.h"\n' > include/nrt/nrt.h
printf '/* status */\n' > include/nrt/nrt_status.h
printf '#include <linux/ioctl.h>\n' > include/uapi/linux/neuronsim.h
printf '#define NEURONSIM_VERSION "0.1.0"\n' > include/uapi/linux/neuronsim_version.h
printf '#include "neuronsim/neff.h"\n#include <string.h>\n' > common/neff.c
printf '#include "neuronsim/isa.h"\n' > include/fwsim/fwsim.h
printf '#include "fwsim/fwsim.h"\n' > firmware-sim/internal.h
printf '#include "internal.h"\n' > firmware-sim/pool.h
printf '#include "internal.h"\n#include "uapi/linux/neuronsim.h"\n' > firmware-sim/core.c
printf '#include "fwsim/fwsim.h"\n#include "../internal.h"\n' > firmware-sim/fwd/fwd_main.c
printf '#include "nrt/nrt.h"\n' > runtime/internal.h
printf '#include "internal.h"\n#include "fwsim/fwsim.h"\n#include "neuronsim/neff.h"\n' > runtime/init.c
printf '#include "ncc/ncc.h"\n#include "neuronsim/isa.h"\n' > compiler/hlo/ir.h
printf '#include "hlo/ir.h"\n' > compiler/interp/interp.h
printf '#include "interp.h"\n#include "neuronsim/neff.h"\n' > compiler/interp/interp.c
printf '#include "ncc/ncc.h"\n#include "nrt/nrt.h"\n#include "uapi/linux/neuronsim_version.h"\n' \
	> pjrt/pjrt_internal.h
printf '#include "pjrt_internal.h"\n' > pjrt/analyze.h
printf '#include "analyze.h"\n' > pjrt/compile.c
printf '#include "nrt/nrt.h"\n' > tools/tool_common.h
printf '#include "ncc/ncc_interp.h"\n#include "tool_common.h"\n#include "uapi/linux/neuronsim.h"\n' \
	> tools/neuron_snapshot.c
printf '#include <linux/module.h>\n' > driver/nsim.h
printf '#include "nsim.h"\n#include <linux/neuronsim.h>\n' > driver/nsim_main.c
cat > common/meson.build <<'EOF'
nscommon_lib = static_library('nscommon', 'neff.c', include_directories : inc)
nscommon_dep = declare_dependency(link_with : nscommon_lib,
  include_directories : inc, dependencies : [m_dep])
EOF
cat > firmware-sim/meson.build <<'EOF'
fwsim_lib = static_library('fwsim', 'core.c',
  include_directories : [inc, include_directories('.')], dependencies : [nscommon_dep])
fwsim_dep = declare_dependency(link_with : fwsim_lib, include_directories : inc,
  dependencies : [nscommon_dep])
fwsim_internal_dep = declare_dependency(link_with : fwsim_lib,
  include_directories : [inc, include_directories('.')])
subdir('fwd')
EOF
cat > firmware-sim/fwd/meson.build <<'EOF'
executable('neuronsim-fwd', 'fwd_main.c', include_directories : include_directories('..'),
  dependencies : [fwsim_dep])
EOF
cat > runtime/meson.build <<'EOF'
nrt_internal_deps = [nscommon_dep, fwsim_dep]
nrt_runtime_inc = include_directories('.')
libnrt = shared_library('nrt', 'init.c', include_directories : [inc, nrt_runtime_inc],
  dependencies : nrt_internal_deps)
nrt_dep = declare_dependency(link_with : libnrt, include_directories : inc)
nrt_static_dep = declare_dependency(link_with : libnrt,
  include_directories : [inc, include_directories('.')])
EOF
cat > compiler/meson.build <<'EOF'
ncc_lib = static_library('ncc', 'interp.c', include_directories : [inc, include_directories('.')],
  dependencies : [nscommon_dep])
ncc_dep = declare_dependency(link_with : ncc_lib, include_directories : inc,
  dependencies : [nscommon_dep])
ncc_internal_dep = declare_dependency(link_with : ncc_lib,
  include_directories : [inc, include_directories('.')])
EOF
cat > pjrt/meson.build <<'EOF'
shared_library('neuronsim_pjrt', 'compile.c', include_directories : inc,
  dependencies : [nrt_dep, ncc_dep])
EOF
cat > tools/meson.build <<'EOF'
tools_inc = include_directories('.')
toolsupport_dep = declare_dependency(include_directories : tools_inc)
executable('neuron-snapshot', 'neuron_snapshot.c',
  dependencies : [toolsupport_dep, nrt_dep, ncc_dep, nscommon_dep])
EOF
cd "$dir"

failures=0
if ! out=$("$CHECK" "$clean" 2>&1); then
	echo "FAIL: the clean tree does not pass:"
	echo "$out"
	failures=$((failures + 1))
else
	echo "ok: the clean tree passes ($out)"
fi

# plant NAME FILE LINE EXPECTED: appends LINE to FILE in a copy of the clean tree;
# the check must fail with a message containing EXPECTED.
plant() {
	name=$1 file=$2 line=$3 expected=$4
	case_dir=$dir/$name
	cp -R "$clean" "$case_dir"
	printf '%s\n' "$line" >> "$case_dir/$file"
	rc=0
	out=$("$CHECK" "$case_dir" 2>&1) || rc=$?
	if [ "$rc" -ne 1 ]; then
		echo "FAIL: $name: exit $rc, want 1; output:"
		echo "$out"
		failures=$((failures + 1))
	elif ! printf '%s\n' "$out" | grep -qF -- "$expected"; then
		echo "FAIL: $name: no line containing '$expected' in:"
		echo "$out"
		failures=$((failures + 1))
	else
		echo "ok: $name"
	fi
}

plant tool-private-header tools/neuron_snapshot.c '#include "interp.h"' \
	'tools/neuron_snapshot.c:4: tools includes compiler/interp/interp.h, a private header of compiler'
plant tool-private-by-path tools/neuron_snapshot.c '#include "../compiler/hlo/ir.h"' \
	'tools/neuron_snapshot.c:4: tools includes compiler/hlo/ir.h, a private header'
plant pjrt-private-header pjrt/compile.c '#include "internal.h"' \
	'pjrt/compile.c:2: pjrt includes'
plant compiler-includes-runtime compiler/interp/interp.c '#include "nrt/nrt.h"' \
	'compiler/interp/interp.c:3: compiler includes include/nrt/nrt.h of runtime, a layer it may not use'
plant common-includes-compiler common/neff.c '#include "ncc/ncc.h"' \
	'common/neff.c:3: common includes include/ncc/ncc.h of compiler, a layer it may not use'
plant fwsim-includes-runtime firmware-sim/core.c '#include "nrt/nrt.h"' \
	'firmware-sim/core.c:3: firmware-sim includes include/nrt/nrt.h of runtime'
plant pjrt-includes-uapi pjrt/compile.c '#include "uapi/linux/neuronsim.h"' \
	'pjrt/compile.c:2: pjrt includes include/uapi/linux/neuronsim.h of uapi, a layer it may not use'
plant driver-includes-common driver/nsim_main.c '#include "neuronsim/isa.h"' \
	'driver/nsim_main.c:3: driver includes include/neuronsim/isa.h of common'
plant public-includes-private include/ncc/ncc_interp.h '#include "../../compiler/hlo/ir.h"' \
	'include/ncc/ncc_interp.h:2: the public header includes compiler/hlo/ir.h'
plant runtime-fwsim-private-by-path runtime/init.c '#include "../firmware-sim/internal.h"' \
	'runtime/init.c:4: runtime includes firmware-sim/internal.h, a private header of firmware-sim'
plant runtime-fwsim-private-header runtime/init.c '#include "pool.h"' \
	'runtime/init.c:4: runtime includes firmware-sim/pool.h, a private header of firmware-sim: use its public headers, include/fwsim/'
plant fwsim-public-includes-private include/fwsim/fwsim.h '#include "../../firmware-sim/internal.h"' \
	'include/fwsim/fwsim.h:2: the public header includes firmware-sim/internal.h'
plant tool-includes-fwsim tools/neuron_snapshot.c '#include "fwsim/fwsim.h"' \
	'tools/neuron_snapshot.c:4: tools includes include/fwsim/fwsim.h of firmware-sim, a layer it may not use'
plant compiler-includes-fwsim compiler/interp/interp.c '#include "fwsim/fwsim.h"' \
	'compiler/interp/interp.c:3: compiler includes include/fwsim/fwsim.h of firmware-sim, a layer it may not use'
mkdir -p "$clean/include/foo" && : > "$clean/include/foo/bar.h"
plant unknown-public-dir tools/neuron_snapshot.c '#include "foo/bar.h"' \
	'tools/neuron_snapshot.c:4: tools includes include/foo/bar.h, in a folder of include/ that no layer owns'
rm -r "$clean/include/foo"
plant meson-foreign-folder compiler/meson.build "x = include_directories('../runtime')" \
	"compiler/meson.build:7: include_directories('../runtime') gives compiler the folder runtime of runtime"
plant meson-private-dep tools/meson.build "executable('t', 't.c', dependencies : [ncc_internal_dep])" \
	'tools/meson.build:5: tools uses ncc_internal_dep, which exports private include paths of compiler'
plant meson-layer-above compiler/meson.build "ncc_more = [nrt_dep]" \
	'compiler/meson.build:7: compiler links nrt_dep of runtime, a layer it may not use'
plant meson-links-runtime-lib compiler/meson.build "ncc_more = [libnrt]" \
	'compiler/meson.build:7: compiler links libnrt of runtime, a layer it may not use'
plant meson-runtime-fwsim-folder runtime/meson.build "x = include_directories('../firmware-sim')" \
	"runtime/meson.build:8: include_directories('../firmware-sim') gives runtime the folder firmware-sim of firmware-sim"
plant meson-runtime-fwsim-internal runtime/meson.build "x = [fwsim_internal_dep]" \
	'runtime/meson.build:8: runtime uses fwsim_internal_dep, which exports private include paths of firmware-sim'
plant meson-fwsim-private-elsewhere pjrt/meson.build "x = [fwsim_dep]" \
	'pjrt/meson.build:3: pjrt links fwsim_dep of firmware-sim, a layer it may not use'

if [ "$failures" -ne 0 ]; then
	echo "$failures case(s) failed"
	exit 1
fi
echo "PASS: the include check accepts the clean tree and rejects every planted violation"
