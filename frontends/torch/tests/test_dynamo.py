"""TorchDynamo on neuronsim: torch.compile(backend="neuronsim") without importing
torch_neuronsim, explain's graph breaks, TORCH_LOGS=recompiles, compile errors as
BackendCompilerFailed, and the minifier (after Dynamo and after AOT, for a
compile error and for an accuracy failure) writing repros that reproduce."""

import glob
import os
import re

import pytest

from harness import assert_close, run_script

SCRIPT = "dynamo_minify_me.py"


def test_backend_runs_and_dynamo_tools_work():
    run = run_script("dynamo_tools.py", env={"TORCH_LOGS": "recompiles"})
    r = run.result
    # a CPU model through the backend, and the torch_xla way (model on the device)
    assert_close(r["out_cpu"], r["ref"], 1e-5, 1e-6, "CPU model via backend='neuronsim'")
    assert_close(r["out_xla"], r["ref"], 1e-5, 1e-6, "XLA model via backend='neuronsim'")
    assert r["out_device"] == "cpu"
    assert r["losses"][2] < r["losses"][0], r["losses"]
    assert r["compiles"] >= 3 and r["executions"] >= 6, r  # it ran on the device
    # explain: two graphs around the print
    assert r["graph_count"] == 2 and r["graph_break_count"] == 1, r
    assert any("print" in b for b in r["break_reasons"]), r["break_reasons"]
    assert r["device_graph_count"] == 2 and r["device_break_count"] == 1, r
    assert abs(r["with_break"] - r["with_break_ref"]) < 1e-3
    # recompilations and why
    assert r["recompiled"] == [8.0, 12.0, 18.0]
    err = run.stderr
    assert "Recompiling function scaled" in err, run.describe()
    assert "size mismatch at index 0. expected 4, actual 6" in err, run.describe()
    assert re.search(r"k == 2\.0", err), run.describe()
    # a neuronsim compile failure, as Dynamo's tools see it
    ce = r["compile_error"]
    assert ce["type"] == "BackendCompilerFailed", ce
    assert ce["inner"] == "NeuronSimCompileError", ce
    assert "backend='neuronsim' raised" in ce["message"], ce
    assert "neuronsim compiler" in ce["message"] and "c64" in ce["message"], ce


def _first_run(tmp_path, after, level, inject):
    env = {"TORCHDYNAMO_REPRO_AFTER": after, "TORCHDYNAMO_REPRO_LEVEL": str(level),
           "NEURONSIM_DYNAMO_INJECT": inject}
    run = run_script(SCRIPT, env=env, cwd=tmp_path)
    launchers = glob.glob(str(tmp_path / "torch_compile_debug" / "*" / "minifier" /
                              "minifier_launcher.py"))
    assert len(launchers) == 1, "one minifier launcher expected: " + run.describe()
    text = open(launchers[0]).read()
    assert f"os.environ['NEURONSIM_DYNAMO_INJECT'] = '{inject}'" in text
    return run.result, launchers[0], env


def _repro_body(path):
    text = open(path).read()
    return text[text.index("class Repro"):text.index("def load_args")]


@pytest.mark.parametrize("after,level,inject,expect", [
    ("dynamo", 2, "compile_error:relu", "c64"),
    ("aot", 4, "accuracy:relu", "AccuracyError"),
])
def test_minifier_writes_a_repro_that_reproduces(tmp_path, after, level, inject, expect):
    r, launcher, env = _first_run(tmp_path, after, level, inject)
    if inject.startswith("compile_error"):
        assert r["raised"] == "BackendCompilerFailed" and expect in r["message"], r
    else:
        assert r["raised"] == "AccuracyError", r
    # The launcher as the minifier prints it (after AOT: in-process queries, the
    # default --isolate runs each query in a new interpreter and takes minutes).
    args = ["minify", "--no-isolate"] if after == "aot" else []
    mini = run_script(launcher, env=env, args=args, cwd=tmp_path, check=False)
    assert "Wrote minimal repro out to repro.py" in mini.stdout + mini.stderr, mini.describe()
    repro = tmp_path / "repro.py"
    body = _repro_body(repro)
    # minimal: the relu alone, none of the Linear layers or the tanh
    calls = re.findall(r"= (torch\.[\w.]+)\(", body.split("def forward", 1)[1])
    assert len(calls) == 1 and "relu" in calls[0], body
    rep = run_script(str(repro), env=env, cwd=tmp_path, check=False)
    assert rep.returncode != 0 and expect in rep.stderr, rep.describe()
    if after == "aot":
        # the repro fails because of the bug: without the injected one it passes
        clean = tmp_path / "repro_without_bug.py"
        clean.write_text("\n".join(l for l in repro.read_text().splitlines()
                                   if "NEURONSIM_DYNAMO_INJECT" not in l))
        ok = run_script(str(clean), cwd=tmp_path, check=False)
        assert ok.returncode == 0, ok.describe()


@pytest.mark.parametrize("after,level,inject", [
    ("dynamo", 4, "accuracy:relu"),
    ("aot", 2, "compile_error:relu"),
])
def test_minifier_dumps_the_other_cases(tmp_path, after, level, inject):
    r, launcher, _ = _first_run(tmp_path, after, level, inject)
    if inject.startswith("compile_error"):
        assert r["raised"] == "BackendCompilerFailed", r
        assert "c64" in r["message"], r
        assert "_neuronsim_dynamo.use_in_after_aot_repro()" in open(launcher).read()
    else:
        assert r["raised"] in ("BackendCompilerFailed", "AccuracyError"), r
        assert "Accuracy" in r["message"] or r["raised"] == "AccuracyError", r
