#!/bin/sh
# Guest stage of the kernel-backend tests (run as /extra/run.sh by guest-init,
# cwd /extra): reloads neuronsim.ko with a device layout the runtime tests
# expect, starts neuronsim-fwd on each device, runs the runtime's Check
# tests on the kernel backend, the kill -9 tests of a client and of
# neuronsim-fwd, the backend round-trip bench, then checks that nothing is
# left in sysfs and reloads the module as guest-init had it. Exit status 0 = all passed.
set -u
[ -f ./env.sh ] && . ./env.sh
# For a sanitizer build (run-qemu-kb with KB_SANITIZE); ignored otherwise.
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
S=/sys/class/neuronsim
mark() { echo "NSIM_MARK $1"; }
say() { echo "kb: $*"; }
up() { cut -d' ' -f1 /proc/uptime; }
fails=0
fail() { say "FAIL: $*"; fails=$((fails + 1)); }

# Two devices of four cores: the runtime tests use 1 x 4 cores by default
# and 2 devices x 2 cores in one test; the kernel backend uses a subset of
# the driver's cores and devices when the environment asks for fewer.
rmmod neuronsim || { fail "rmmod of guest-init's module"; exit 1; }
insmod /neuronsim.ko num_devices=2 num_cores=4 mem_size=${KB_MEM_MB:-96} ||
	{ fail "insmod num_devices=2 num_cores=4"; exit 1; }
mark KB_INSMOD_OK

wait_attr() { # file value seconds
	i=0
	while [ "$(cat "$1" 2>/dev/null)" != "$2" ]; do
		i=$((i + 1)); [ $i -gt $(($3 * 20)) ] && return 1; sleep 0.05
	done
}

start_fwd() { # device: in the foreground, a child of this shell
	./neuronsim-fwd --foreground --device "$1" &
	eval "FWD$1=$!"
	wait_attr $S/neuronsim$1/fw_attached 1 20 || fail "neuronsim-fwd did not attach to device $1"
}

stop_fwd() { # device: SIGTERM must detach and exit 0
	eval "p=\$FWD$1"
	kill -TERM "$p"
	wait "$p"; rc=$?
	[ $rc = 0 ] || fail "neuronsim-fwd on device $1 exited $rc on SIGTERM"
	[ "$(cat $S/neuronsim$1/fw_attached)" = 0 ] || fail "device $1 still has a firmware"
}

start_daemon() { # device: daemonised, with a pid file, no program cache, pinned
	./neuronsim-fwd --device "$1" --pidfile /tmp/fwd$1.pid --cache-entries 0 --pin ||
		fail "neuronsim-fwd --device $1 (daemon) exited $?"
	wait_attr $S/neuronsim$1/fw_attached 1 20 || fail "the neuronsim-fwd daemon did not attach to device $1"
	i=0 # the daemon writes it after the parent returned
	while [ ! -s /tmp/fwd$1.pid ]; do
		i=$((i + 1)); [ $i -gt 200 ] && { fail "no pid file for device $1"; break; }; sleep 0.05
	done
}

stop_daemon() { # device: SIGTERM detaches, the pid file goes away
	kill -TERM "$(cat /tmp/fwd$1.pid)"
	wait_attr $S/neuronsim$1/fw_attached 0 20 || fail "the neuronsim-fwd daemon of device $1 did not detach"
	i=0
	while [ -e /tmp/fwd$1.pid ]; do
		i=$((i + 1)); [ $i -gt 200 ] && { fail "pid file of device $1 left behind"; break; }; sleep 0.05
	done
}

./neuronsim-fwd --help >/dev/null || fail "neuronsim-fwd --help"
start_fwd 0
start_daemon 1

