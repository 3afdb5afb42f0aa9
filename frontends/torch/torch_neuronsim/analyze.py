"""neuronsim-analyze: torch-neuronx's `neuron_parallel_compile --command analyze` for
a PyTorch/XLA training script on neuronsim.

    neuronsim-analyze python train.py [ARGS...]
    python -m torch_neuronsim.analyze [--analyze-verbosity 1] python train.py ...

runs the script unchanged on PJRT_DEVICE=NEURONSIM with the plugin in analyze mode
(NEURONSIM_PJRT_ANALYZE): every graph torch_xla hands the plugin is parsed, verified
and analyzed by the compiler instead of being compiled, and "executing" it returns
zero-filled outputs without running anything on the device, so the values the script
computes are meaningless (a loss of 0.0, branches on values may go another way).
The per-graph reports are aggregated into model_analysis_result/result.json with the
fields of the torch-neuronx report (docs/torch.md, "Analyze for training").
"""

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys

from . import __version__

RESULT_DIR = "model_analysis_result"


def _percentage(supported, total):
    return "%.2f%%" % (100.0 * supported / total if total else 100.0)


def load_graphs(graph_dir):
    """The per-graph reports the plugin wrote, in compile order, one per distinct
    program (a graph compiled again, e.g. for a second core, counts once), and the
    graphs the compiler could not read: ([reports], [(module, error)])."""
    entries = []
    for path in glob.glob(os.path.join(graph_dir, "*.json")):
        with open(path) as f:
            entries.append(json.load(f))
    entries.sort(key=lambda e: (e.get("pid", 0), e.get("index", 0)))
    seen, reports, errors = set(), [], []
    for e in entries:
        if e.get("program_hash") in seen:
            continue
        seen.add(e.get("program_hash"))
        if "error" in e:
            errors.append((e.get("module", "?"), e["error"]))
        else:
            reports.append(e)
    return reports, errors


def aggregate(reports, verbosity=2):
    """One torch-neuronx style report over the graphs: instruction counts summed,
    supported aten operators counted over all graphs, each unsupported (operator,
    call site) once; at verbosity 1 the HLO lists, duplicates removed."""
    total = sum(int(r["total"]) for r in reports)
    supported = sum(int(r["supported"]) for r in reports)
    sup_aten, uns_aten, sup_xla, uns_xla = {}, [], [], []
    seen_calls, seen_sup, seen_uns = set(), set(), set()
    cc_version = None
    for r in reports:
        rep = r["report"]
        cc_version = cc_version or rep.get("neuronx_cc_version")
        for k, n in rep["supported_operators"].get("aten", {}).items():
            sup_aten[k] = sup_aten.get(k, 0) + int(n)
        for u in rep["unsupported_operators"].get("aten", []):
            key = (u.get("kind"), u.get("call"))
            if key not in seen_calls:
                seen_calls.add(key)
                uns_aten.append(u)
        for line in rep["supported_operators"].get("xla", []):
            if line not in seen_sup:
                seen_sup.add(line)
                sup_xla.append(line)
        for u in rep["unsupported_operators"].get("xla", []):
            key = json.dumps(u, sort_keys=True)
            if key not in seen_uns:
                seen_uns.add(key)
                uns_xla.append(u)
    if cc_version is None:
        cc_version = "neuronsim-cc"
    out = {
        # torch-neuronx writes its own version here; torch_neuronsim plays its part
        "torch_neuronx_version": f"torch_neuronsim {__version__}",
        "neuronx_cc_version": cc_version,
        "support_percentage": _percentage(supported, total),
        "supported_operators": {"aten": sup_aten},
        "unsupported_operators": {"aten": uns_aten},
    }
    if verbosity <= 1:
        out["supported_operators"]["xla"] = sup_xla
        out["unsupported_operators"]["xla"] = uns_xla
    return out, total, supported


def _command(cmd):
    """The user's command with `python`/`python3` (or a bare script.py) run by this
    interpreter, so the script sees the same torch_xla and torch_neuronsim."""
    cmd = list(cmd)
    base = os.path.basename(cmd[0])
    if base in ("python", "python3") or (base.startswith("python3.") and "/" not in cmd[0]):
        cmd[0] = sys.executable
    elif cmd[0].endswith(".py"):
        cmd.insert(0, sys.executable)
    return cmd


def _parser(prog):
    p = argparse.ArgumentParser(
        prog=prog, description="Run a PyTorch/XLA script without executing on the device "
        "and report which of its operators neuronsim supports "
        "(model_analysis_result/result.json).")
    p.add_argument("--command", choices=["analyze"], default="analyze",
                   help="accepted for neuron_parallel_compile's command line shape")
    p.add_argument("--analyze-verbosity", type=int, choices=[1, 2], default=2,
                   help="2 (default): aten operators; 1: also the HLO instructions")
    p.add_argument("--output-dir", default=RESULT_DIR,
                   help=f"where result.json goes (default ./{RESULT_DIR})")
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="the command, e.g. python train.py")
    return p


def main(argv=None, prog="neuronsim-analyze"):
    args = _parser(prog).parse_args(argv)
    if not args.cmd:
        _parser(prog).print_usage(sys.stderr)
        print(f"{prog}: error: missing the command to analyze (e.g. python train.py)",
              file=sys.stderr)
        return 2
    out_dir = os.path.abspath(args.output_dir)
    graph_dir = os.path.join(out_dir, "graphs")
    shutil.rmtree(graph_dir, ignore_errors=True)
    os.makedirs(graph_dir, exist_ok=True)
    env = dict(os.environ)
    if env.get("PJRT_DEVICE", "NEURONSIM") != "NEURONSIM":
        print(f"{prog}: PJRT_DEVICE={env['PJRT_DEVICE']} replaced by NEURONSIM: the analysis "
              f"is the neuronsim compiler's", file=sys.stderr)
    env["PJRT_DEVICE"] = "NEURONSIM"
    env["NEURONSIM_PJRT_ANALYZE"] = graph_dir
    # the call sites ("call": "train.py 24") come from torch_xla's source annotations
    env.setdefault("XLA_IR_DEBUG", "1")
    env.setdefault("XLA_HLO_DEBUG", "1")
    cmd = _command(args.cmd)
    try:
        rc = subprocess.call(cmd, env=env)
    except OSError as e:
        print(f"{prog}: cannot run {cmd[0]}: {e}", file=sys.stderr)
        return 2
    reports, errors = load_graphs(graph_dir)
    for module, err in errors:
        print(f"{prog}: graph {module}: the compiler cannot read it: {err}", file=sys.stderr)
    result, total, supported = aggregate(reports, args.analyze_verbosity)
    path = os.path.join(out_dir, "result.json")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f, indent=4)
        f.write("\n")
    os.replace(tmp, path)
    shown = os.path.relpath(path) if not os.path.relpath(path).startswith("..") else path
    print(f"{prog}: {len(reports)} graph(s), {result['support_percentage']} of {total} HLO "
          f"instructions supported, {len(result['unsupported_operators']['aten'])} unsupported "
          f"operator call(s); report written to {shown}", file=sys.stderr)
    if not reports and not errors:
        print(f"{prog}: the command produced no graph on the device: does it use torch_xla?",
              file=sys.stderr)
    if rc != 0:
        print(f"{prog}: the command exited with status {rc}; the report covers the graphs "
              f"it produced until then", file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main(prog="python -m torch_neuronsim.analyze"))
