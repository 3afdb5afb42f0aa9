"""Analyze for training: `neuronsim-analyze python train.py` runs the unchanged script
without executing on the device and writes model_analysis_result/result.json with the
torch-neuronx report's fields, aggregated over the script's graphs."""

import json
import os
import re
import subprocess
import sys

import pytest

from harness import BUILD, SCRIPTS

SCRIPT = os.path.join(SCRIPTS, "analyze_train.py")
TOOL = os.path.join(os.path.dirname(sys.executable), "neuronsim-analyze")


def _env():
    e = {k: v for k, v in os.environ.items()
         if not k.startswith(("XLA_", "NEURON_", "PJRT_"))}
    e["NEURONSIM_BUILD_DIR"] = BUILD
    e["PYTHONWARNINGS"] = "ignore::DeprecationWarning"
    return e


def _line_of(marker):
    with open(SCRIPT) as f:
        return next(i for i, line in enumerate(f, 1) if marker in line)


@pytest.fixture(scope="module")
def analyzed(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("analyze")
    # the console script's module, so a venv installed before the script existed works
    proc = subprocess.run([sys.executable, "-m", "torch_neuronsim.analyze", "python", SCRIPT],
                          cwd=cwd, env=_env(), capture_output=True, text=True, timeout=600)
    return proc, cwd / "model_analysis_result"


def test_report_has_the_torch_neuronx_fields(analyzed):
    proc, out = analyzed
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open(out / "result.json") as f:
        r = json.load(f)
    assert list(r) == ["torch_neuronx_version", "neuronx_cc_version", "support_percentage",
                       "supported_operators", "unsupported_operators"], r
    assert r["torch_neuronx_version"].startswith("torch_neuronsim ")
    assert r["neuronx_cc_version"].startswith("neuronsim-cc ")
    assert re.fullmatch(r"\d{1,3}\.\d\d%", r["support_percentage"]), r["support_percentage"]
    assert list(r["supported_operators"]) == ["aten"]
    assert list(r["unsupported_operators"]) == ["aten"]
    # the training step's operators, counted by aten name from the HLO metadata
    sup = r["supported_operators"]["aten"]
    for op in ("aten::addmm", "aten::relu", "aten::nll_loss_backward", "aten::mm"):
        assert sup.get(op, 0) > 0, (op, sup)
    # the complex64 metric is what neuronsim-cc refuses (the device has no complex
    # types), named with the user's line
    line = f"analyze_train.py {_line_of('# C64_LINE')}"
    uns = r["unsupported_operators"]["aten"]
    assert all(list(u) == ["kind", "failureAt", "call"] and u["failureAt"] == "neuronsim-cc"
               for u in uns), uns
    at_line = {u["kind"] for u in uns if u["call"].endswith(line)}
    assert {"xla::cast", "aten::mul"} <= at_line, uns
    # the rest of the training step, argmax included, is supported
    others = [u for u in uns if not u["call"].endswith(line)]
    assert others == [], uns
    pct = float(r["support_percentage"][:-1])
    assert 50 < pct < 100, pct


def test_script_ran_without_executing_on_the_device(analyzed):
    proc, out = analyzed
    # analyze mode hands back zero-filled outputs: the loss of a real run is ~1.4
    assert "loss 0.0000 accuracy 0.000" in proc.stdout, proc.stdout + proc.stderr
    assert re.search(r"analyze: 1 graph\(s\), \d+\.\d\d% of \d+ HLO instructions "
                     r"supported, \d+ unsupported operator call\(s\); report written to "
                     r"model_analysis_result/result.json", proc.stderr), proc.stderr
    graphs = list((out / "graphs").glob("*.json"))
    assert len(graphs) == 1, graphs


def test_verbosity_1_adds_the_hlo_instructions(analyzed):
    from torch_neuronsim.analyze import aggregate, load_graphs
    _, out = analyzed
    reports, errors = load_graphs(str(out / "graphs"))
    assert errors == [] and len(reports) == 1
    r, total, supported = aggregate(reports, verbosity=1)
    assert total == reports[0]["total"] and supported < total
    assert any(" dot(" in line for line in r["supported_operators"]["xla"])
    reasons = {u["reason"] for u in r["unsupported_operators"]["xla"]}
    assert "unsupported element type" in reasons, reasons
    assert all(set(u) == {"hlo_instruction", "aten_op", "reason", "line"}
               for u in r["unsupported_operators"]["xla"])


def test_command_line():
    proc = subprocess.run([sys.executable, "-m", "torch_neuronsim.analyze"], env=_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "missing the command" in proc.stderr, proc.stderr
    assert os.path.exists(TOOL), (f"{TOOL} is missing: reinstall the package "
                                  f"(pip install -e frontends/torch) for its console scripts")
    proc = subprocess.run([TOOL, "--help"], env=_env(), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and "--analyze-verbosity" in proc.stdout, proc.stderr
