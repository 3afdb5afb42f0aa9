#!/bin/sh
# neuron-top driven in tmux: started in a detached session of fixed size, a
# workload process runs, the pane is captured twice and the numbers must move;
# the kernel device view reads a fake sysfs tree; the memory tree expands and
# collapses and shows the runtime's figures; q quits; a non-tty, a tiny
# terminal and a bad --interval give clear errors; a killed process is dropped.
# Usage: test_neuron_top.sh NEURON_TOP STATS_WORKLOAD. Exit 77 (skip) without tmux.
set -eu
TOP=$1
WL=$2

if ! command -v tmux >/dev/null 2>&1; then
	echo "SKIP: tmux is not installed (apt install tmux)"
	exit 77
fi

dir=$(mktemp -d /tmp/nsim-top-XXXXXX)
sock="nsim-top-$$"
wl=""
# Private tmux servers (-L) with no user configuration (-f /dev/null); one per
# session, since a server whose last session ends exits while a new client may
# still connect to its socket.
tm() { tmux -L "$sock" -f /dev/null "$@"; }
tmt() { tmux -L "$sock-tiny" -f /dev/null "$@"; }
cleanup() {
	tm kill-server 2>/dev/null || true
	tmt kill-server 2>/dev/null || true
	if [ -n "$wl" ]; then
		kill "$wl" 2>/dev/null || true
		wait "$wl" 2>/dev/null || true
	fi
	rm -rf "$dir"
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*"
	if [ -f "$dir/screen" ]; then
		echo "--- last screen:"
		cat "$dir/screen"
	fi
	exit 1
}

export NEURONSIM_STATS_DIR="$dir/stats" NEURONSIM_SYSFS_ROOT="$dir/sys" NEURON_RT_LOG_LEVEL=OFF
mkdir "$dir/stats" "$dir/sys"
ENVS="NEURONSIM_STATS_DIR=$dir/stats NEURONSIM_SYSFS_ROOT=$dir/sys TERM=xterm"

# A kernel device as driver/nsim_sysfs.c lays it out: neuronsim0 with two cores.
attr() { printf '%s\n' "$3" >"$1/$2.new" && mv "$1/$2.new" "$1/$2"; }
d="$dir/sys/neuronsim0"
mkdir -p "$d/core0" "$d/core1" "$dir/sys/neuronsim-fw0"
for kv in abi_version=1.0 num_cores=2 mem_size=1073741824 mem_in_use=2097152 mem_peak=4194304 \
	cores_reserved=1 fw_attached=1 null_hw=0 jobs_submitted=1000 jobs_success=990 jobs_failure=10 \
	jobs_timeout=1 jobs_num_err=7 jobs_oob=2 jobs_fw_lost=0 jobs_dropped=0; do
	attr "$d" "${kv%%=*}" "${kv#*=}"
done
for c in 0 1; do
	for kv in reserved=$((1 - c)) owner_pid=$((c == 0 ? 4242 : 0)) queued=0 running=0 jobs_submitted=500 \
		jobs_success=495 jobs_failure=5 jobs_timeout=0 jobs_num_err=3 jobs_oob=1 jobs_fw_lost=0 \
		jobs_dropped=0; do
		attr "$d/core$c" "${kv%%=*}" "${kv#*=}"
	done
done

# capture: the pane's text into $dir/screen
capture() { tm capture-pane -p -t top >"$dir/screen"; }
# col PID N: field N of the pid's first row (the PROCESSES table comes first)
col() { awk -v p="$1" -v n="$2" '$1 == p { print $n; exit }' "$dir/screen"; }
# poll SECONDS FUNCTION: captures the screen and calls FUNCTION until it
# succeeds. The deadline only ends a failing test: on a loaded machine (the
# sanitizer build, other builds) the workload and neuron-top may run late.
poll() {
	i=0
	while [ $i -lt $(($1 * 10)) ]; do
		capture
		"$2" && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}
