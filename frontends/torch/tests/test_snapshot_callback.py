"""Snapshots the torch-neuronx 2.1 way through torch_xla: the Python callback that
decides per execution, the NeuronCore-0 and rank filters, the 1.13 on-error modes'
memory in the runtime's metrics, and torch_neuronsim's snapshot file reader/writer.
(test_snapshots.py has the on-error dumps and their replay.)"""

import math
import os
import re
import subprocess

import pytest

from harness import BUILD, run_script

TOOL = os.path.join(BUILD, "tools", "neuron-snapshot")
EXE = re.compile(r"-process(\d+)-executable(\d+)-device(\d+)-execution(\d+)\.(\w+)\.")


def _kinds(files):
    """{execution: sorted kinds} of snapshot file names."""
    out = {}
    for f in files:
        m = EXE.search(f)
        assert m, f
        out.setdefault(int(m.group(4)), []).append(m.group(5))
    return {k: sorted(v) for k, v in out.items()}


@pytest.fixture(scope="module")
def callback_run(tmp_path_factory):
    dump = tmp_path_factory.mktemp("cb") / "dump"
    run = run_script("snapshot_callback.py", env={
        "NEURON_RT_VISIBLE_CORES": "0",
        "XLA_FLAGS": f"--xla_dump_hlo_snapshots --xla_dump_to={dump}"})
    return run, dump


def test_callback_decides_per_execution(callback_run):
    run, _ = callback_run
    p = run.result["phases"]
    # the callback got the model name, the addressable device and the count
    calls = run.result["calls"]
    assert [c[1:] for c in calls] == [[0, 0], [0, 1], [0, 2]], calls
    assert all(c[0].startswith("SyncTensorsGraph.") for c in calls), calls
    assert _kinds(p["every_second"]) == {1: ["inputs"]}, p
    assert _kinds(p["outputs_then_both"]) == {3: ["outputs"], 4: ["inputs", "outputs"],
                                             5: ["inputs", "outputs"]}, p
    assert _kinds(p["default"]) == {12: ["inputs"], 13: ["inputs"], 14: ["inputs"]}, p


def test_callback_errors_mean_no_dump_and_do_not_stop_the_run(callback_run):
    run, _ = callback_run
    p = run.result["phases"]
    assert p["broken"] == [] and p["nonsense"] == [], p
    err = run.stderr
    # logged once each, with the user's traceback for the exception
    assert err.count("raised for model 'SyncTensorsGraph.") == 1, err[-3000:]
    assert "KeyError: 'no such rule'" in err, err[-3000:]
    assert err.count("returned 42 (a int)") == 1, err[-3000:]


def test_snapshot_files_read_and_written_from_python(callback_run, tmp_path):
    from torch_neuronsim import snapshot
    _, dump = callback_run
    files = sorted(str(f) for f in dump.rglob("*execution000004.outputs.decomposed_hlo_snapshot"))
    assert len(files) == 1, files
    s = snapshot.read(files[0])
    assert s.meta["kind"] == "outputs" and s.meta["execution"] == 4, s.meta
    assert s.module.startswith("SyncTensorsGraph.") and "tanh" in s.hlo
    (out,) = s.outputs()
    # execution 4 is the second of its phase: x = 2, x @ w = 8 everywhere
    assert out.array.shape == (8, 8) and abs(float(out.array[0, 0]) - math.tanh(8.0)) < 1e-6
    # a rewritten copy is a valid file for the C reader (every checksum)
    copy = str(tmp_path / "copy.snap")
    snapshot.write(copy, dict(s.meta, kind="outputs"), s.hlo, s.tensors)
    info = subprocess.run([TOOL, "info", copy], capture_output=True, text=True, timeout=60)
    assert info.returncode == 0, info.stdout + info.stderr
    assert "every checksum OK" in info.stdout, info.stdout
    assert snapshot.read(copy).outputs()[0].array.tobytes() == out.array.tobytes()
    # the pure-Python XXH64 agrees with libxxhash
    for n in (0, 3, 17, 31, 32, 100, 1001):
        data = bytes(range(256)) * 4
        assert snapshot._xxh64_py(data[:n]) == snapshot.xxh64(data[:n]), n


def test_callback_answers_map_to_the_runtime_words():
    from torch_neuronsim.snapshot import decide
    assert decide(True) == "inputs" and decide(False) == "" and decide(None) == ""
    assert decide("outputs") == "outputs" and decide("inputs,outputs") == "inputs outputs"
    assert decide(("outputs", b"inputs")) == "inputs outputs" and decide("both") == "inputs outputs"
    assert decide("") == "" and decide("Inputs") == "inputs"
    for bad in (42, "everything", ["inputs", 3]):
        with pytest.raises(ValueError):
            decide(bad)


def test_nc0_only_filter_and_rank_in_file_names(tmp_path):
    # two cores, NeuronCore 0 only, and this process is rank 1 with rank 1 dumping
    # (by default only rank 0 dumps: NEURONSIM_SNAPSHOT_RANK, docs/snapshot.md)
    dump = tmp_path / "nc0"
    r = run_script("snapshot_filters.py", env={
        "NEURON_RT_VISIBLE_CORES": "0-1", "NEURON_NC0_ONLY_SNAPSHOT": "1", "RANK": "1",
        "NEURONSIM_SNAPSHOT_RANK": "1",
        "XLA_FLAGS": f"--xla_dump_hlo_snapshots --xla_dump_to={dump}"}).result
    assert r["devices"] == ["xla:0", "xla:1"] and r["sums"] == [256.0, 256.0], r
    # the graph ran on both cores (one executable each); only core 0's dumped
    assert len(r["files"]) == 1, r["files"]
    assert "-process000001-executable000000-device000000-execution000000.inputs." in r["files"][0]


def _metric_p50(report, name):
    m = re.search(r"Metric: " + name + r"\n(?:  .*\n)*?  Percentiles: .*?50%=([\d.]+)(\w+)", report)
    assert m, f"{name} not in:\n{report}"
    return float(m.group(1)) * {"B": 1, "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30}[m.group(2)]


def test_error_mode_memory_in_runtime_metrics():
    # _HYBRID costs both kinds: a device bounce buffer the size of the largest input
    # (32 KiB) and a host copy of all inputs (64 KiB); test_snapshots.py has the
    # other modes' device/host split
    r = run_script("snapshot_memory.py", env={
        "NEURON_RT_VISIBLE_CORES": "0", "NEURON_DUMP_HLO_SNAPSHOT": "ON_NRT_ERROR_HYBRID"}).result
    mem = r["memory"]
    assert mem["snapshot"] == 32 << 10 and mem["host_snapshot"] == 64 << 10, mem
    # the metrics report's DeviceMemoryInUse counts the device copy with the rest
    in_use = _metric_p50(r["report"], "DeviceMemoryInUse")
    assert in_use == mem["in_use"], (in_use, mem)
    assert in_use - mem["snapshot"] == mem["tensors"] + mem["code"] + mem["scratch"] + \
        mem["constants"] + mem["staging"], mem
