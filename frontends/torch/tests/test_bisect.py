"""Backend bisection: `neuronsim-bisect python train.py` runs each captured graph on
the reference interpreter, on the device and on XLA:CPU, instruction by instruction,
and names the first instruction where they diverge or a NaN appears."""

import glob
import os
import re
import subprocess
import sys

import pytest

from harness import BUILD, SCRIPTS

SCRIPT = os.path.join(SCRIPTS, "bisect_nan.py")


def _env():
    e = {k: v for k, v in os.environ.items()
         if not k.startswith(("XLA_", "NEURON_", "PJRT_"))}
    e["NEURONSIM_BUILD_DIR"] = BUILD
    e["PYTHONWARNINGS"] = "ignore::DeprecationWarning"
    return e


def _bisect(args, cwd):
    # the console script's module, so a venv installed before the script existed works
    return subprocess.run([sys.executable, "-m", "torch_neuronsim.bisect", *args], cwd=cwd,
                          env=_env(), capture_output=True, text=True, timeout=900)


def _nan_line():
    with open(SCRIPT) as f:
        return next(i for i, line in enumerate(f, 1) if "# NAN_LINE" in line)


@pytest.fixture(scope="module")
def script_run(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("bisect")
    return _bisect(["python", SCRIPT], cwd), cwd / "neuronsim-bisect"


def test_script_graphs_agree_until_the_nan_and_all_three_name_it(script_run):
    proc, work = script_run
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    assert "the command ran on NEURONSIM" in out and "the command ran on CPU" in out, out
    # step 0 is fine on every backend, instruction by instruction
    assert re.search(r"execution000000\.inputs\.decomposed_hlo_snapshot: module "
                     r"SyncTensorsGraph\.\d+, executable 0, execution 0: \d+ instructions agree "
                     r"on the interpreter, the device and XLA:CPU", out), out
    # step 1 produces the NaN: no backend disagrees, each names log at the user's line
    assert "first divergence" not in out, out
    where = rf"'log\.\d+' \(log, op_type aten__log, \S*bisect_nan\.py:{_nan_line()}"
    assert re.search(r"interpreter: first NaN: produced by HLO instruction " + where, out), out
    assert re.search(rf"XLA:CPU: first NaN in HLO instruction " + where, out), out
    assert re.search(rf"device: .*hlo 'log\.\d+', op_type 'aten__log', at \S*bisect_nan\.py:"
                     rf"{_nan_line()}\) produced 1 NaN", out), out
    assert re.search(r"result: diverged or produced NaN/Inf \(2 execution\(s\) checked", out), out


def test_snapshot_file_at_zero_tolerance_names_the_first_differing_instruction(script_run,
                                                                                tmp_path):
    # the same graph from its snapshot file and XLA:CPU's dump of the module: at zero
    # tolerance the backends' last-bit differences show, and the first one is named with
    # its source line (the script's, or torch's own module for an nn.Linear's dot)
    _, work = script_run
    snap = glob.glob(str(work / "snapshots" / "**" / "*execution000000.inputs.*"),
                     recursive=True)
    proto = glob.glob(str(work / "cpu_dump" / "*before_optimizations.hlo.pb"))
    assert len(snap) == 1 and len(proto) == 1, (snap, proto)
    proc = _bisect(["-t", "0,0", "--proto", proto[0], snap[0]], tmp_path)
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    m = re.search(r"first divergence: HLO instruction '([\w.]+)' \((\w[\w-]*), op_type (\w+), "
                  r"\S+\.py:(\d+), HLO line \d+\): (.*)", out)
    assert m, out
    assert m.group(2) not in ("parameter", "constant"), out
    for pair in ("device vs interpreter", "device vs XLA:CPU", "interpreter vs XLA:CPU"):
        assert re.search(rf"    {pair}: (match|MISMATCH)", out), out
    assert "MISMATCH" in out and "allowed 0" in out, out
    # everything the tool made stays for a look: the edited snapshot replays as is
    edited = re.search(r"edited snapshot: (\S+)", out).group(1)
    rep = subprocess.run([os.path.join(BUILD, "tools", "neuron-snapshot"), "replay", edited,
                          "-t", "0,0"], capture_output=True, text=True, timeout=300)
    assert rep.returncode == 1 and "MISMATCH" in rep.stdout, rep.stdout + rep.stderr


def test_snapshot_without_proto_compares_interpreter_and_device(script_run, tmp_path):
    _, work = script_run
    snap = glob.glob(str(work / "snapshots" / "**" / "*execution000001.inputs.*"),
                     recursive=True)
    proc = _bisect(["--work-dir", str(tmp_path / "w"), snap[0]], tmp_path)
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    assert "instructions compared on the interpreter and the device" in out, out
    assert "XLA:CPU not compared: a snapshot holds HLO text and XLA:CPU needs the " \
           "HloModuleProto" in out, out
    assert re.search(r"interpreter: first NaN: produced by HLO instruction 'log\.", out), out


def test_hlo_edit_and_replay_parsing():
    from torch_neuronsim import bisect, hlo_edit
    text = (
        "HloModule m, entry_computation_layout={(f32[2]{0})->(f32[2]{0})}, "
        "input_output_alias={ {0}: (0, {}, may-alias) }\n\n"
        "ENTRY %m (p0.1: f32[2]) -> (f32[2]) {\n"
        "  %p0.1 = f32[2]{0} parameter(0)\n"
        "  %log.2 = f32[2]{0} log(f32[2]{0} %p0.1), metadata={op_type=\"aten__log\" "
        "source_file=\"t.py\" source_line=7}\n"
        "  %tok = token[] after-all()\n"
        "  ROOT %tuple.3 = (f32[2]{0}) tuple(f32[2]{0} %log.2)\n"
        "}\n")
    edited, chosen = hlo_edit.all_outputs_text(text)
    assert [i.name for i in chosen] == ["log.2"]
    assert chosen[0].describe() == "'log.2' (log, op_type aten__log, t.py:7, HLO line 5)"
    assert "input_output_alias" not in edited and "entry_computation_layout" not in edited
    assert "  %tuple.3 = (f32[2]{0}) tuple" in edited
    assert "  ROOT %neuronsim_bisect.outputs = (f32[2]{0}) tuple(f32[2]{0} %log.2)" in edited
    assert "ENTRY %m (p0.1: f32[2]) -> (f32[2]) {" in edited
    replay = ("device: NRT_SUCCESS (0) in 0.1 ms\n"
              "output output0: device vs interpreter: match (max abs err 0)\n"
              "output output0: device vs recorded: MISMATCH, 1 element(s) out of tolerance "
              "(rtol 1.0e-03, atol 1.0e-04); leaf 0 (f32) element 1 [1]: expected 2, got 3\n"
              "output output0: interpreter vs recorded: MISMATCH, 1 element(s) out of tolerance\n"
              "result: outputs differ\n")
    per_out, info = bisect.parse_replay(replay)
    assert info["result"] == "outputs differ"
    cmp = per_out["output0"]
    assert cmp["device vs interpreter"][0] and not cmp["device vs XLA:CPU"][0]
    assert bisect._verdict_of(cmp) == "XLA:CPU differs from both the device and the interpreter"
