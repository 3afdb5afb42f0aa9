"""HLO snapshots of graphs torch_xla ran: on error (the three memory modes) and on
demand (XLA_FLAGS), replayed by neuron-snapshot."""

import glob
import os
import subprocess

import pytest

from harness import BUILD, run_script

REPLAY = os.path.join(BUILD, "tools", "neuron-snapshot")


def _replay(path):
    return subprocess.run([REPLAY, "replay", path], capture_output=True, text=True,
                          timeout=300)


@pytest.mark.parametrize("mode,device_copy,host_copy", [
    ("ON_NRT_ERROR", True, False),
    ("ON_NRT_ERROR_HYBRID", True, True),
    ("ON_NRT_ERROR_CPU", False, True),
])
def test_snapshot_on_error_modes(tmp_path, mode, device_copy, host_copy):
    dump = tmp_path / "dump"
    run = run_script("snapshot_modes.py", env={
        "NEURON_DUMP_HLO_SNAPSHOT": mode, "XLA_FLAGS": f"--xla_dump_to={dump}"},
        check=False)  # torch_xla re-raises the failed graph at exit
    r = run.result
    assert r is not None, run.describe()
    assert r["raised"], "the NaN must fail the execution: " + run.describe()
    mem = r["memory"]
    assert (mem["snapshot"] > 0) == device_copy, mem
    assert (mem["host_snapshot"] > 0) == host_copy, mem
    files = glob.glob(str(dump / "**" / "*error*"), recursive=True)
    assert len(files) == 1, f"one error snapshot expected in {dump}: {files}\n" + run.describe()
    rep = _replay(files[0])
    # exit 1: the replay reproduced the NaN and names the instruction
    assert rep.returncode == 1, rep.stdout + rep.stderr
    assert "sqrt" in (rep.stdout + rep.stderr)


def test_on_demand_snapshots_replay(tmp_path):
    dump = tmp_path / "dump"
    run_script("train_mlp_sgd.py", args=[2], env={
        "XLA_FLAGS": f"--xla_dump_hlo_snapshots --xla_dump_to={dump}"})
    files = sorted(glob.glob(str(dump / "**" / "*.inputs.decomposed_hlo_snapshot"),
                             recursive=True))
    assert files, f"no snapshots in {dump}: {os.listdir(tmp_path)}"
    assert all("-process000000-executable" in os.path.basename(f) for f in files), files
    rep = _replay(files[-1])
    assert rep.returncode == 0, rep.stdout + rep.stderr