if [ ! -e bench-only ]; then
	# The runtime's unit tests, unchanged: with /dev/neuronsim0 present the
	# runtime picks the kernel backend (the tests reset NEURONSIM_BACKEND
	# to auto; it is set here for the record).
	for t in tests/test_runtime_*; do
		name=$(basename "$t")
		t0=$(up)
		NEURONSIM_BACKEND=kernel CK_DEFAULT_TIMEOUT=${KB_CK_TIMEOUT:-120} "$t" >/tmp/$name.log 2>&1
		rc=$?
		grep -E "^[0-9]+%: Checks:|:[EF]:" /tmp/$name.log | head -20 | sed "s/^/kb: $name: /"
		say "$name rc=$rc ($(echo "$(up) $t0" | awk '{printf "%.1f", $1 - $2}') s)"
		if [ $rc = 0 ]; then mark "KB_TEST_OK:$name"; else fail "$name"; tail -30 /tmp/$name.log; fi
	done
	for d in 0 1; do
		for a in mem_in_use cores_reserved; do
			[ "$(cat $S/neuronsim$d/$a)" = 0 ] ||
				fail "device $d $a=$(cat $S/neuronsim$d/$a) after the runtime tests"
		done
	done
	say "device 0: jobs_submitted=$(cat $S/neuronsim0/jobs_submitted) success=$(cat $S/neuronsim0/jobs_success) failure=$(cat $S/neuronsim0/jobs_failure) timeout=$(cat $S/neuronsim0/jobs_timeout) num_err=$(cat $S/neuronsim0/jobs_num_err) oob=$(cat $S/neuronsim0/jobs_oob)"

	# neuron-monitor over a kernel-backend process: the FLOPs neuronsim-fwd
	# reports through the driver (ABI 1.2) are neuroncore_counters.flops (a
	# rate: FLOPs in the period / its length), each execution counted once
	# over the documents: 40 executions of abs and sqrt of 16 f32 = 1280 (an
	# ABI 1.1 driver left the key out as unknown).
	mkdir -p /tmp/nm-stats
	echo '{"period": "200ms", "neuron_runtimes": [{"metrics": [{"type": "neuroncore_counters"}]}]}' >/tmp/nm.json
	NEURONSIM_STATS_DIR=/tmp/nm-stats ./neuron-monitor -c /tmp/nm.json >/tmp/nm.out 2>/tmp/nm.err &
	nm=$!
	NEURONSIM_STATS_DIR=/tmp/nm-stats NEURONSIM_BACKEND=kernel LD_LIBRARY_PATH=$PWD/lib \
		./stats-workload -n 40 -H -o /tmp/nm-report.json &
	wl=$!
	i=0
	while [ ! -s /tmp/nm-report.json ] && [ $i -lt 400 ]; do i=$((i + 1)); sleep 0.05; done
	sleep 1 # a period after the last execution
	kill -TERM $wl; wait $wl
	kill -TERM $nm; wait $nm
	# sum over the documents of flops x period
	flops=$(awk '{ p = 0; if (match($0, /"neuroncore_counters":\{"period":[0-9.eE+-]+/))
		p = substr($0, RSTART + 32, RLENGTH - 32) + 0; l = $0
		while (match(l, /"flops":[0-9]+/)) {
			t += substr(l, RSTART + 8, RLENGTH - 8) * p; l = substr(l, RSTART + RLENGTH) } }
		END { printf "%d", t + 0.5 }' /tmp/nm.out)
	say "neuron-monitor: $(wc -l </tmp/nm.out) documents, flops x period summed: $flops"
	if [ -s /tmp/nm-report.json ] && [ "$flops" -ge 1278 ] && [ "$flops" -le 1282 ]; then
		mark KB_MONITOR_FLOPS_OK
	else
		fail "neuron-monitor flops on the kernel backend: $flops, expected 1280"
		head -c 2000 /tmp/nm.out; cat /tmp/nm.err
	fi

	# kill -9 of a client whose job would run for hours: the driver asks
	# neuronsim-fwd to abort it and the core is free within 1 s.
	t0=$(up)
	if ./nsim-kb-clientkill; then mark KB_CLIENTKILL_OK; else fail "nsim-kb-clientkill"; fi
	say "nsim-kb-clientkill took $(echo "$(up) $t0" | awk '{printf "%.1f", $1 - $2}') s"

	# neuronsim-fwd through raw ioctls: code rewritten after validation,
	# invalid code, profile spans, many regions, deadlines.
	if ./nsim-kb-fwd-test; then mark KB_FWD_TEST_OK; else fail "nsim-kb-fwd-test"; fi

	# kill -9 of neuronsim-fwd in the middle of a job executed through
	# libnrt: the test starts and kills its own daemon on device 0.
	stop_fwd 0
	t0=$(up)
	if ./nsim-kb-fwdkill ./neuronsim-fwd; then mark KB_FWDKILL_OK; else fail "nsim-kb-fwdkill"; fi
	say "nsim-kb-fwdkill took $(echo "$(up) $t0" | awk '{printf "%.1f", $1 - $2}') s"
	start_fwd 0
fi

./nsim-kb-bench ${KB_BENCH_ITERS:-300} && mark KB_BENCH_OK || fail "nsim-kb-bench"

stop_fwd 0
stop_daemon 1
for d in 0 1; do
	for a in mem_in_use cores_reserved fw_attached; do
		[ "$(cat $S/neuronsim$d/$a)" = 0 ] || fail "device $d $a=$(cat $S/neuronsim$d/$a) at the end"
	done
done
rmmod neuronsim && mark KB_RMMOD_OK || fail "rmmod after the kernel-backend tests"

# A driver speaking another ABI major (the same driver built with
# NEURONSIM_ABI_MAJOR 9): nrt_init and neuronsim-fwd refuse it, naming both.
if [ -e neuronsim-abi9.ko ]; then
	insmod ./neuronsim-abi9.ko || fail "insmod of the ABI 9 module"
	ok=1
	./nsim-kb-abi 2>/tmp/abi.err || ok=0
	cat /tmp/abi.err
	grep -q "driver speaks neuronsim ABI 9.0, this runtime speaks ${KB_ABI:-1.1}" /tmp/abi.err || ok=0
	./neuronsim-fwd --foreground 2>/tmp/abi-fwd.err && ok=0
	cat /tmp/abi-fwd.err
	grep -q "driver speaks neuronsim ABI 9.0, neuronsim-fwd speaks ${KB_ABI:-1.1}" /tmp/abi-fwd.err || ok=0
	[ $ok = 1 ] && mark KB_ABI_MISMATCH_OK || fail "ABI mismatch not reported as expected"
	rmmod neuronsim || fail "rmmod of the ABI 9 module"
fi
# Back to guest-init's configuration for its own final checks.
insmod /neuronsim.ko num_cores=2 mem_size=16 || fail "insmod back"
say "$fails failure(s)"
[ $fails = 0 ]
