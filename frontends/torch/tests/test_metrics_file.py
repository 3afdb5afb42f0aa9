"""XLA_METRICS_FILE under torch_xla on NEURONSIM: one writer (torch_xla's
metrics_saver), so the [MetricsData; step=N] headers strictly increase; the
runtime's own report goes to NEURONSIM_RUNTIME_METRICS_FILE when asked."""

import re

from harness import run_script

_HEADER = re.compile(r"^\[MetricsData; step=(\d+)\]$", re.MULTILINE)


def _steps(text):
    return [int(n) for n in _HEADER.findall(text)]


def test_metrics_file_has_one_writer(tmp_path):
    xla = tmp_path / "metrics.txt"
    own = tmp_path / "runtime-metrics.txt"
    run = run_script("metrics_file_steps.py",
                     env={"XLA_METRICS_FILE": str(xla), "NEURONSIM_RUNTIME_METRICS_FILE": str(own)})
    text = xla.read_text()
    steps = _steps(text)
    # torch_xla writes at every mark_step (and loss.item() may add steps): at
    # least the 4 steps, numbered 0, 1, 2 ... with no number twice
    assert len(steps) >= run.result["steps"], text[:2000]
    assert steps == list(range(len(steps))), f"step headers {steps}: two writers?"
    # torch_xla's own report, not the runtime's (DeviceMemoryInUse is
    # neuronsim's runtime metric only)
    assert "Metric: CompileTime" in text and "Metric: ExecuteTime" in text, text[:2000]
    assert "DeviceMemoryInUse" not in text, text[:2000]
    # the runtime's report, one per execution, in its own file
    rt = own.read_text()
    rsteps = _steps(rt)
    assert rsteps and rsteps == list(range(len(rsteps))), rsteps
    assert "Metric: DeviceMemoryInUse" in rt and "Counter: ExecuteComputation" in rt, rt[:2000]
    last = rt[rt.rindex("[MetricsData; step="):]
    m = re.search(r"Counter: ExecuteComputation\n  Value: (\d+)\n", last)
    assert m and int(m.group(1)) == len(rsteps), last


def test_runtime_writes_no_metrics_file_under_torch_xla_by_default(tmp_path):
    xla = tmp_path / "metrics.txt"
    run_script("metrics_file_steps.py", env={"XLA_METRICS_FILE": str(xla)})
    text = xla.read_text()
    steps = _steps(text)
    assert steps and steps == list(range(len(steps))), steps
    assert "DeviceMemoryInUse" not in text, text[:2000]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metrics.txt"]
