#!/bin/sh
# neuronsim's neuron-monitor-prometheus.py scraped over loopback while
# neuron-monitor follows a workload (docs/monitor.md). Needs the frontend's venv
# (prometheus_client): $NEURONSIM_VENV, else .venv at the top of the source
# tree; exits 77 (skipped) without it.
# Usage: test_neuron_monitor_prometheus.sh EXPORTER NEURON_MONITOR STATS_WORKLOAD
set -eu
here=$(cd "$(dirname "$0")" && pwd)
venv=${NEURONSIM_VENV:-$here/../../../.venv}
py=$venv/bin/python
if [ ! -x "$py" ]; then
	echo "SKIP: no venv python at $py (make deps creates it)"
	exit 77
fi
if ! "$py" -c 'import prometheus_client' 2>/dev/null; then
	echo "SKIP: prometheus_client is not installed in $venv (frontends/torch/requirements.txt; make deps)"
	exit 77
fi
exec "$py" "$here/test_neuron_monitor_prometheus.py" "$@"
