"""Profiles the PyTorch/XLA way (xp.start_server, xp.trace_detached, xp.Trace,
xp.StepTrace) on neuronsim, opened in TensorBoard's profile plugin and in a real
browser (headless Chromium): the device trace with one row per engine and spans
named by HLO instruction, the runtime's host threads and the user's named blocks."""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import pytest

from harness import run_script

from torch_neuronsim import profiler, xplane

VENV_BIN = os.path.dirname(sys.executable)
CHROMIUM = shutil.which("chromium")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url, timeout=60):
    with urllib.request.urlopen(url, timeout=timeout) as r:  # gzip is handled below
        data = r.read()
        if r.headers.get("Content-Encoding") == "gzip":
            import gzip
            data = gzip.decompress(data)
        return data


@pytest.fixture
def profile_run(tmp_path):
    logdir = tmp_path / "logs"
    # XLA_HLO_DEBUG: the HLO carries the ATen op and the script's line, and so
    # the device spans' details
    run = run_script("profile_tensorboard.py", args=[logdir, _free_port()],
                     env={"XLA_IR_DEBUG": "1", "XLA_HLO_DEBUG": "1"})
    files = list(logdir.glob("plugins/profile/*/*.xplane.pb"))
    assert len(files) == 1, f"one profile run expected: {files}\n" + run.describe()
    api = list((tmp_path / "logs_api").glob("plugins/profile/*/*.xplane.pb"))
    assert len(api) == 1, f"xp.start_trace/stop_trace: one run expected: {api}\n" + run.describe()
    names = [n for n, _ in xplane.plane_names(api[0].read_bytes())]
    assert xplane.HOST_PLANE in names and any("NeuronCore 0" in n for n in names), names
    # the profiler's spool is removed at exit (libnrt's exit writer once
    # recreated it after the removal)
    spool = run.result["spool"]
    assert spool and not os.path.exists(spool), f"spool {spool} left behind\n" + run.describe()
    return logdir, files[0], run


