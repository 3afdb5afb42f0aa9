"""The device's error reports reach the Python user through torch_xla."""

import os

from harness import SCRIPTS, run_script


def _line_of(script, marker):
    with open(os.path.join(SCRIPTS, script)) as f:
        for i, line in enumerate(f, 1):
            if marker in line:
                return i
    raise AssertionError(f"{marker} not in {script}")


def test_nan_names_the_hlo_instruction_and_the_users_line():
    # torch_xla re-raises the failed graph's status once more at exit (exit code 1),
    # as it does on any device: the script's own report is what counts
    run = run_script("nan_source.py", env={"XLA_IR_DEBUG": "1", "XLA_HLO_DEBUG": "1"},
                     check=False)
    r = run.result
    assert r is not None, run.describe()
    assert r["raised"], "a NaN on the device must raise in Python: " + run.describe()
    msg = r["message"]
    line = _line_of("nan_source.py", "NAN_LINE")
    assert f"nan_source.py:{line}" in msg, msg
    assert "log" in msg and "NaN" in msg, msg
