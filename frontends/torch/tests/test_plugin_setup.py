"""How a user reaches the device: PJRT_DEVICE=NEURONSIM through the entry point,
PJRT_DEVICE=LIBRARY with PJRT_LIBRARY_PATH, NEURON_RT_VISIBLE_CORES; and the
runtime's own metrics read from Python."""

import os

from harness import BUILD, run_script


def test_entry_point_device():
    r = run_script("runtime_view.py").result
    assert r["value"] == 192.0
    assert r["device_type"] == "NEURONSIM"
    assert r["devices"], r


def test_library_device():
    lib = os.path.join(BUILD, "pjrt", "libneuronsim_pjrt.so")
    run = run_script("runtime_view.py", device="LIBRARY", env={"PJRT_LIBRARY_PATH": lib})
    assert run.result["value"] == 192.0, run.describe()


def test_visible_cores_give_devices():
    r = run_script("runtime_view.py", env={"NEURON_RT_VISIBLE_CORES": "0-1"}).result
    assert len(r["devices"]) == 2, r


def test_runtime_metrics_readable_from_python():
    r = run_script("runtime_view.py").result
    assert "runtime_error" not in r, r.get("runtime_error")
    assert "CompileTime" in r["runtime_report"], r["runtime_report"]
    assert r["memory"]["in_use"] > 0