@pytest.fixture
def tensorboard(profile_run, tmp_path):
    logdir = profile_run[0]
    port = _free_port()
    log = open(tmp_path / "tensorboard.log", "wb")
    proc = subprocess.Popen([os.path.join(VENV_BIN, "tensorboard"), "--logdir", str(logdir),
                             "--host", "127.0.0.1", "--port", str(port)],
                            stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 120
        runs = []
        while time.time() < deadline and not runs:
            assert proc.poll() is None, (tmp_path / "tensorboard.log").read_text()[-3000:]
            try:
                runs = json.loads(_get(base + "/data/plugin/profile/runs", timeout=10))
            except OSError:
                time.sleep(1)
        assert runs, "TensorBoard lists no profile run: " + \
            (tmp_path / "tensorboard.log").read_text()[-3000:]
        yield base, runs
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def test_profile_in_tensorboard_and_browser(profile_run, tensorboard, tmp_path):
    logdir, pb, run = profile_run
    names = [n for n, _ in xplane.plane_names(pb.read_bytes())]
    assert xplane.HOST_PLANE in names, names
    assert any(n.startswith(xplane.DEVICE_PLANE_PREFIX + "0 NeuronCore 0") for n in names), names

    base, runs = tensorboard
    run_name = pb.parent.name
    assert run_name in runs, runs
    tools = json.loads(_get(f"{base}/data/plugin/profile/run_tools?run={run_name}"))
    tool = next(t for t in ("trace_viewer@^", "trace_viewer^", "trace_viewer") if t in tools)
    q = urllib.parse.urlencode({"run": run_name, "tag": tool})
    hosts = json.loads(_get(f"{base}/data/plugin/profile/hosts?{q}"))
    host = hosts[0]["hostname"]
    data_path = "/data/plugin/profile/data?" + urllib.parse.urlencode(
        {"run": run_name, "tag": tool, "host": host})
    trace = json.loads(_get(base + data_path, timeout=300))

    # What TensorBoard serves to its trace viewer.
    ev = trace["traceEvents"]
    procs = {e["pid"]: e["args"]["name"] for e in ev
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev
               if e.get("ph") == "M" and e.get("name") == "thread_name"}
    core = next(p for p, n in procs.items() if "NeuronCore 0" in n)
    engines = {n for (p, _), n in threads.items() if p == core}
    assert {"tensor engine", "vector engine", "scalar engine"} <= engines, engines
    spans = [e for e in ev if e.get("ph") == "X"]
    device = [e for e in spans if e["pid"] == core and threads.get((core, e["tid"]), "")
              .endswith("engine")]
    assert len(device) > 100, len(device)
    hlo_named = [e for e in device if re.fullmatch(r"[a-z][a-z0-9_-]*\.[A-Za-z0-9_.]+",
                                                   e["name"])]
    assert len(hlo_named) == len(device), [e["name"] for e in device[:20]]
    assert any(e["args"].get("op_type", "").startswith("aten__") for e in device), \
        device[:3]
    assert any(re.search(r"\.py:\d+$", e["args"].get("source", "")) for e in device), \
        device[:3]
    assert any(e["name"].startswith("dot.") for e in device)
    host_names = {e["name"] for e in spans if e["pid"] != core}
    for block in ("train_step", "forward", "backward", "optimizer"):
        assert block in host_names, sorted(host_names)[:40]
    assert any(n.startswith("nrt_execute SyncTensorsGraph") for n in host_names)
    # device spans lie inside the window's executions (one time base)
    execs = [e for e in spans if e["name"].startswith("nrt_execute")]
    lo = min(e["ts"] for e in execs)
    hi = max(e["ts"] + e["dur"] for e in execs)
    assert all(lo - 1 <= e["ts"] <= hi + 1 for e in device), (lo, hi)

    # A person's view: the trace viewer page in a real browser.
    if CHROMIUM is None:
        pytest.fail("chromium is not installed (scripts/deps.sh installs it)")
    shot = tmp_path / "trace_viewer.png"
    url = (f"{base}/data/plugin/profile/trace_viewer_index.html?is_streaming="
           f"{str(tool == 'trace_viewer@^').lower()}&is_oss=true&trace_data_url="
           + urllib.parse.quote(data_path, safe=""))
    profile_dir = tmp_path / "chromium-profile"
    profile_dir.mkdir()
    cr = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                         "--disable-quic", "--no-first-run", "--disable-background-networking",
                         "--disable-component-update", "--disable-sync",
                         f"--user-data-dir={profile_dir}", "--window-size=1600,1000",
                         "--virtual-time-budget=30000", f"--screenshot={shot}", url],
                        capture_output=True, text=True, timeout=240)
    print(f"trace viewer screenshot: {shot}")
    assert shot.is_file(), cr.stdout + cr.stderr[-3000:]
    from PIL import Image
    img = Image.open(shot).convert("RGB")
    w, h = img.size
    colors = img.getcolors(maxcolors=w * h)
    colored = sum(n for n, (r, g, b) in colors if max(r, g, b) - min(r, g, b) > 60)
    # The trace viewer draws every span as a coloured box; an empty or failed
    # view is white and grey.
    assert colored > 0.01 * w * h, f"trace view looks empty ({colored} coloured pixels): {shot}"
    assert len(colors) > 50, f"screenshot nearly uniform: {shot}"


def _lines(plane_bytes):
    """{line name: (timestamp_ns, [event offsets ps])} of an encoded XPlane."""
    out = {}
    for f, w, v, _ in xplane.iter_fields(plane_bytes):
        if f == 3:
            name, ts, offs = "", 0, []
            for f2, w2, v2, _ in xplane.iter_fields(v):
                if f2 == 2:
                    name = v2.decode()
                elif f2 == 3:
                    ts = v2
                elif f2 == 4:
                    offs += [x for f3, _, x, _ in xplane.iter_fields(v2) if f3 == 2]
            out[name] = (ts, offs)
    return out


