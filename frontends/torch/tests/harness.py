"""Runs an unchanged user script in a fresh interpreter on a chosen PJRT device.

Each run is its own process: torch_xla fixes its device type at the first use, and
the CPU reference must not share a process with the simulated device. A script
reports by printing one line "RESULT <json>" (the last such line wins).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "scripts")
CHECKOUT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
BUILD = os.environ.get("NEURONSIM_BUILD_DIR", os.path.join(CHECKOUT, "build"))


class ScriptRun:
    def __init__(self, proc, result):
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.result = result

    def describe(self):
        return (f"exit {self.returncode}\n--- stdout (tail)\n{self.stdout[-4000:]}\n"
                f"--- stderr (tail)\n{self.stderr[-6000:]}")


def run_script(name, device="NEURONSIM", args=(), env=None, timeout=900, cwd=None,
               check=True):
    """Runs tests/scripts/NAME with PJRT_DEVICE=device; returns a ScriptRun. With
    check, a non-zero exit or a missing RESULT line fails with the script's output."""
    e = dict(os.environ)
    # the user's environment must not leak a device choice or debug settings in
    for k in list(e):
        if k.startswith(("XLA_", "NEURON_", "PJRT_")) or k in ("TORCH_LOGS",):
            del e[k]
    e["PJRT_DEVICE"] = device
    e.setdefault("NEURONSIM_BUILD_DIR", BUILD)
    e["PYTHONUNBUFFERED"] = "1"
    e["PYTHONWARNINGS"] = "ignore::DeprecationWarning"
    if env:
        e.update(env)
    # The plugin's persistent compile cache is on by default (at
    # /var/tmp/neuron-compile-cache): unless the test chooses a cache itself, every
    # run gets its own empty one, so no run reuses another run's NEFFs.
    own_cache = None
    if "NEURON_COMPILE_CACHE_URL" not in e and "NEURON_CC_FLAGS" not in e:
        own_cache = tempfile.mkdtemp(prefix="neuronsim-test-cache-")
        e["NEURON_COMPILE_CACHE_URL"] = own_cache
    path = name if os.path.isabs(name) else os.path.join(SCRIPTS, name)
    try:
        proc = subprocess.run([sys.executable, path, *map(str, args)], env=e, cwd=cwd,
                              capture_output=True, text=True, timeout=timeout)
    finally:
        if own_cache:
            shutil.rmtree(own_cache, ignore_errors=True)
    result = None
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            result = json.loads(line[len("RESULT "):])
    run = ScriptRun(proc, result)
    if check:
        assert proc.returncode == 0, f"{name} on {device} failed: " + run.describe()
        assert result is not None, f"{name} on {device} printed no RESULT: " + run.describe()
    return run


def assert_close(actual, expected, rtol, atol, what):
    """Elementwise |a - e| <= atol + rtol * |e| over nested lists/floats."""
    import numpy as np
    a = np.asarray(actual, dtype=np.float64)
    b = np.asarray(expected, dtype=np.float64)
    assert a.shape == b.shape, f"{what}: shape {a.shape} vs {b.shape}"
    bad = ~(np.abs(a - b) <= atol + rtol * np.abs(b))
    if bad.any():
        i = np.argwhere(bad)[0]
        raise AssertionError(
            f"{what}: {int(bad.sum())} of {a.size} values beyond rtol={rtol} atol={atol}; "
            f"first at {tuple(i)}: neuronsim {a[tuple(i)]!r} vs CPU {b[tuple(i)]!r}")
