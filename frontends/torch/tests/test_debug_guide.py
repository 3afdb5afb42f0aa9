"""The PyTorch/XLA debug guide's scripts, unchanged, on neuronsim vs the CPU."""

import pytest

from harness import assert_close, run_script


@pytest.fixture(scope="module")
def lazy():
    return run_script("lazy_graphs.py"), run_script("lazy_graphs.py", device="CPU")


def test_print_cuts_a_graph_and_mark_step_runs_one(lazy):
    sim, cpu = lazy
    e = sim.result["executions"]
    assert e[1] - e[0] >= 1, "printing a lazy tensor must execute a graph"
    assert e[2] - e[1] == 1, f"mark_step must run one graph for all pending tensors: {e}"
    assert e[3] == e[2], "reading materialised tensors must not execute again"
    # torch_xla decides the graphs, so both devices run the same number of them
    assert e == cpu.result["executions"]


def test_values_match_cpu(lazy):
    sim, cpu = lazy
    for k in ("b", "c", "d", "f", "histc"):
        assert_close(sim.result["values"][k], cpu.result["values"][k], 1e-6, 1e-6, k)


def test_metrics_report(lazy):
    sim, _ = lazy
    report = sim.result["report"]
    for metric in ("CompileTime", "ExecuteTime", "TransferToDeviceTime",
                   "TransferFromDeviceTime"):
        assert f"Metric: {metric}" in report, f"{metric} missing from:\n{report}"
    # histc has no XLA lowering: the CPU fallback is counted as torch_xla counts it
    assert "aten::histc" in sim.result["counters"]
    assert "Counter: aten::histc" in report
