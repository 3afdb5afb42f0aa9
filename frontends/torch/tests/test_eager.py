"""torch-neuronx's eager debug mode: NEURON_USE_EAGER_DEBUG_MODE=1 set before the
import runs every op as it is recorded, each compiled on its own and served from
the compile cache when it repeats; a NaN names the op and the user's line."""

import os
import re

import pytest

from harness import SCRIPTS, assert_close, run_script

SCRIPT = os.path.join(SCRIPTS, "eager_ops.py")


def _line_of(marker):
    with open(SCRIPT) as f:
        for i, line in enumerate(f, 1):
            if marker in line:
                return i
    raise AssertionError(marker)


@pytest.fixture(scope="module")
def eager():
    return run_script("eager_ops.py", args=["nan"], env={"NEURON_USE_EAGER_DEBUG_MODE": "1"})


@pytest.fixture(scope="module")
def lazy():
    return run_script("eager_ops.py")


def test_env_var_turns_on_torch_xla_eager_mode(eager, lazy):
    assert eager.result["eager"] is True
    assert lazy.result["eager"] is False
    # same values either way: x <- x * 0.5 + 1 ten times from 1
    x = 1.0
    for _ in range(10):
        x = x * 0.5 + 1
    assert_close(eager.result["values"], [x] * 16, 0, 0, "eager")
    assert_close(lazy.result["values"], [x] * 16, 0, 0, "lazy")


def test_every_op_executes_and_repeats_hit_the_compile_cache(eager, lazy):
    t = eager.result["torch_xla"]
    # 20 ops in the loop (10 multiplies, 10 adds) plus the tensors' creation,
    # each executed on its own ...
    assert t["EagerOpExecuteTime"] >= 20, t
    assert eager.result["runtime_executions"] >= 20, eager.result
    # ... and compiled once per distinct op: the loop's ops repeat
    assert t["EagerOpCompileTime"] <= 6, t
    report = eager.result["runtime_report"]
    compiles = int(re.search(r"Metric: CompileTime\n  TotalSamples: (\d+)", report).group(1))
    executes = int(re.search(r"Counter: ExecuteComputation\n  Value: (\d+)", report).group(1))
    assert compiles <= 6 and executes >= 20 and compiles * 3 < executes, report
    # the lazy run compiled one graph for the whole loop
    t = lazy.result["torch_xla"]
    assert t["EagerOpExecuteTime"] == 0 and t["ExecuteTime"] <= 3, t


def test_nan_names_the_op_and_the_users_line(eager):
    r = eager.result
    assert r["raised"], "the NaN must fail the execution: " + eager.describe()
    msg = r["message"]
    assert "NaN" in msg and "op_type 'aten__log'" in msg, msg
    # eager mode turns on torch_xla's source annotations itself
    assert f"eager_ops.py:{_line_of('# NAN_LINE')}" in msg, msg
