#!/usr/bin/env python3
"""neuron-monitor-prometheus.py: serve neuron-monitor's documents as Prometheus metrics.

    neuron-monitor | neuron-monitor-prometheus.py [--port 8000] [--address ADDR]

Reads one neuron-monitor JSON document per line on stdin and serves, on
http://ADDR:PORT/metrics, the metric names and labels of the Neuron SDK's
exporter of the same name (docs/monitor.md lists them), through the
prometheus_client package. Each scrape shows the newest document; the
execution and ECC counters add up the per-period counts of every document.
"""

import argparse
import json
import sys
import threading
import time

try:
    from prometheus_client import start_http_server
    from prometheus_client.core import (REGISTRY, CounterMetricFamily,
                                        GaugeMetricFamily)
except ImportError:
    sys.stderr.write("neuron-monitor-prometheus.py: the prometheus_client package is missing: "
                     "install it with 'pip install prometheus_client' (frontends/torch/requirements.txt)\n")
    sys.exit(1)

INSTANCE_LABELS = ("instance_name", "instance_id", "instance_type", "availability_zone", "region",
                   "subnet_id")
# instance_info's fields under the exporter's label names
INSTANCE_FIELDS = {"availability_zone": "instance_availability_zone", "region": "instance_region"}
CORE_MEMORY = ("constants", "model_code", "model_shared_scratchpad", "runtime_memory", "tensors")
ECC_EVENTS = ("mem_ecc_corrected", "mem_ecc_uncorrected", "sram_ecc_corrected", "sram_ecc_uncorrected")
# system_vcpu_usage_ratio's two usage types, each the sum of these /proc/stat shares
VCPU_TYPES = {"user": ("user", "nice"), "system": ("system", "io_wait", "irq", "soft_irq")}


def _labels(instance, **extra):
    out = dict(instance)
    out.update({k: str(v) for k, v in extra.items()})
    return out


class MonitorState:
    """The newest document and the running totals of its per-period counts."""

    def __init__(self):
        self.lock = threading.Lock()
        self.doc = None
        self.instance = {k: "" for k in INSTANCE_LABELS}
        # (labels tuple) -> [total, created]
        self.errors, self.status, self.ecc = {}, {}, {}
        # the last group object counted per (pid, group): a document repeats a
        # group's latest value until it is collected again, which must not count twice
        self.counted = {}
        self.latency = {}  # pid -> the last total_latency percentiles

    @staticmethod
    def _add(table, key, value):
        entry = table.setdefault(key, [0.0, time.time()])
        entry[0] += float(value)

    def _once(self, key, group):
        text = json.dumps(group, sort_keys=True)
        if self.counted.get(key) == text:
            return False
        self.counted[key] = text
        return True

    def ingest(self, doc):
        if not isinstance(doc, dict):
            raise ValueError("a document must be a JSON object")
        info = doc.get("instance_info") or {}
        instance = {k: str(info.get(INSTANCE_FIELDS.get(k, k), "")) for k in INSTANCE_LABELS}
        with self.lock:
            self.instance = instance
            seen = set()
            for rt in doc.get("neuron_runtime_data") or []:
                tag = str(rt.get("neuron_runtime_tag", ""))
                es = (rt.get("report") or {}).get("execution_stats")
                key = (rt.get("pid"), "execution_stats")
                seen.add(key)
                total = ((es or {}).get("latency_stats") or {}).get("total_latency")
                if total:
                    # a period without executions has no latency (null): the
                    # gauge keeps the last one, as the SDK's exporter does
                    self.latency[rt.get("pid")] = total
                if not es or es.get("error") or not self._once(key, es):
                    continue
                for kind, n in (es.get("error_summary") or {}).items():
                    self._add(self.errors, (tag, kind), n)
                for outcome, n in (es.get("execution_summary") or {}).items():
                    self._add(self.status, (tag, outcome), n)
            hw = (doc.get("system_data") or {}).get("neuron_hw_counters")
            seen.add(("system", "neuron_hw_counters"))
            if hw and not hw.get("error") and self._once(("system", "neuron_hw_counters"), hw):
                for dev in hw.get("neuron_devices") or []:
                    for event in ECC_EVENTS:
                        self._add(self.ecc, (str(dev.get("neuron_device_index")), event), dev.get(event, 0))
            self.counted = {k: v for k, v in self.counted.items() if k in seen}
            self.latency = {pid: v for pid, v in self.latency.items() if (pid, "execution_stats") in seen}
            self.doc = doc