isnum() { case "$1" in ''|*[!0-9]*) return 1 ;; esac; }
# wait_for TEXT SECONDS: until the screen shows TEXT
wait_for() {
	i=0
	while [ $i -lt $(($2 * 10)) ]; do
		capture
		if grep -q -- "$1" "$dir/screen"; then
			return 0
		fi
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

# 1. Errors before any screen is drawn.
set +e
"$TOP" </dev/null >"$dir/out" 2>"$dir/err"
rc=$?
set -e
[ $rc -eq 2 ] || fail "without a terminal: exit $rc, expected 2"
grep -q "needs a terminal" "$dir/err" || fail "without a terminal: $(cat "$dir/err")"
set +e
"$TOP" --interval 0 >"$dir/out" 2>"$dir/err"
rc=$?
set -e
[ $rc -eq 2 ] || fail "--interval 0: exit $rc, expected 2"
grep -q "between 0.1 and 3600" "$dir/err" || fail "--interval 0: $(cat "$dir/err")"

# 2. A tiny terminal: the error stays on the pane.
tmt new-session -d -s tiny -x 40 -y 10 "env $ENVS $TOP 2>&1; echo rc=\$?; sleep 30"
i=0
until tmt capture-pane -p -t tiny | grep -q "rc="; do
	i=$((i + 1))
	[ $i -lt 300 ] || fail "neuron-top in a 40x10 terminal did not exit"
	sleep 0.1
done
tmt capture-pane -p -t tiny >"$dir/screen"
grep -q "rc=2" "$dir/screen" || fail "a 40x10 terminal: not exit status 2"
grep -q "needs at least 80x24" "$dir/screen" || fail "a 40x10 terminal: no clear message"
tmt kill-server

# 3. The live view while a workload runs: 400 executions/s, a NaN every 20th.
NEURON_PROCESS_TAG=top_wl "$WL" --count 0 --rate 400 --nan-every 20 &
wl=$!
tm new-session -d -s top -x 120 -y 60 "env $ENVS $TOP --interval 0.5"
wait_for "top_wl" 60 || fail "the workload (pid $wl) never showed up"
e1="" e2="" rate="" nan=""
counted() { e1=$(col "$wl" 5); isnum "$e1" && [ "$e1" -gt 0 ]; }
poll 60 counted || fail "no executions counted for pid $wl (EXECS '$e1')"
# A later frame: the count moved, NaNs counted, and the rate (two samples) is
# about 400/s: anything clearly alive and not absurd.
moved() {
	e2=$(col "$wl" 5)
	rate=$(col "$wl" 4)
	nan=$(col "$wl" 6)
	isnum "$e2" && isnum "$nan" && [ "$e2" -gt "$e1" ] && [ "$nan" -gt 0 ] &&
		awk -v r="$rate" 'BEGIN { exit !(r + 0 > 100 && r + 0 < 2000) }'
}
poll 60 moved || fail "pid $wl after 60 s: executions $e1 then '$e2' (must grow), EXEC/S '$rate' (about 400), NUM ERR '$nan' (must be > 0)"
echo "executions $e1 -> $e2, $rate/s, $nan NaNs"

# The other sections show the process too.
awk -v p="$wl" '/^NEURONCORES/ { s = 1 } s && $1 == p && $2 == 0 { found = ($4 ~ /%$/); exit } END { exit !found }' \
	"$dir/screen" || fail "no NEURONCORES row with a utilisation for core 0"
awk -v p="$wl" '/^DEVICE MEMORY/ { s = 1 } s && $1 == p { found = 1; exit } END { exit !found }' \
	"$dir/screen" || fail "no DEVICE MEMORY row"
grep -q "SNAPSHOT" "$dir/screen" || fail "no SNAPSHOT memory column"
awk -v p="$wl" '/^HOST MEMORY/ { s = 1 } s && $1 == p && $2 == "stats-workload" { found = 1; exit } END { exit !found }' \
	"$dir/screen" || fail "no HOST MEMORY row naming the program"

# The Neuron tool's sections above neuronsim's tables, for the 'all' tab.
for h in "NeuronCore v2 Utilization" "VCPU Utilization" "System vCPU usage" "Runtime vCPU usage" \
	"Memory Usage Summary" "Host Used Memory" "Device Used Memory" "Model Scratchpad" ">1:all<"; do
	grep -q -- "$h" "$dir/screen" || fail "no '$h' on the screen"
done
grep -q "^  NC0   \[[| ]*\] *[0-9.]*%" "$dir/screen" || fail "no utilisation bar for NC0"
# Device Used Memory's total is the process's IN USE (the only process in 'all')
dtot=$(awk '/Device Used Memory/ { print $5; exit }' "$dir/screen")
inuse=$(awk -v p="$wl" '/^DEVICE MEMORY/ { s = 1 } s && $1 == p { print $2; exit }' "$dir/screen")
[ -n "$dtot" ] && [ "$dtot" = "$inuse" ] || fail "Device Used Memory total '$dtot' is not the process's '$inuse'"
# Tabs: 2 selects the process, F toggles TFLOPS, a/d move between tabs.
tm send-keys -t top 2
wait_for ">2:top_wl<" 30 || fail "key 2 did not select the process's tab"
tm send-keys -t top F
wait_for "NeuronCore v2 Utilization (TFLOPS)" 30 || fail "F did not switch to TFLOPS"
# NC0's TFLOPS: abs and sqrt of 16 floats at about 400 executions/s, about
# 1.3e-08; a positive number, not n/a (the embedded backend counts FLOPs).
# A rate, as the SDK documents it: 32 FLOPs times the core's EXEC/S of the
# same two samples (the NEURONCORES row), within the 3 digits shown.
tflops="" cexec=""
flops_shown() {
	tflops=$(awk '$1 == "NC0" && $3 == "TFLOPS" { print $2; exit }' "$dir/screen")
	cexec=$(awk -v p="$wl" '/^NEURONCORES/ { s = 1 } s && $1 == p && $2 == 0 { print $5; exit }' "$dir/screen")
	awk -v f="$tflops" -v e="$cexec" 'BEGIN { d = f * 1e12 / 32 - e; if (d < 0) d = -d
		exit !(f ~ /^[0-9.e+-]+$/ && f + 0 > 0 && f + 0 < 1e-6 && e + 0 > 0 && d <= 0.01 * e + 0.2) }'
}
poll 30 flops_shown || fail "NC0 shows '$tflops' TFLOPS with core 0 at '$cexec' executions/s: expected 32 FLOPs x that rate"
echo "NC0 $tflops TFLOPS at $cexec executions/s"
tm send-keys -t top F
wait_for "^NeuronCore v2 Utilization\$" 30 || fail "a second F did not switch back"
tm send-keys -t top a
wait_for ">1:all<" 30 || fail "a did not go back to the 'all' tab"
tm send-keys -t top d
wait_for ">2:top_wl<" 30 || fail "d did not go to the next tab"
tm send-keys -t top 1
wait_for ">1:all<" 30 || fail "key 1 did not select 'all'"

