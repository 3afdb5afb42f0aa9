"""make bench, the vector engine in training steps (issue #15 goal 1): the elementwise,
reduction and normalisation work between the matmuls and convolutions of a training
step, each on the embedded device against the PyTorch CPU call that does the same work
in eager mode, same thread count, same run.

Each case is a small HLO module as PyTorch/XLA emits it (ReLU and hardtanh backward as
compare and select, a bias gradient as a reduce over the outer dims, softmax's
exp(x - max), batch-norm-training and -grad), compiled by ncc at -O2 (fusion on) and
timed by neuronsim-bench-conv (execution only), against torch.ops.aten's kernel for the
same operation. The sides alternate in rounds (ABAB) and each keeps its best time, as in
bench_conv.py; the device's first output is compared with PyTorch's once per case.

Environment: NEURONSIM_BUILD_DIR (the build, default ./build), BENCH_THREADS (default
1), BENCH_VECTOR_ROUNDS (default 5), BENCH_VECTOR_ONLY (substring of the case names)."""

import os
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_conv import Device, device_exe, interleave, reps_for, shape, time_torch  # noqa: E402

TARGET = 0.8  # throughput ratio (PyTorch time / neuronsim time) to pass

# the combiners' names are unique in the module (HLO names are module-wide)
ADD = ("add {\n  add_a = f32[] parameter(0)\n  add_b = f32[] parameter(1)\n"
       "  ROOT add_r = f32[] add(add_a, add_b)\n}\n")
MAX = ("max {\n  max_a = f32[] parameter(0)\n  max_b = f32[] parameter(1)\n"
       "  ROOT max_r = f32[] maximum(max_a, max_b)\n}\n")


def pred(dims):
    return "pred" + shape(dims)[3:]


def module(name, params, body, comps=""):
    """HLO text: parameters (name, dims) in order, then the body's lines."""
    lines = [f"  {p} = {shape(d)} parameter({i})" for i, (p, d) in enumerate(params)]
    return (f"HloModule {name}\n\n{comps}\nENTRY main {{\n" + "\n".join(lines) + "\n" +
            "\n".join("  " + b for b in body) + "\n}\n")


def case_relu_bw(gen):
    d = (8, 128, 1024)
    x, g = torch.randn(*d, generator=gen), torch.randn(*d, generator=gen)
    text = module("relu_bw", [("x", d), ("g", d)], [
        "z = f32[] constant(0)", f"zb = {shape(d)} broadcast(z), dimensions={{}}",
        f"c = {pred(d)} compare(x, zb), direction=GT",
        f"ROOT s = {shape(d)} select(c, g, zb)"])
    return text, (x, g), lambda: torch.ops.aten.threshold_backward(g, x, 0.0)


def case_hardtanh_bw(gen):
    d = (8, 144, 56, 56)
    x, g = torch.randn(*d, generator=gen) * 4, torch.randn(*d, generator=gen)
    text = module("hardtanh_bw", [("x", d), ("g", d)], [
        "z = f32[] constant(0)", "six = f32[] constant(6)",
        f"zb = {shape(d)} broadcast(z), dimensions={{}}",
        f"sb = {shape(d)} broadcast(six), dimensions={{}}",
        f"lo = {pred(d)} compare(x, zb), direction=LE",
        f"hi = {pred(d)} compare(x, sb), direction=GE",
        f"o = {pred(d)} or(lo, hi)",
        f"ROOT s = {shape(d)} select(o, zb, g)"])
    return text, (x, g), lambda: torch.ops.aten.hardtanh_backward(g, x, 0.0, 6.0)


def case_bias_grad(gen):
    d = (8, 128, 1024)
    g = torch.randn(*d, generator=gen)
    text = module("bias_grad", [("g", d)], [
        "z = f32[] constant(0)",
        "ROOT r = f32[1024] reduce(g, z), dimensions={0,1}, to_apply=add"], ADD)
    return text, (g,), lambda: g.sum((0, 1))


def case_row_sum(gen):
    d = (8, 4, 128, 128)
    x = torch.randn(*d, generator=gen)
    text = module("row_sum", [("x", d)], [
        "z = f32[] constant(0)",
        "ROOT r = f32[8,4,128] reduce(x, z), dimensions={3}, to_apply=add"], ADD)
    return text, (x,), lambda: x.sum(3)


def case_softmax(gen):
    d = (8, 4, 128, 128)
    x = torch.randn(*d, generator=gen)
    text = module("softmax", [("x", d)], [
        "ninf = f32[] constant(-inf)", "z = f32[] constant(0)",
        "m = f32[8,4,128] reduce(x, ninf), dimensions={3}, to_apply=max",
        f"mb = {shape(d)} broadcast(m), dimensions={{0,1,2}}",
        f"s = {shape(d)} subtract(x, mb)", f"e = {shape(d)} exponential(s)",
        "t = f32[8,4,128] reduce(e, z), dimensions={3}, to_apply=add",
        f"tb = {shape(d)} broadcast(t), dimensions={{0,1,2}}",
        f"ROOT y = {shape(d)} divide(e, tb)"], ADD + "\n" + MAX)
    return text, (x,), lambda: torch.ops.aten._softmax(x, 3, False)


