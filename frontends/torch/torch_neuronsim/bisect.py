"""neuronsim-bisect: run a captured graph on the reference interpreter, on the device
and on torch_xla's CPU device, and name the first HLO instruction where they diverge.

    neuronsim-bisect SNAPSHOT [--proto MODULE.hlo.pb]       a snapshot file
    neuronsim-bisect python train.py [ARGS...]              every graph of a script

How (docs/torch.md, "Which backend is wrong?"): the graph's HLO is edited so that the
value of every instruction of its entry computation is an output (a ROOT tuple of all
of them, hlo_edit.py). XLA:CPU runs the edited HloModuleProto through torch_xla
(`computation_from_module_proto` + `_xla_user_computation` on PJRT_DEVICE=CPU, in a
worker process) on the graph's recorded inputs; its values become the "recorded
outputs" of a new snapshot holding the edited HLO text and the same inputs, and
`neuron-snapshot replay -v` compiles and runs that on the device and on the
interpreter and compares the three per output, that is per instruction. The first
instruction (program order) with any comparison out of tolerance is the divergence;
NaN and Inf are named per backend.

XLA:CPU needs the module as an HloModuleProto, which a snapshot does not hold (it has
the HLO text). For a script, the tool runs it twice: on NEURONSIM with on-demand
snapshots (the inputs of every execution) and on CPU with XLA's
--xla_dump_hlo_as_proto (the module protos), and matches graphs by module name and
instruction names. For a snapshot file, give --proto (an XLA *.hlo.pb or a raw
HloModuleProto of the same module); without one the comparison is interpreter vs
device only.
"""

import argparse
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

import numpy as np

from . import hlo_edit, snapshot

EXIT_OK, EXIT_DIVERGED, EXIT_USAGE, EXIT_INPUT, EXIT_RUNTIME = 0, 1, 2, 3, 4
WORK_DIR = "neuronsim-bisect"
_CPU_MARK = "BISECT-CPU "


def tool_path(name="neuron-snapshot"):
    """A neuronsim command-line tool: NEURONSIM_BUILD_DIR/tools, the build the
    plugin comes from, the checkout's build/, then PATH."""
    cands = []
    if os.environ.get("NEURONSIM_BUILD_DIR"):
        cands.append(os.path.join(os.environ["NEURONSIM_BUILD_DIR"], "tools", name))
    try:
        from ._paths import pjrt_library_path
        cands.append(os.path.join(os.path.dirname(os.path.dirname(pjrt_library_path())),
                                  "tools", name))
    except FileNotFoundError:
        pass
    from ._paths import _CHECKOUT
    cands.append(os.path.join(_CHECKOUT, "build", "tools", name))
    for c in cands:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    found = shutil.which(name)
    if found:
        return found
    raise FileNotFoundError(f"cannot find {name} (looked in {', '.join(cands)} and PATH): "
                            f"build neuronsim with `make`, or set NEURONSIM_BUILD_DIR")


# ------------------------------------------------------------------ XLA:CPU

def _to_torch(a, dtype):
    import torch
    if dtype == "bf16":
        return torch.from_numpy(np.array(a, order="C").view(np.int16)).view(torch.bfloat16)
    if dtype == "pred":
        return torch.from_numpy(np.array(a, order="C").astype(np.bool_))
    return torch.from_numpy(np.array(a, order="C"))


def _from_torch(t, dtype):
    import torch
    t = t.cpu()
    if dtype == "bf16":
        return t.view(torch.int16).numpy().view(np.uint16)
    if dtype == "pred":
        return t.numpy().astype(np.uint8)
    return t.numpy().astype(np.dtype(snapshot.DTYPES[dtype]), copy=False)