# 4. The kernel device from the fake sysfs tree, and its job rate.
grep -q "KERNEL DEVICES ($dir/sys)" "$dir/screen" || fail "no KERNEL DEVICES section"
awk '/^KERNEL DEVICES/ { s = 1 } s && $1 == "0" && $2 == "2" && $4 == "yes" && $8 == "1000" { f = 1 } END { exit !f }' \
	"$dir/screen" || fail "device 0 is not shown with 2 cores, firmware attached and 1000 jobs"
awk '/^KERNEL DEVICES/ { s = 1 } s && $1 == "0" && $2 == "0" && $3 == "4242" { f = 1 } END { exit !f }' \
	"$dir/screen" || fail "core 0 of device 0 is not shown as owned by pid 4242"
if grep -q "neuronsim-fw" "$dir/screen"; then fail "the firmware node is listed as a device"; fi
attr "$d" jobs_submitted 1600
# The first frame with the new count has 600 jobs over one interval.
wait_for " 1600 " 30 || fail "the new job count of device 0 never showed"
jr=$(awk '/^KERNEL DEVICES/ { s = 1 } s && $1 == "0" && $2 == "2" { print $7; exit }' "$dir/screen")
awk -v r="$jr" 'BEGIN { exit !(r + 0 > 100) }' || fail "JOBS/S of device 0 is '$jr' after 600 new jobs"

# 5. Too small while running: said on the screen; back to normal after.
tm resize-window -t top -x 60 -y 20
wait_for "terminal too small" 30 || fail "no 'terminal too small' at 60x20"
tm resize-window -t top -x 120 -y 60
wait_for "PROCESSES" 30 || fail "the view did not come back at 120x60"