def test_execution_begun_before_the_session_is_left_out_whole():
    # An execution whose nrt_execute began before torch_xla's session started is
    # left out with its device spans, even those after the start; one begun after
    # stays whole. Cut span by span, the first kept its late spans without its
    # nrt_execute (a device span before the profile's first execution).
    ev = [
        {"ph": "M", "name": "process_name", "pid": 1 << 24, "args": {"name": "NeuronCore 0"}},
        {"ph": "X", "name": "nrt_execute", "cat": "runtime", "ts": 1.0, "dur": 9.0,
         "args": {"model": "g", "exec_index": 3}},
        {"ph": "X", "name": "dot.5", "cat": "device", "ts": 8.0, "dur": 1.0,
         "args": {"model": "g", "exec_index": 3}},
        {"ph": "X", "name": "nrt_execute", "cat": "runtime", "ts": 12.0, "dur": 5.0,
         "args": {"model": "g", "exec_index": 4}},
        {"ph": "X", "name": "dot.5", "cat": "device", "ts": 13.0, "dur": 1.0,
         "args": {"model": "g", "exec_index": 4}},
        {"ph": "X", "name": "train_step", "cat": "user", "ts": 6.0, "dur": 1.0, "args": {}},
    ]
    kept = profiler._session_events(ev, -5000)  # the session starts 5 us in
    assert [(e["name"], (e.get("args") or {}).get("exec_index")) for e in kept] == [
        ("process_name", None), ("nrt_execute", 4), ("dot.5", 4), ("train_step", None)], kept


def test_device_planes_merge_into_a_torch_xla_profile():
    # What torch_xla writes when the plugin has a profiler extension: a host plane
    # and TSL's Task Environment, times from profile_start_time.
    start = 1_700_000_000_000_000_000
    host = xplane.Plane(0, xplane.HOST_PLANE)
    host.line(7, "python", 1000)
    host.event(7, "forward", 1000, 500)
    space = xplane.encode_space([host, xplane.task_environment_plane(5, start, start + 10**9)])
    assert xplane.profile_start_time(space) == start
    mono_base = 50_000_000_000                 # libnrt's CLOCK_MONOTONIC origin
    wall_minus_mono = start - mono_base + 2000  # the window starts 2 us into the profile
    trace = {"otherData": {"base_ns": mono_base}, "traceEvents": [
        {"ph": "M", "name": "process_name", "pid": 1 << 24, "args": {"name": "NeuronCore 0"}},
        {"ph": "M", "name": "thread_name", "pid": 1 << 24, "tid": 0,
         "args": {"name": "tensor engine"}},
        {"ph": "M", "name": "thread_name", "pid": 42, "tid": 42, "args": {"name": "python"}},
        {"ph": "X", "name": "dot.5", "cat": "device", "pid": 1 << 24, "tid": 0, "ts": 1.5,
         "dur": 2.0, "args": {"op_type": "aten__mm", "flops": 4096}},
        {"ph": "X", "name": "nrt_execute", "cat": "runtime", "pid": 42, "tid": 42, "ts": 0.0,
         "dur": 5.0, "args": {"model": "SyncTensorsGraph.7"}},
    ]}
    hp, devs = xplane.planes_from_nrt_trace(trace, wall_minus_mono - start, md_base=1 << 40,
                                            line_id_base=1 << 31, first_device_id=0)
    merged = xplane.merge_into_space(space, hp, devs)
    names = xplane.plane_names(merged)
    assert [n for n, _ in names] == [xplane.HOST_PLANE, "Task Environment",
                                     xplane.DEVICE_PLANE_PREFIX + "0 NeuronCore 0"], names
    assert len({pid for _, pid in names}) == 3, names  # device plane id moved off 0
    planes = [v for f, _, v, _ in xplane.iter_fields(merged) if f == 1]
    host_lines = _lines(planes[0])
    assert host_lines["python"] == (1000, [0])  # torch_xla's line untouched
    assert host_lines["neuronsim runtime: python (tid 42)"] == (2000, [0])
    dev_lines = _lines(planes[2])
    assert dev_lines["tensor engine"] == (3500, [0])  # 2 us + 1.5 us after the start