def cpu_worker():
    """The XLA:CPU side, in a process of its own (PJRT_DEVICE=CPU): one JSON job per
    stdin line {"proto", "inputs": npz, "in_dtypes", "out_dtypes", "outputs": npz};
    one "BISECT-CPU {json}" line per job on stdout."""
    import torch  # noqa: F401
    import torch_xla
    import torch_xla.core.xla_builder as xb
    dev = torch_xla.device()
    for line in sys.stdin:
        job = json.loads(line)
        try:
            with open(job["proto"], "rb") as f:
                proto = f.read()
            comp = xb.computation_from_module_proto("xla::neuronsim_bisect", proto)
            with np.load(job["inputs"]) as z:
                args = [_to_torch(z[f"arg{i}"], d).to(dev)
                        for i, d in enumerate(job["in_dtypes"])]
            outs = torch_xla._XLAC._xla_user_computation("xla::neuronsim_bisect", args, comp)
            vals = [_from_torch(t, d) for t, d in zip(outs, job["out_dtypes"])]
            if len(vals) != len(job["out_dtypes"]):
                raise RuntimeError(f"XLA:CPU returned {len(vals)} values, "
                                   f"{len(job['out_dtypes'])} expected")
            np.savez(job["outputs"], *vals)
            reply = {"ok": True}
        except Exception as e:  # noqa: BLE001 - reported to the parent
            reply = {"ok": False, "error": f"{type(e).__name__}: {e}"}
        print(_CPU_MARK + json.dumps(reply), flush=True)


class CpuWorker:
    """The worker process, started on first use."""

    def __init__(self, log_path):
        self.proc = None
        self.log_path = log_path

    def run(self, proto_path, inputs, out_dtypes, out_path):
        if self.proc is None:
            env = dict(os.environ)
            env["PJRT_DEVICE"] = "CPU"
            env.pop("XLA_FLAGS", None)
            env.pop("NEURON_USE_EAGER_DEBUG_MODE", None)
            env["PYTHONWARNINGS"] = "ignore"
            self.log = open(self.log_path, "a")
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "torch_neuronsim.bisect", "--cpu-worker"], env=env,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True)
        in_path = out_path.replace(".cpu.npz", "") + ".inputs.npz"
        np.savez(in_path, **{f"arg{i}": t.array for i, t in enumerate(inputs)})
        job = {"proto": proto_path, "inputs": in_path, "in_dtypes": [t.dtype for t in inputs],
               "out_dtypes": out_dtypes, "outputs": out_path}
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        for line in self.proc.stdout:
            if line.startswith(_CPU_MARK):
                reply = json.loads(line[len(_CPU_MARK):])
                if not reply["ok"]:
                    raise RuntimeError(reply["error"])
                with np.load(out_path) as z:
                    return [z[f"arr_{k}"] for k in range(len(out_dtypes))]
        raise RuntimeError(f"the XLA:CPU worker exited (its log: {self.log_path})")

    def close(self):
        if self.proc is not None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            self.log.close()
            self.proc = None


# ------------------------------------------------------------------ one graph

_OUT_RE = re.compile(r"^output (\S+): (device vs interpreter|device vs recorded|"
                     r"interpreter vs recorded): (MISMATCH|match)(.*)$")
PAIRS = {"device vs interpreter": "device vs interpreter",
         "device vs recorded": "device vs XLA:CPU",
         "interpreter vs recorded": "interpreter vs XLA:CPU"}


def parse_replay(text):
    """What `neuron-snapshot replay -v` printed: per output name the comparisons
    {pair: (matched, detail)}, and the other lines by their label."""
    outputs, info = {}, {"first": []}
    for line in text.splitlines():
        m = _OUT_RE.match(line)
        if m:
            name, pair, verdict, rest = m.groups()
            outputs.setdefault(name, {})[PAIRS[pair]] = (verdict == "match",
                                                          rest.lstrip(", ;").strip())
        elif line.startswith(("first NaN:", "first Inf:")):
            info["first"].append(line)
        elif ":" in line:
            key, _, val = line.partition(":")
            if key in ("device", "device error", "interpreter", "result", "outputs"):
                info.setdefault(key, val.strip())
            elif key.startswith("in the compiled module"):
                info["compiled"] = line
    return outputs, info