def case_bn_train(gen):
    d = (8, 144, 56, 56)
    x = torch.randn(*d, generator=gen)
    w, b = torch.rand(144, generator=gen) + 0.5, torch.randn(144, generator=gen)
    text = module("bn_train", [("x", d), ("w", (144,)), ("b", (144,))], [
        f"ROOT t = ({shape(d)}, f32[144], f32[144]) batch-norm-training(x, w, b), "
        "epsilon=1e-05, feature_index=1"])
    return text, (x, w, b), lambda: torch.ops.aten.native_batch_norm(x, w, b, None, None, True,
                                                                      0.1, 1e-5)[0]


def case_bn_grad(gen):
    d = (8, 144, 56, 56)
    x, dy = torch.randn(*d, generator=gen), torch.randn(*d, generator=gen)
    w = torch.rand(144, generator=gen) + 0.5
    mean, var = x.mean((0, 2, 3)), x.var((0, 2, 3), unbiased=False)
    rstd = (var + 1e-5).rsqrt()
    text = module("bn_grad", [("x", d), ("w", (144,)), ("m", (144,)), ("v", (144,)),
                              ("dy", d)], [
        f"ROOT t = ({shape(d)}, f32[144], f32[144]) batch-norm-grad(x, w, m, v, dy), "
        "epsilon=1e-05, feature_index=1"])
    return text, (x, w, mean, var, dy), lambda: torch.ops.aten.native_batch_norm_backward(
        dy, x, w, None, None, mean, rstd, True, 1e-5, [True, True, True])[0]


def case_add(gen):
    d = (8, 128, 1024)
    x, y = torch.randn(*d, generator=gen), torch.randn(*d, generator=gen)
    text = module("add", [("x", d), ("y", d)], [f"ROOT s = {shape(d)} add(x, y)"])
    return text, (x, y), lambda: torch.add(x, y)


def case_transpose(gen):
    x = torch.randn(1024, 1024, generator=gen)
    text = module("transpose", [("x", (1024, 1024))], [
        "ROOT t = f32[1024,1024] transpose(x), dimensions={1,0}"])
    return text, (x,), lambda: x.t().contiguous()


CASES = (
    ("relu backward 8x128x1024", case_relu_bw),
    ("hardtanh backward 8x144x56x56", case_hardtanh_bw),
    ("bias grad sum 0,1 of 8x128x1024", case_bias_grad),
    ("row sum 8x4x128x128", case_row_sum),
    ("softmax 8x4x128x128", case_softmax),
    ("batch-norm-training 8x144x56x56", case_bn_train),
    ("batch-norm-grad 8x144x56x56", case_bn_grad),
    ("add 8x128x1024", case_add),
    ("transpose 1024x1024", case_transpose),
)


def run_case(exe, tmp, idx, name, make, threads, rounds):
    text, ops, fn = make(torch.Generator().manual_seed(15))
    base = os.path.join(tmp, f"case{idx}")
    with open(base + ".hlo", "w") as f:
        f.write(text)
    files = []
    for i, t in enumerate(ops):
        files.append(f"{base}.in{i}")
        t.contiguous().numpy().astype(np.float32).tofile(files[-1])
    want = fn().contiguous().numpy()
    dev = Device(exe, base + ".hlo", files, base + ".out", threads)
    got = np.fromfile(base + ".out", dtype=np.float32).reshape(want.shape)
    err = float(np.max(np.abs(got - want)) / (np.max(np.abs(want)) + 1e-30))
    fn()
    dev_r = reps_for(dev.time(1)[0])
    lib_r = reps_for(time_torch(fn, 3)[0])
    sim, lib = interleave([lambda: dev.time(dev_r)[0], lambda: time_torch(fn, lib_r)[0]], rounds)
    dev.close()
    ratio = lib / sim
    ok = ratio >= TARGET and err < 1e-4
    print(f"{name:<34} {sim / 1e3:10.3f} {lib / 1e3:10.3f} {ratio:7.2f}x {err:9.1e}  "
          f"{'PASS' if ok else 'FAIL'}", flush=True)
    return ok


def main():
    exe = device_exe("bench_vector")
    if not exe:
        return 2
    threads = int(os.environ.get("BENCH_THREADS", "1"))
    rounds = int(os.environ.get("BENCH_VECTOR_ROUNDS", "5"))
    only = os.environ.get("BENCH_VECTOR_ONLY", "")
    torch.set_num_threads(threads)
    print(f"vector engine work of training steps, {threads} thread(s), best of {rounds} "
          f"interleaved rounds, ms; ratio = PyTorch eager time / neuronsim time (target >= "
          f"{TARGET}x, issue #15 goal 1); load average {os.getloadavg()[0]:.2f}")
    print(f"{'work':<34} {'neuronsim':>10} {'torch':>10} {'ratio':>8} {'rel err':>9}")
    fails = 0
    with tempfile.TemporaryDirectory(prefix="bench-vector-") as tmp:
        for i, (name, make) in enumerate(CASES):
            if only and only not in name:
                continue
            try:
                fails += not run_case(exe, tmp, i, name, make, threads, rounds)
            except (RuntimeError, ValueError) as e:
                print(f"{name:<34} failed: {e}", flush=True)
                fails += 1
    print(f"load average at the end {os.getloadavg()[0]:.2f}; {fails} row(s) below target")
    return 0


if __name__ == "__main__":
    sys.exit(main())
