#!/bin/sh
# The metrics report through the tools: neuron-run --metrics prints it at exit, and
# neuronsim-train records CompileTime / UncachedCompile / CachedCompile, seen
# through XLA_METRICS_FILE (appended at every execution).
# Usage: test_tools_metrics.sh NEURON_RUN NEURONSIM_CC NEURONSIM_TRAIN HLO_DIR
set -eu
NEURON_RUN=$1
NEURONSIM_CC=$2
NEURONSIM_TRAIN=$3
HLO=$4/mlp-mini_mlp_single.hlo

dir=$(mktemp -d /tmp/nsim-metrics-XXXXXX)
trap 'rm -rf "$dir"' EXIT
unset XLA_METRICS_FILE XLA_METRICS_SAMPLES XLA_METRICS_PERCENTILES NEURON_CC_FLAGS || true

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# Line $2 of the report in file $1 directly after the line "$3".
after() {
	awk -v h="$2" 'found { print; exit } $0 == h { found = 1 }' "$1"
}

"$NEURONSIM_CC" compile "$HLO" -o "$dir/m.neff" --no-cache >/dev/null

# 1. neuron-run --metrics: the report follows the status line.
"$NEURON_RUN" "$dir/m.neff" -r -n -R 3 --metrics >"$dir/out.txt"
grep -q '^status: NRT_SUCCESS' "$dir/out.txt" || fail "no status line"
[ "$(after "$dir/out.txt" 'Metric: ExecuteTime')" = "  TotalSamples: 3" ] ||
	fail "ExecuteTime should have 3 samples: $(cat "$dir/out.txt")"
[ "$(after "$dir/out.txt" 'Counter: ExecuteComputation')" = "  Value: 3" ] ||
	fail "ExecuteComputation should be 3"
grep -q '^Metric: TransferToDeviceTime$' "$dir/out.txt" || fail "no TransferToDeviceTime"
grep -q '^  Percentiles: 1%=[0-9]' "$dir/out.txt" || fail "no percentiles"
status_line=$(grep -n '^status:' "$dir/out.txt" | cut -d: -f1)
first_metric=$(grep -n '^Metric:' "$dir/out.txt" | head -1 | cut -d: -f1)
[ "$first_metric" -gt "$status_line" ] || fail "the report must come after the status line"

# 2. Without --metrics, no report.
"$NEURON_RUN" "$dir/m.neff" -r -n >"$dir/out2.txt"
! grep -q '^Metric:' "$dir/out2.txt" || fail "report printed without --metrics"

# 3. neuronsim-train: an uncached compile, then a cache hit.
export NEURON_CC_FLAGS="--cache_dir=$dir/cache"
XLA_METRICS_FILE="$dir/train1.txt" "$NEURONSIM_TRAIN" --steps 3 -O2 --set 0=-0.1 "$HLO" >/dev/null
[ "$(after "$dir/train1.txt" 'Counter: UncachedCompile')" = "  Value: 1" ] ||
	fail "UncachedCompile should be 1: $(cat "$dir/train1.txt")"
grep -q '^Metric: CompileTime$' "$dir/train1.txt" || fail "no CompileTime"
! grep -q '^Counter: CachedCompile$' "$dir/train1.txt" || fail "CachedCompile on a first compile"
XLA_METRICS_FILE="$dir/train2.txt" "$NEURONSIM_TRAIN" --steps 3 -O2 --set 0=-0.1 "$HLO" >/dev/null
[ "$(after "$dir/train2.txt" 'Counter: CachedCompile')" = "  Value: 1" ] ||
	fail "CachedCompile should be 1: $(cat "$dir/train2.txt")"
! grep -q '^Metric: CompileTime$' "$dir/train2.txt" || fail "a cache hit is not a CompileTime sample"
# one report per execution: 3 steps
[ "$(grep -c '^Metric: ExecuteTime$' "$dir/train2.txt")" -ge 3 ] || fail "fewer reports than steps"
# framed as torch_xla's metrics_saver: a [MetricsData; step=N] header per report, N from 0
[ "$(head -1 "$dir/train2.txt")" = "[MetricsData; step=0]" ] || fail "first line: $(head -1 "$dir/train2.txt")"
[ "$(grep -c '^\[MetricsData; step=[0-9]*\]$' "$dir/train2.txt")" = "$(grep -c '^Metric: ExecuteTime$' "$dir/train2.txt")" ] ||
	fail "not one header per report"
n=$(grep -c '^Metric: ExecuteTime$' "$dir/train2.txt")
grep -q "^\[MetricsData; step=$((n - 1))\]\$" "$dir/train2.txt" || fail "steps do not count 0..$((n - 1))"
echo "PASS"