def _nonfinite(a, dtype):
    if dtype == "bf16":
        a = (a.astype(np.uint32) << 16).view(np.float32)
    if a.dtype.kind != "f":
        return None
    if np.isnan(a).any():
        return "NaN"
    if np.isinf(a).any():
        return "Inf"
    return None


def bisect_graph(snap, src, proto, opts, worker, work):
    """Compares one recorded execution (snap: a Snapshot with inputs) instruction by
    instruction. proto: the module as an HloModuleProto, or None. Returns a result
    dict (see report())."""
    res = {"snapshot": src, "module": snap.module, "execution": snap.meta.get("execution"),
           "executable": snap.meta.get("executable"), "cpu": None, "cpu_note": None}
    text, chosen = hlo_edit.all_outputs_text(snap.hlo)
    res["instructions"] = chosen
    _counter[0] += 1
    base = os.path.join(work, f"{_counter[0]:04d}-{_safe(snap.module)}"
                              f"-executable{res['executable']}-execution{res['execution']}")
    outputs = []
    if proto is None:
        res["cpu_note"] = opts.get("no_proto_reason") or "no HloModuleProto of this module"
    else:
        try:
            edited = hlo_edit.all_outputs_proto(proto, [i.name for i in chosen])
            ppath = base + ".all_outputs.pb"
            with open(ppath, "wb") as f:
                f.write(edited)
            vals = worker.run(ppath, _parameter_shaped(snap), [i.etype for i in chosen],
                              base + ".cpu.npz")
            for k, (inst, v) in enumerate(zip(chosen, vals)):
                outputs.append(snapshot.SnapshotTensor(
                    f"output{k}", "output", inst.etype, [int(d) for d in inst.dims],
                    np.asarray(v).reshape([int(d) for d in inst.dims])))
            res["cpu"] = [_nonfinite(t.array, t.dtype) for t in outputs]
        except (KeyError, ValueError, RuntimeError) as e:
            res["cpu_note"] = f"XLA:CPU could not run it: {e}"
            outputs = []
    meta = {k: snap.meta.get(k) for k in ("module_name", "process", "executable", "device",
                                          "execution")}
    meta.update(kind="inputs outputs" if outputs else "inputs", status=0, error=None,
                runtime_version="torch_neuronsim bisect", wall_time_ns=time.time_ns())
    spath = base + ".decomposed_hlo_snapshot"
    snapshot.write(spath, meta, text, snap.inputs() + outputs)
    res["edited_snapshot"] = spath
    cmd = [tool_path(), "replay", spath, "-v", "-O", str(opts.get("opt_level", 2))]
    if opts.get("tolerance"):
        cmd += ["-t", opts["tolerance"]]
    env = {k: v for k, v in os.environ.items()
           if k not in ("NEURON_DUMP_HLO_SNAPSHOT", "XLA_FLAGS")}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)
    res["replay_cmd"] = " ".join(shlex.quote(c) for c in cmd)
    res["replay_exit"] = proc.returncode
    res["replay_output"] = proc.stdout + proc.stderr
    if proc.returncode not in (0, 1):
        res["error"] = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-1:] or ["?"]
        return res
    per_out, info = parse_replay(proc.stdout)
    res["info"] = info
    res["compared"] = []
    res["first_divergence"] = None
    for k, inst in enumerate(chosen):
        cmp = per_out.get(f"output{k}", {})
        res["compared"].append(cmp)
        if res["first_divergence"] is None and any(not ok for ok, _ in cmp.values()):
            res["first_divergence"] = k
    if res["cpu"]:
        res["cpu_first_nonfinite"] = next(
            ((k, w) for k, w in enumerate(res["cpu"]) if w), None)
    return res


_counter = [0]