class MonitorCollector:
    """Builds the metric families from MonitorState at every scrape."""

    def __init__(self, state):
        self.state = state

    def collect(self):
        with self.state.lock:
            doc, inst = self.state.doc, self.state.instance
            errors, status, ecc = dict(self.state.errors), dict(self.state.status), dict(self.state.ecc)
            latency = dict(self.state.latency)
        if doc is not None:
            yield from self.families(doc, inst, errors, status, ecc, latency)

    @staticmethod
    def families(doc, inst, errors, status, ecc, last_latency):
        il = list(INSTANCE_LABELS)
        rl = il + ["runtime_tag"]
        util = GaugeMetricFamily("neuroncore_utilization_ratio", "NeuronCore utilization ratio",
                                 labels=rl + ["neuroncore"])
        vcpu = GaugeMetricFamily("neuron_runtime_vcpu_usage_ratio", "Runtime vCPU utilization ratio",
                                 labels=rl + ["usage_type"])
        used = GaugeMetricFamily("neuron_runtime_memory_used_bytes", "Runtime memory used bytes",
                                 labels=rl + ["memory_location"])
        # The SDK's exporter leaves a memory_location label set to "None" on
        # these; kept so dashboards written for it match.
        core_mem = {c: GaugeMetricFamily("neuroncore_memory_usage_" + c,
                                         "NeuronCore memory utilization for " + c,
                                         labels=rl + ["memory_location", "neuroncore"]) for c in CORE_MEMORY}
        latency = GaugeMetricFamily("execution_latency_seconds", "Execution latency in seconds",
                                    labels=rl + ["percentile"])
        for rt in doc.get("neuron_runtime_data") or []:
            if rt.get("error"):
                continue
            tag = str(rt.get("neuron_runtime_tag", ""))
            base = [inst[k] for k in INSTANCE_LABELS] + [tag]
            rep = rt.get("report") or {}
            g = rep.get("neuroncore_counters")
            if g and not g.get("error"):
                for core, v in (g.get("neuroncores_in_use") or {}).items():
                    util.add_metric(base + [str(int(core))], v["neuroncore_utilization"] / 100.0)
            g = rep.get("neuron_runtime_vcpu_usage")
            if g and not g.get("error") and g.get("vcpu_usage"):
                for kind in ("user", "system"):
                    vcpu.add_metric(base + [kind], g["vcpu_usage"][kind] / 100.0)
            g = rep.get("memory_used")
            if g and not g.get("error"):
                nb = g["neuron_runtime_used_bytes"]
                for where in ("host", "neuron_device"):
                    used.add_metric(base + [where], nb[where])
                per_core = (nb.get("usage_breakdown") or {}).get("neuroncore_memory_usage") or {}
                for core, cats in per_core.items():
                    for c in CORE_MEMORY:
                        core_mem[c].add_metric(base + ["None", str(int(core))], cats[c])
            g = rep.get("execution_stats")
            if g and not g.get("error"):
                total = (g.get("latency_stats") or {}).get("total_latency") or last_latency.get(rt.get("pid"))
                for pct, v in (total or {}).items():
                    latency.add_metric(base + [pct], v)
        yield from (util, vcpu, used, *core_mem.values(), latency)

        err_f = CounterMetricFamily("execution_errors", "Execution errors total", labels=rl + ["error_type"])
        for (tag, kind), (v, created) in sorted(errors.items()):
            err_f.add_metric([inst[k] for k in INSTANCE_LABELS] + [tag, kind], v, created=created)
        st_f = CounterMetricFamily("execution_status", "Execution status total", labels=rl + ["status_type"])
        for (tag, outcome), (v, created) in sorted(status.items()):
            st_f.add_metric([inst[k] for k in INSTANCE_LABELS] + [tag, outcome], v, created=created)
        ecc_f = CounterMetricFamily("hardware_ecc_events", "Hardware ecc events total",
                                    labels=il + ["event_type", "neuron_device_index"])
        for (dev, event), (v, created) in sorted(ecc.items()):
            ecc_f.add_metric([inst[k] for k in INSTANCE_LABELS] + [event, dev], v, created=created)
        yield from (err_f, st_f, ecc_f)

        ibase = [inst[k] for k in INSTANCE_LABELS]
        sysd = doc.get("system_data") or {}
        g = sysd.get("vcpu_usage")
        if g and not g.get("error"):
            count = GaugeMetricFamily("system_vcpu_count", "System vCPU count", labels=il)
            count.add_metric(ibase, len(g.get("usage_data") or {}))
            ratio = GaugeMetricFamily("system_vcpu_usage_ratio", "System CPU utilization ratio",
                                      labels=il + ["usage_type"])
            avg = g.get("average_usage") or {}
            for kind, parts in VCPU_TYPES.items():
                ratio.add_metric(ibase + [kind], min(sum(avg.get(p, 0.0) for p in parts), 100.0) / 100.0)
            yield count
            yield ratio
        g = sysd.get("memory_info")
        if g and not g.get("error"):
            for src, name in (("memory", "system_memory"), ("swap", "system_swap")):
                for stat in ("total_bytes", "used_bytes"):
                    f = GaugeMetricFamily("%s_%s" % (name, stat), "System %s %s bytes" % (src, stat), labels=il)
                    f.add_metric(ibase, g["%s_%s" % (src, stat)])
                    yield f

        info = GaugeMetricFamily("instance_info", "EC2 instance information", labels=il)
        info.add_metric(ibase, 1.0)
        yield info
        hw = doc.get("neuron_hardware_info")
        if hw:
            hl = ["neuron_device_count", "neuroncore_per_device_count"] + il
            f = GaugeMetricFamily("neuron_hardware_info", "Neuron Hardware Information", labels=hl)
            f.add_metric([str(hw.get("neuron_device_count", "")), str(hw.get("neuroncore_per_device_count", ""))]
                         + ibase, 1.0)
            yield f


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="neuron-monitor-prometheus.py",
        description="Serve neuron-monitor's JSON documents (one per line on stdin) as Prometheus metrics.")
    ap.add_argument("-p", "--port", type=int, default=8000,
                    help="HTTP port to serve /metrics on (default 8000; 0 picks a free one)")
    ap.add_argument("--address", default="0.0.0.0",
                    help="address to listen on (neuronsim's addition; default 0.0.0.0, every interface)")
    args = ap.parse_args(argv)
    if not 0 <= args.port <= 65535:
        ap.error("--port %d is outside 0..65535" % args.port)

    state = MonitorState()
    REGISTRY.register(MonitorCollector(state))
    try:
        server, _thread = start_http_server(args.port, addr=args.address)
    except OSError as exc:
        sys.stderr.write("neuron-monitor-prometheus.py: cannot listen on %s port %d: %s (choose another "
                         "--port or --address)\n" % (args.address, args.port, exc.strerror or exc))
        return 1
    print("Running HTTP prometheus server at %s port %d" % (args.address, server.server_address[1]), flush=True)

    for n, line in enumerate(sys.stdin, 1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
            if not isinstance(doc, dict):
                raise ValueError("not a JSON object")
            # a document the scrape could not render is refused here, not at the scrape
            list(MonitorCollector.families(doc, {k: "" for k in INSTANCE_LABELS}, {}, {}, {}, {}))
            state.ingest(doc)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            sys.stderr.write("neuron-monitor-prometheus.py: stdin line %d is not a neuron-monitor document "
                             "(%s): skipped\n" % (n, exc))
    # neuron-monitor ended: keep serving what it said last until interrupted
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
