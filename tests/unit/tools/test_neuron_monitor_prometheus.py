"""neuron-monitor-prometheus.py scraped over loopback (docs/monitor.md).

Usage: python test_neuron_monitor_prometheus.py EXPORTER NEURON_MONITOR STATS_WORKLOAD

A workload of 40 executions (a NaN every 10th) runs under neuron-monitor, whose
documents are piped into the exporter; /metrics must carry the Neuron SDK
exporter's metric names and labels with the workload's counts (each execution
counted once, however many documents repeat a group) and its memory. Then the
error paths: lines that are not documents, a port already in use.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

EXPORTER, MONITOR, WORKLOAD = sys.argv[1:4]
DEADLINE_S = 90

# Every name the SDK's exporter serves for these groups (counters with _total).
DOCUMENTED = {
    "neuroncore_utilization_ratio", "neuron_runtime_vcpu_usage_ratio", "neuron_runtime_memory_used_bytes",
    "neuroncore_memory_usage_constants", "neuroncore_memory_usage_model_code",
    "neuroncore_memory_usage_model_shared_scratchpad", "neuroncore_memory_usage_runtime_memory",
    "neuroncore_memory_usage_tensors", "execution_latency_seconds", "execution_errors_total",
    "execution_status_total", "system_vcpu_count", "system_vcpu_usage_ratio", "system_memory_total_bytes",
    "system_memory_used_bytes", "system_swap_total_bytes", "system_swap_used_bytes", "instance_info",
    "neuron_hardware_info",
}
INSTANCE = {"instance_name", "instance_id", "instance_type", "availability_zone", "region", "subnet_id"}

failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL: " + msg, flush=True)


def scrape(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
        text = r.read().decode()
    samples = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            samples.setdefault(s.name, []).append((s.labels, s.value))
    return samples


def value(samples, name, **labels):
    for lab, v in samples.get(name, []):
        if all(lab.get(k) == str(x) for k, x in labels.items()):
            return v
    return None


def start_exporter(stdin):
    p = subprocess.Popen([sys.executable, EXPORTER, "--port", "0", "--address", "127.0.0.1"], stdin=stdin,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    check("port" in line, "the exporter's first line names its port: %r" % line)
    return p, int(line.split()[-1])


def stop(p):
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def test_scraped_metrics(tmp):
    env = dict(os.environ, NEURONSIM_STATS_DIR=tmp, NEURONSIM_SYSFS_ROOT=os.path.join(tmp, "no-sysfs"),
               NEURON_RT_LOG_LEVEL="ERROR")
    cfg = os.path.join(tmp, "monitor.json")
    with open(cfg, "w") as f:
        json.dump({"period": "200ms", "neuron_runtimes": [{"tag_filter": "^prom_", "metrics": [
            {"type": "neuroncore_counters"}, {"type": "execution_stats"}, {"type": "memory_used"},
            {"type": "neuron_runtime_vcpu_usage", "period": "400ms"}]}],
            "system_metrics": [{"type": "vcpu_usage"}, {"type": "memory_info"},
                               {"type": "neuron_hw_counters", "period": "1s"}]}, f)
    report = os.path.join(tmp, "report.json")
    mon = subprocess.Popen([MONITOR, "-c", cfg], env=env, stdout=subprocess.PIPE)
    exp, port = start_exporter(mon.stdout)
    mon.stdout.close()
    wl = None
    try:
        deadline = time.time() + DEADLINE_S
        # The workload starts once neuron-monitor has served a document: a
        # process it finds at its first scan counts from then on (as the
        # Neuron tool's does), so one started before could lose executions.
        while value(scrape(port), "instance_info", instance_type="neuronsim") is None:
            if time.time() > deadline:
                check(False, "neuron-monitor served no document in %d s" % DEADLINE_S)
                return
            time.sleep(0.1)
        wl = subprocess.Popen([WORKLOAD, "-n", "40", "-r", "200", "-e", "10", "-H", "-o", report],
                              env=dict(env, NEURON_PROCESS_TAG="prom_a"))
        while True:
            s = scrape(port)
            done = value(s, "execution_status_total", runtime_tag="prom_a", status_type="completed")
            nan = value(s, "execution_status_total", runtime_tag="prom_a", status_type="completed_with_num_err")
            if os.path.exists(report) and done == 36 and nan == 4:
                break
            if time.time() > deadline:
                check(False, "after %d s: completed %s, completed_with_num_err %s (want 36, 4)"
                      % (DEADLINE_S, done, nan))
                return
            time.sleep(0.2)
        with open(report) as f:
            rep = json.load(f)
        # Several documents later (groups repeated between collections) the
        # totals have not moved: nothing counted twice.
        time.sleep(1.5)
        s = scrape(port)
        check(value(s, "execution_status_total", runtime_tag="prom_a", status_type="completed") == 36,
              "completed stays 36 over later documents")
        check(value(s, "execution_errors_total", runtime_tag="prom_a", error_type="numerical") == 4,
              "execution_errors_total{error_type=numerical} is 4")
        check(value(s, "execution_errors_total", runtime_tag="prom_a", error_type="generic") == 0,
              "execution_errors_total{error_type=generic} is 0")
        missing = DOCUMENTED - set(s)
        check(not missing, "names missing from /metrics: %s" % sorted(missing))
        lab = s["neuroncore_utilization_ratio"][0][0]
        check(set(lab) == INSTANCE | {"runtime_tag", "neuroncore"},
              "neuroncore_utilization_ratio labels: %s" % sorted(lab))
        check(len(s["neuroncore_utilization_ratio"]) == 4, "one utilisation per core of the process")
        check(value(s, "neuroncore_memory_usage_tensors", runtime_tag="prom_a", neuroncore=0,
                    memory_location="None") == rep["memory_by_category"]["tensors"],
              "neuroncore_memory_usage_tensors{neuroncore=0} is the process's tensors")
        check(value(s, "neuroncore_memory_usage_model_code", runtime_tag="prom_a", neuroncore=0)
              == rep["memory_by_category"]["code"], "neuroncore_memory_usage_model_code{neuroncore=0}")
        check(value(s, "neuron_runtime_memory_used_bytes", runtime_tag="prom_a", memory_location="neuron_device")
              == rep["memory_in_use"], "neuron_runtime_memory_used_bytes{memory_location=neuron_device}")
        check(value(s, "neuron_hardware_info", neuron_device_count=1, neuroncore_per_device_count=4) == 1.0,
              "neuron_hardware_info{neuron_device_count=1, neuroncore_per_device_count=4}")
        check(value(s, "system_vcpu_count") == os.cpu_count(), "system_vcpu_count is the CPU count")
        check(value(s, "execution_latency_seconds", runtime_tag="prom_a", percentile="p50") is not None,
              "execution_latency_seconds{percentile=p50}")
        check(value(s, "instance_info", instance_type="neuronsim") == 1.0, "instance_info{instance_type=neuronsim}")
    finally:
        if wl:
            wl.send_signal(signal.SIGTERM)
            wl.wait(timeout=30)
        mon.send_signal(signal.SIGTERM)
        mon.wait(timeout=30)
        stop(exp)


def test_bad_lines_are_skipped_with_a_message():
    doc = {"neuron_runtime_data": [], "system_data": {}, "instance_info": {"instance_type": "neuronsim"},
           "neuron_hardware_info": {"neuron_device_count": 2, "neuroncore_per_device_count": 4}}
    broken = dict(doc, neuron_runtime_data=[{"pid": 1, "neuron_runtime_tag": "x", "error": "", "report": {
        "neuroncore_counters": {"neuroncores_in_use": {"0": {}}, "error": ""}}}])
    exp, port = start_exporter(subprocess.PIPE)
    try:
        exp.stdin.write("not json\n[1, 2]\n" + json.dumps(broken) + "\n" + json.dumps(doc) + "\n")
        exp.stdin.flush()
        deadline = time.time() + DEADLINE_S
        while value(scrape(port), "neuron_hardware_info", neuron_device_count=2) is None:
            if time.time() > deadline:
                check(False, "the valid document after the bad lines was never served")
                return
            time.sleep(0.1)
        exp.stdin.close()
    finally:
        stop(exp)
    err = exp.stderr.read()
    for n in (1, 2, 3):
        check("stdin line %d is not a neuron-monitor document" % n in err, "line %d refused on stderr: %r" % (n, err))


def test_counters_add_up_periods_once():
    """ECC and execution counters: each document's per-period counts are added,
    a group repeated unchanged (not collected again) is not."""
    def doc(ecc, completed, period):
        return {"neuron_runtime_data": [{"pid": 7, "neuron_runtime_tag": "t", "error": "", "report": {
            "execution_stats": {"period": period, "error_summary": {"generic": 0, "numerical": 0},
                                "execution_summary": {"completed": completed, "completed_with_err": 0},
                                "latency_stats": {"total_latency": None, "device_latency": None}, "error": ""}}}],
            "system_data": {"neuron_hw_counters": {"period": period, "neuron_devices": [
                {"neuron_device_index": 0, "mem_ecc_corrected": ecc, "mem_ecc_uncorrected": 0,
                 "sram_ecc_corrected": 0, "sram_ecc_uncorrected": 0}], "error": ""}},
            "instance_info": {"instance_type": "neuronsim"},
            "neuron_hardware_info": {"neuron_device_count": 1, "neuroncore_per_device_count": 4}}
    exp, port = start_exporter(subprocess.PIPE)
    try:
        lines = [doc(2, 10, 1.0), doc(2, 10, 1.0), doc(3, 5, 1.5)]
        exp.stdin.write("".join(json.dumps(d) + "\n" for d in lines))
        exp.stdin.flush()
        deadline = time.time() + DEADLINE_S
        while True:
            s = scrape(port)
            ecc = value(s, "hardware_ecc_events_total", event_type="mem_ecc_corrected", neuron_device_index=0)
            done = value(s, "execution_status_total", runtime_tag="t", status_type="completed")
            if ecc == 5 and done == 15:
                break
            if time.time() > deadline:
                check(False, "ECC %s (want 5) and completed %s (want 15) after three documents" % (ecc, done))
                return
            time.sleep(0.1)
        time.sleep(0.5)
        s = scrape(port)
        check(value(s, "hardware_ecc_events_total", event_type="mem_ecc_corrected", neuron_device_index=0) == 5,
              "hardware_ecc_events_total stays 5")
        check(value(s, "execution_latency_seconds", runtime_tag="t") is None, "no latency without executions")
        exp.stdin.close()
    finally:
        stop(exp)


def test_port_in_use():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        r = subprocess.run([sys.executable, EXPORTER, "--port", str(port), "--address", "127.0.0.1"],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    check(r.returncode == 1, "a port in use exits 1, got %d" % r.returncode)
    check("cannot listen on 127.0.0.1 port %d" % port in r.stderr, "the message names the port: %r" % r.stderr)


def main():
    with tempfile.TemporaryDirectory(prefix="nmprom-") as tmp:
        test_scraped_metrics(tmp)
    test_bad_lines_are_skipped_with_a_message()
    test_counters_add_up_periods_once()
    test_port_in_use()
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