def _parameter_shaped(snap):
    """The snapshot's inputs with the shapes of the HLO parameters they feed (a NEFF
    tensor of a scalar parameter may be recorded as [1])."""
    _, _, _, insts = hlo_edit.entry_instructions(snap.hlo)
    dims = {i.parameter_number(): [int(d) for d in i.dims] for i in insts
            if i.opcode == "parameter"}
    out = []
    for k, t in enumerate(snap.inputs()):
        shape = dims.get(k, t.shape)
        out.append(snapshot.SnapshotTensor(t.name, t.role, t.dtype, shape,
                                           t.array.reshape(shape), t.alias_input))
    return out


def _safe(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name or "module")


def _verdict_of(cmp):
    """Who is the odd one out, from the comparisons of one instruction."""
    d_i = cmp.get("device vs interpreter", (True,))[0]
    d_c = cmp.get("device vs XLA:CPU", (None,))[0]
    i_c = cmp.get("interpreter vs XLA:CPU", (None,))[0]
    if d_c is None:
        return "the device and the interpreter disagree"
    if i_c and not d_i and not d_c:
        return "the device differs from both the interpreter and XLA:CPU"
    if d_i and not d_c and not i_c:
        return "XLA:CPU differs from both the device and the interpreter"
    if d_c and not d_i and not i_c:
        return "the interpreter differs from both the device and XLA:CPU"
    return "all three differ"


def report(res, out, verbose=False):
    """Prints a result; returns whether it found a divergence or a NaN/Inf."""
    w = lambda s="": print(s, file=out)  # noqa: E731
    n = len(res["instructions"])
    head = (f"{os.path.basename(res['snapshot'])}: module {res['module']}, executable "
            f"{res['executable']}, execution {res['execution']}")
    if "error" in res:
        w(f"{head}: could not be replayed: {' '.join(res['error'])}")
        w(f"  (edited snapshot {res['edited_snapshot']})")
        return True
    backends = "the interpreter, the device and XLA:CPU" if res["cpu"] is not None else \
        "the interpreter and the device"
    k = res["first_divergence"]
    info = res["info"]
    bad = k is not None or bool(info["first"]) or bool(res.get("cpu_first_nonfinite"))
    if not bad:
        w(f"{head}: {n} instructions agree on {backends}")
    else:
        w(f"{head}: {n} instructions compared on {backends}")
    if res["cpu"] is None:
        w(f"  XLA:CPU not compared: {res['cpu_note']}")
    if k is not None:
        inst = res["instructions"][k]
        w(f"  first divergence: HLO instruction {inst.describe()}: {_verdict_of(res['compared'][k])}")
        for pair, (ok, detail) in res["compared"][k].items():
            w(f"    {pair}: {'match' if ok else 'MISMATCH'}{' ' + detail if detail else ''}")
        w(f"    {inst.text[:300]}")
    elif verbose:
        w("  no instruction differs beyond the tolerance")
    for line in info["first"]:
        w(f"  interpreter: {line}")
    if info.get("device error"):
        w(f"  device: {info['device error']}")
    if res.get("cpu_first_nonfinite"):
        ck, what = res["cpu_first_nonfinite"]
        w(f"  XLA:CPU: first {what} in HLO instruction {res['instructions'][ck].describe()}")
    if bad or verbose:
        w(f"  edited snapshot: {res['edited_snapshot']} (neuron-snapshot replay it -v)")
    return bad


# ------------------------------------------------------------------ drivers

def _proto_for(snap, protos):
    """The module proto among protos [(path, bytes, name, names, nparams)] that is
    snap's graph: same module name, same parameter count, every entry instruction
    name of the snapshot's HLO present."""
    _, _, _, insts = hlo_edit.entry_instructions(snap.hlo)
    want = {i.name for i in insts}
    nparams = len(snap.inputs())
    for path, data, name, names, np_ in protos:
        if name == snap.module and np_ == nparams and want <= set(names):
            return data
    return None