# 6. A killed process is dropped and its stats file removed. The file is
# checked while the workload still runs: once it is killed, neuron-top's next
# refresh may remove it before this shell gets to look (seen under load).
f="$dir/stats/neuronsim-stats.$(id -u).$wl"
[ -f "$f" ] || fail "the running workload's file $f is missing"
kill -9 "$wl"
wait "$wl" 2>/dev/null || true
wait_for "no neuronsim process publishes stats" 30 || fail "the killed workload is still listed"
[ ! -e "$f" ] || fail "the stale file $f was not removed"
wl=""

# 7. Memory Usage Details, the tree: a process holding the sqrt model on NC0
# and the const_scratch model with a 16-byte tensor on NC1. Every figure must be
# the runtime's own (its report: nrt_get_vnc_memory_stats per core,
# nrt_neuronsim_get_mem_usage by category, measured around the second load),
# formatted as neuron-top formats bytes.
NEURON_PROCESS_TAG=top_mem "$WL" --count 20 --second-core 1 --hold -o "$dir/report.json" &
wl=$!
i=0
until [ -s "$dir/report.json" ]; do
	i=$((i + 1))
	[ $i -lt 600 ] || fail "the memory workload wrote no report"
	sleep 0.1
done
rep=$(cat "$dir/report.json")
# num KEY [INDEX]: an integer of the report (INDEX: an element of an array)
num() {
	if [ $# -eq 2 ]; then
		printf '%s\n' "$rep" | sed -n "s/.*\"$1\":\[\([0-9,]*\)\].*/\1/p" | cut -d, -f$(($2 + 1))
	else
		printf '%s\n' "$rep" | sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p"
	fi
}
# the second model's figures sit in "second_core":{...}; the process's by category in "memory_by_category"
sub() { printf '%s\n' "$rep" | sed -n "s/.*\"$1\":{\([^}]*\)}.*/\1/p" | sed -n "s/.*\"$2\":\([0-9]*\).*/\1/p"; }
# fmt BYTES: as mon_bytes prints them
fmt() {
	awk -v v="$1" 'BEGIN {
		if (v < 1024) { printf "%dB\n", v; exit }
		x = v / 1024; u = 1
		while (x >= 1024 && u < 5) { x /= 1024; u++ }
		printf (x < 10 ? "%.2f%s\n" : x < 100 ? "%.1f%s\n" : "%.0f%s\n"), x, substr("KMGTP", u, 1)
	}'
}
# tree LABEL [AFTER]: the Host Memory and Device Memory of the first tree row
# whose label is LABEL (after the row labelled AFTER), '-' if none is shown
tree() {
	awk -v l="$1" -v a="${2:-}" '
		/^Memory Usage Details/ { s = 1; seen = (a == "") ; next }
		/^PROCESSES/ { s = 0 }
		!s { next }
		{ t = substr($0, 3, 45); sub(/^ *(\[[+-]\] )? */, "", t); sub(/ *$/, "", t) }
		!seen { if (t == a) seen = 1; next }
		t == l { print $(NF - 1), $NF; f = 1; exit }
		END { if (!f) print "-" }' "$dir/screen"
}
c0=$(num core_bytes_used 0) c1=$(num core_bytes_used 1)
[ -n "$c0" ] && [ -n "$c1" ] || fail "no core_bytes_used in the report: $rep"
m_con=$(sub second_core constants) m_code=$(sub second_core code) m_scr=$(sub second_core scratch)
t1=$(sub second_core tensors)
p_ten=$(sub memory_by_category tensors) p_code=$(sub memory_by_category code)
p_con=$(sub memory_by_category constants) p_scr=$(sub memory_by_category scratch)
host=$(($(num host_tensors) + $(num host_snapshot)))
echo "runtime: NC0 $c0 B, NC1 $c1 B; const_scratch constants $m_con code $m_code scratch $m_scr; NC1 tensors $t1"
[ "$m_con" -gt 0 ] && [ "$m_scr" -gt 0 ] && [ "$t1" -gt 0 ] || fail "the second model took no constants/scratch: $rep"
ready() { [ "$(tree NC1)" = "0B $(fmt "$c1")" ]; }
poll 30 ready || fail "tree: NC1 shows '$(tree NC1)', the runtime reports 0B $(fmt "$c1")"
# collapsed at first: one row per NeuronCore holding memory, and the host
[ "$(tree NC0)" = "0B $(fmt "$c0")" ] || fail "tree: NC0 shows '$(tree NC0)', expected 0B $(fmt "$c0")"
[ "$(tree NC2)" = "-" ] || fail "tree: NC2, which holds nothing, is listed"
[ "$(tree "Host (no NeuronCore)")" = "$(fmt $host) 0B" ] || fail "tree: the host row shows '$(tree "Host (no NeuronCore)")'"
for h in "Model ID" "Host Memory" "Device Memory" "> \[+\] NC0"; do
	grep -q -- "$h" "$dir/screen" || fail "tree: no '$h' on the screen"
