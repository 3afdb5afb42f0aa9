"""Empty tensors through the plugin: zero-element parameters and outputs are bound to
nothing and come back as empty buffers, beside real outputs of the same graphs."""

from harness import assert_close, run_script


def test_empty_tensors_in_graphs_match_cpu():
    sim = run_script("empty_tensors.py", env={"NEURONSIM_PJRT_TRACE": "1"})
    cpu = run_script("empty_tensors.py", device="CPU")
    assert sim.result["shapes"] == [[0, 3], [0, 3], [0, 4], [3], [5, 3]], sim.result
    assert sim.result["empty"] == [0, 0, 0]
    assert sim.result["out_shape"] == [0, 3]
    assert sim.result["s"] == [0.0, 0.0, 0.0]
    assert_close(sim.result["z"], cpu.result["z"], 1e-5, 1e-5, "x @ w")
    assert_close(sim.result["weight"], cpu.result["weight"], 1e-5, 1e-5, "weight")
    # every graph ran on the device, none failed
    executed = [line for line in sim.stderr.splitlines() if "neuronsim-pjrt: executed" in line]
    assert len(executed) == 3, sim.describe()
    assert "no elements" not in sim.stderr, sim.describe()