def _load_protos(paths):
    out = []
    for p in paths:
        with open(p, "rb") as f:
            data = hlo_edit.module_proto(f.read())
        out.append((p, data, hlo_edit.module_name(data), hlo_edit.instruction_names(data),
                    hlo_edit.parameter_count(data)))
    return out


def _strip_dump_flags(flags):
    keep = [f for f in shlex.split(flags or "")
            if not f.startswith(("--xla_dump_to", "--xla_dump_hlo_snapshots",
                                 "--xla_dump_hlo_as_proto"))]
    return " ".join(shlex.quote(f) for f in keep)


def _command(cmd):
    cmd = list(cmd)
    base = os.path.basename(cmd[0])
    if base in ("python", "python3"):
        cmd[0] = sys.executable
    elif cmd[0].endswith(".py"):
        cmd.insert(0, sys.executable)
    return cmd


def run_script(cmd, work, out):
    """Runs the command on NEURONSIM with on-demand snapshots and on CPU with XLA's
    module dumps. Returns (snapshot paths in execution order, proto paths)."""
    cmd = _command(cmd)
    user_flags = _strip_dump_flags(os.environ.get("XLA_FLAGS"))
    runs = {"NEURONSIM": (os.path.join(work, "snapshots"), "--xla_dump_hlo_snapshots"),
            "CPU": (os.path.join(work, "cpu_dump"), "--xla_dump_hlo_as_proto")}
    for device, (d, flag) in runs.items():
        env = dict(os.environ)
        env["PJRT_DEVICE"] = device
        env["XLA_FLAGS"] = f"{user_flags} {flag} --xla_dump_to={d}".strip()
        env.setdefault("XLA_IR_DEBUG", "1")
        env.setdefault("XLA_HLO_DEBUG", "1")
        if device == "CPU":
            env.pop("NEURON_USE_EAGER_DEBUG_MODE", None)
        log = os.path.join(work, f"{device.lower()}.log")
        with open(log, "w") as f:
            rc = subprocess.call(cmd, env=env, stdout=f, stderr=subprocess.STDOUT)
        print(f"neuronsim-bisect: the command ran on {device} (exit status {rc}; its "
              f"output: {log})", file=out)
    snaps = glob.glob(os.path.join(runs["NEURONSIM"][0], "**", "*.decomposed_hlo_snapshot"),
                      recursive=True)
    protos = glob.glob(os.path.join(runs["CPU"][0], "*before_optimizations.hlo.pb"))
    return snaps, protos


def _parser(prog):
    p = argparse.ArgumentParser(
        prog=prog, description="Run a captured graph on the reference interpreter, the "
        "device and XLA:CPU and name the first HLO instruction where they diverge.",
        epilog="Exit status: 0 all agree, no NaN/Inf; 1 a divergence or a NaN/Inf; 2 bad "
        "command line; 3 unreadable input; 4 runtime error.")
    p.add_argument("--proto", help="the graph's HloModuleProto for XLA:CPU (an XLA "
                   "*.hlo.pb dump or a raw module), for a snapshot file")
    p.add_argument("--no-cpu", action="store_true", help="compare interpreter and device only")
    p.add_argument("-O", "--opt-level", type=int, choices=[0, 1, 2], default=2,
                   help="compiler optimisation level of the device run (default 2)")
    p.add_argument("-t", "--tolerance", help="RTOL[,ATOL] for floats (default: the "
                   "interpreter's whole-module tolerance per dtype, f32 1e-3/1e-4)")
    p.add_argument("--work-dir", default=WORK_DIR, help=f"where the captured and edited "
                   f"graphs go (default ./{WORK_DIR}, emptied first)")
    p.add_argument("--all", action="store_true", help="go on after the first execution "
                   "that diverges")
    p.add_argument("-v", "--verbose", action="store_true")
    p.add_argument("--cpu-worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("target", nargs=argparse.REMAINDER,
                   help="SNAPSHOT file(s), or a command such as: python train.py ARGS")
    return p