done
[ "$(tree "Model Code")" = "-" ] || fail "tree: expanded before any key"
# x expands everything: each model under its core with its categories
tm send-keys -t top x
wait_for "const_scratch" 30 || fail "x did not expand the tree"
# the expanded tree is drawn row by row: a capture can hold its first rows
# before the last (a row with its Host column but no Device column yet, seen
# under load); the rows below are read from a capture showing the last one
expanded() { [ "$(tree Tensors "Host (no NeuronCore)")" != "-" ] &&
	[ "$(tree "Runtime Memory" const_scratch)" = "0B 0B" ]; }
poll 30 expanded || fail "tree: the expanded tree never showed its last rows"
expect() { [ "$(tree "$1" "$2")" = "$3" ] || fail "tree: '$1' after '$2' shows '$(tree "$1" "$2")', expected '$3'"; }
expect const_scratch NC1 "0B $(fmt $((m_con + m_code + m_scr)))"
expect Constants const_scratch "0B $(fmt "$m_con")"
expect "Model Code" const_scratch "0B $(fmt "$m_code")"
expect "Model Scratchpad" const_scratch "0B $(fmt "$m_scr")"
expect Tensors const_scratch "0B $(fmt "$t1")"
expect "Runtime Memory" const_scratch "0B 0B"
expect sqrt NC0 "0B $(fmt $((p_code - m_code + p_con - m_con + p_scr - m_scr)))"
expect "Model Code" sqrt "0B $(fmt $((p_code - m_code)))"
expect Tensors sqrt "0B $(fmt $((p_ten - t1)))"
expect Tensors "Host (no NeuronCore)" "$(fmt "$(num host_tensors)") 0B"
expect "Snapshot copies" "Host (no NeuronCore)" "$(fmt "$(num host_snapshot)") 0B"
awk '/const_scratch/ { f = ($(NF - 2) == "1") } END { exit !f }' "$dir/screen" ||
	fail "tree: const_scratch's Model ID is not 1 (neuron-monitor's model_id)"
# x again collapses it; down/right/left move and open one node
tm send-keys -t top x
collapsed() { [ "$(tree "Model Code")" = "-" ]; }
poll 30 collapsed || fail "a second x did not collapse the tree"
tm send-keys -t top Down
wait_for "> \[+\] NC1" 30 || fail "down did not select NC1"
tm send-keys -t top Right
wait_for "> \[-\] NC1" 30 || fail "right did not expand NC1"
grep -q "const_scratch" "$dir/screen" || fail "NC1 expanded without its model"
if grep -q " sqrt " "$dir/screen"; then fail "right on NC1 expanded NC0 too"; fi
tm send-keys -t top Down
wait_for "^>  *\[+\] const_scratch" 30 || fail "down did not select NC1's model"
tm send-keys -t top Left
wait_for "> \[-\] NC1" 30 || fail "left on a collapsed model did not select its core"
tm send-keys -t top Left
wait_for "> \[+\] NC1" 30 || fail "left did not collapse NC1"
kill "$wl"
wait "$wl" 2>/dev/null || true
wl=""

# 8. q quits.
tm send-keys -t top q
i=0
while tm has-session -t top 2>/dev/null; do
	i=$((i + 1))
	[ $i -lt 300 ] || fail "q did not quit neuron-top"
	sleep 0.1
done
echo "PASS"