def _is_snapshot(path):
    try:
        with open(path, "rb") as f:
            return f.read(8) == b"NSIMSNAP"
    except OSError:
        return False


def main(argv=None, prog="neuronsim-bisect"):
    args = _parser(prog).parse_args(argv)
    if args.cpu_worker:
        cpu_worker()
        return EXIT_OK
    out = sys.stdout
    if not args.target:
        _parser(prog).print_usage(sys.stderr)
        print(f"{prog}: error: give a snapshot file or a command (python train.py)",
              file=sys.stderr)
        return EXIT_USAGE
    try:
        tool_path()
    except FileNotFoundError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return EXIT_RUNTIME
    work = os.path.abspath(args.work_dir)
    shutil.rmtree(work, ignore_errors=True)
    edited = os.path.join(work, "edited")
    os.makedirs(edited)
    opts = {"opt_level": args.opt_level, "tolerance": args.tolerance}
    snap_mode = all(_is_snapshot(t) for t in args.target)
    if snap_mode:
        files = args.target
        protos = _load_protos([args.proto]) if args.proto and not args.no_cpu else []
        if not args.proto:
            opts["no_proto_reason"] = ("a snapshot holds HLO text and XLA:CPU needs the "
                                       "HloModuleProto: give --proto, or bisect the script")
    else:
        if args.proto:
            print(f"{prog}: --proto is for snapshot files", file=sys.stderr)
            return EXIT_USAGE
        files, proto_files = run_script(args.target, work, out)
        protos = [] if args.no_cpu else _load_protos(proto_files)
        if not files:
            print(f"{prog}: the command executed no graph on the device (no snapshot in "
                  f"{work}/snapshots)", file=sys.stderr)
            return EXIT_INPUT
        if not protos and not args.no_cpu:
            opts["no_proto_reason"] = "the run on CPU compiled no graph"
    if args.no_cpu:
        opts["no_proto_reason"] = "--no-cpu"
    loaded = []
    for f in files:
        try:
            s = snapshot.read(f)
        except (OSError, ValueError) as e:
            print(f"{prog}: {e}", file=sys.stderr)
            return EXIT_INPUT
        if not s.inputs() or not s.hlo:
            print(f"{prog}: {f} holds no inputs or no HLO: nothing to run", file=sys.stderr)
            return EXIT_INPUT
        loaded.append((s.meta.get("wall_time_ns", 0), f, s))
    loaded.sort(key=lambda x: x[0])
    worker = CpuWorker(os.path.join(work, "cpu_worker.log"))
    bad_any, checked, status = False, 0, EXIT_OK
    try:
        for _, f, s in loaded:
            proto = None if args.no_cpu else _proto_for(s, protos)
            if proto is None and protos and "no_proto_reason" not in opts:
                opts_one = dict(opts, no_proto_reason="XLA:CPU compiled no graph matching "
                                "this one (module name, parameters, instruction names)")
            else:
                opts_one = opts
            try:
                res = bisect_graph(s, f, proto, opts_one, worker, edited)
            except ValueError as e:
                print(f"{prog}: {f}: {e}", file=sys.stderr)
                status = EXIT_INPUT
                continue
            checked += 1
            bad = report(res, out, args.verbose)
            if "error" in res:
                status = max(status, EXIT_INPUT)
            bad_any = bad_any or bad
            if bad and not args.all:
                break
    except FileNotFoundError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return EXIT_RUNTIME
    finally:
        worker.close()
    left = len(loaded) - checked
    print(f"result: {'diverged or produced NaN/Inf' if bad_any else 'no divergence'} "
          f"({checked} execution(s) checked{f', {left} not' if left else ''}; files in {work})",
          file=out)
    if status:
        return status
    return EXIT_DIVERGED if bad_any else EXIT_OK


if __name__ == "__main__":
    sys.exit(main(prog="python -m torch_neuronsim.bisect"))
