"""make bench, convolutions (issue #15 goal 5): forward, input gradient and weight
gradient of corpus-like shapes (MobileNetV2's pointwise and depthwise, ResNet's 3x3 and
7x7 stride 2, a grouped 3x3, ResNet-18's later stages on 64x64 images, down to planes
smaller than the kernel) on the embedded device against PyTorch's CPU convolution
(oneDNN), same thread count, same run.

Each case is a small HLO module in XLA's own forms (the backward convolutions as
PyTorch/XLA emits them: an lhs-dilated convolution with the reversed kernel, for
ungrouped ones the forward's OIHW kernel transposed by layout and reversed, and a
convolution of the input with the output gradient, batch groups for grouped ones),
compiled by ncc and timed by neuronsim-bench-conv (execution only); the library side
is torch.nn.functional.conv2d and torch.ops.aten.convolution_backward, the faster of
NCHW-contiguous and channels-last. The two sides alternate in rounds (ABAB) so both
see the same load; each side's time is its best over all rounds. The device's output
is compared with PyTorch's once per case, so both compute the same thing.

Environment: NEURONSIM_BUILD_DIR (the build, default ./build), BENCH_THREADS
(default 1: torch.set_num_threads, the simulator's NEURONSIM_THREADS and the
CPUs its process may use),
BENCH_CONV_BATCH (default 8), BENCH_CONV_ROUNDS (default 5), BENCH_CONV_ONLY
(substring of the case names to run).

A second table (issue #15 goal 4, both cores) times GEMM-heavy work with
NEURONSIM_THREADS=1 and 2 in the same run (ResNet's 3x3 convolution forward,
input and weight gradient, the corpus MLP training step and a ResNet-18 training
step), and the same with
one CPU-bound process beside it, where PyTorch's 2-thread / 1-thread ratio on
the same convolution is the reference. BENCH_CONV_SKIP_THREADS=1 leaves it out."""

import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn.functional as F

TARGET = 0.8  # throughput ratio (library time / neuronsim time) to pass
ROUND_S = 0.15  # per side and round, after calibration

# name, C, H, O, k, stride, pad, groups
CASES = (
    ("mnv2 pw 1x1 96->24 56", 96, 56, 24, 1, 1, 0, 1),
    ("mnv2 pw 1x1 576->96 14", 576, 14, 96, 1, 1, 0, 1),
    ("mnv2 dw 3x3 s1 576 14", 576, 14, 576, 3, 1, 1, 576),
    ("mnv2 dw 3x3 s2 96 112", 96, 112, 96, 3, 2, 1, 96),
    ("resnet 3x3 64->64 56", 64, 56, 64, 3, 1, 1, 1),
    ("resnet 7x7 s2 3->64 224", 3, 224, 64, 7, 2, 3, 1),
    ("grouped 3x3 g32 128 28", 128, 28, 128, 3, 1, 1, 32),
    # ResNet-18's later stages on 64x64 images (the corpus step): planes
    # down to smaller than the kernel
    ("resnet 3x3 128->128 8", 128, 8, 128, 3, 1, 1, 1),
    ("resnet 3x3 256->256 4", 256, 4, 256, 3, 1, 1, 1),
    ("resnet 3x3 s2 256->512 4", 256, 4, 512, 3, 2, 1, 1),
    ("resnet 3x3 512->512 2", 512, 2, 512, 3, 1, 1, 1),
)


def shape(dims):
    return "f32[" + ",".join(str(d) for d in dims) + "]"


def hlo_module(kind, N, C, H, O, k, s, p, g):
    """The HLO text of one convolution and the parameter shapes it takes."""
    Ho = (H + 2 * p - k) // s + 1
    if kind == "fwd":
        a, b, out = (N, C, H, H), (O, C // g, k, k), (N, O, Ho, Ho)
        win = f"size={k}x{k} stride={s}x{s} pad={p}_{p}x{p}_{p}"
        attrs = "dim_labels=bf01_oi01->bf01" + (f", feature_group_count={g}" if g > 1 else "")
    elif kind == "dgrad" and g == 1:
        # PyTorch/XLA's form: the forward's OIHW kernel, transposed (a layout
        # change only) and reversed
        lo = k - 1 - p
        hi = H + k - 2 - (Ho - 1) * s - lo
        a, b, out = (N, O, Ho, Ho), (O, C, k, k), (N, C, H, H)
        win = f"size={k}x{k} pad={lo}_{hi}x{lo}_{hi}" + (f" lhs_dilate={s}x{s}" if s > 1 else "")
        text = (f"HloModule conv_{kind}\n\nENTRY main {{\n"
                f"  a = {shape(a)} parameter(0)\n"
                f"  b = {shape(b)} parameter(1)\n"
                f"  t = f32[{k},{k},{C},{O}]{{1,0,2,3}} transpose(b), dimensions={{2,3,1,0}}\n"
                f"  r = f32[{k},{k},{C},{O}]{{1,0,2,3}} reverse(t), dimensions={{0,1}}\n"
                f"  ROOT c = {shape(out)} convolution(a, r), window={{{win}}}, "
                f"dim_labels=bf01_01oi->bf01\n}}\n")
        return text, a, b, out
    elif kind == "dgrad":
        lo = k - 1 - p
        hi = H + k - 2 - (Ho - 1) * s - lo
        a, b, out = (N, O, Ho, Ho), (k, k, C, O // g), (N, C, H, H)
        win = f"size={k}x{k} pad={lo}_{hi}x{lo}_{hi}" + (f" lhs_dilate={s}x{s}" if s > 1 else "")
        attrs = "dim_labels=bf01_01oi->bf01" + (f", feature_group_count={g}" if g > 1 else "")
    else:  # wgrad
        hi = k + (Ho - 1) * s - H - p
        a, b, out = (N, C, H, H), (N, O, Ho, Ho), (k, k, C // g, O)
        win = f"size={Ho}x{Ho} pad={p}_{hi}x{p}_{hi}" + (f" rhs_dilate={s}x{s}" if s > 1 else "")
        attrs = "dim_labels=fb01_io01->01bf" + (f", batch_group_count={g}" if g > 1 else "")
    text = (f"HloModule conv_{kind}\n\nENTRY main {{\n"
            f"  a = {shape(a)} parameter(0)\n"
            f"  b = {shape(b)} parameter(1)\n"
            f"  ROOT c = {shape(out)} convolution(a, b), window={{{win}}}, {attrs}\n}}\n")
    return text, a, b, out


def torch_call(kind, x, w, dy, s, p, g):
    if kind == "fwd":
        return lambda: F.conv2d(x, w, None, s, p, 1, g)
    mask = [True, False, False] if kind == "dgrad" else [False, True, False]
    idx = 0 if kind == "dgrad" else 1
    return lambda: torch.ops.aten.convolution_backward(dy, x, w, None, [s, s], [p, p], [1, 1],
                                                       False, [0, 0], g, mask)[idx]


def time_torch(fn, reps):
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        fn()
        ts.append((time.perf_counter_ns() - t0) / 1e3)
    ts.sort()
    return ts[0], ts[len(ts) // 2]


class Device:
    """One neuronsim-bench-conv process: the module compiled and loaded once."""

    def __init__(self, exe, hlo, inputs, out, threads, pin=False):
        env = dict(os.environ, NEURONSIM_THREADS=str(threads),
                   NEURON_RT_LOG_LEVEL="ERROR")
        # pin: the process may use `threads` CPUs only, engine threads included
        # (the simulator's engines are threads of their own)
        cpus = sorted(os.sched_getaffinity(0))[:threads]
        pre = (lambda: os.sched_setaffinity(0, cpus)) if pin else None
        self.p = subprocess.Popen([exe, hlo, "--out", out] + inputs, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, env=env, preexec_fn=pre)
        line = self.p.stdout.readline()
        if line.strip() != "READY":
            self.p.wait()
            raise RuntimeError(f"neuronsim-bench-conv failed on {hlo} (exit {self.p.returncode})")

    def time(self, reps):
        self.p.stdin.write(f"{reps}\n")
        self.p.stdin.flush()
        best, med = self.p.stdout.readline().split()
        return float(best), float(med)

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def reps_for(us):
    return max(1, min(200, int(ROUND_S * 1e6 / max(us, 1.0))))


def run_case(exe, tmp, name, kind, N, C, H, O, k, s, p, g, threads, rounds):
    text, a, b, out = hlo_module(kind, N, C, H, O, k, s, p, g)
    gen = torch.Generator().manual_seed(15)
    Ho = (H + 2 * p - k) // s + 1
    x = torch.randn(N, C, H, H, generator=gen)
    w = torch.randn(O, C // g, k, k, generator=gen) * (1.0 / (C // g * k * k)) ** 0.5
    dy = torch.randn(N, O, Ho, Ho, generator=gen)
    # the device's operands, in the module's (row-major) layouts
    if kind == "fwd":
        ops = (x, w)
    elif kind == "dgrad" and g == 1:
        ops = (dy, w)
    elif kind == "dgrad":
        wr = w.reshape(g, O // g, C // g, k, k).flip(3, 4).permute(3, 4, 0, 2, 1)
        ops = (dy, wr.reshape(k, k, C, O // g))
    else:
        ops = (x, dy)
    base = os.path.join(tmp, f"{kind}")
    with open(base + ".hlo", "w") as f:
        f.write(text)
    files = []
    for i, t in enumerate(ops):
        files.append(f"{base}.in{i}")
        t.contiguous().numpy().astype(np.float32).tofile(files[-1])
    ref = torch_call(kind, x, w, dy, s, p, g)()
    if kind == "wgrad":
        ref = ref.permute(2, 3, 1, 0)  # [O, C/g, k, k] -> 01bf [k, k, C/g, O]
    # pinned to BENCH_THREADS CPUs, engine threads included: unpinned, a
    # lowering whose DMA copies overlap its MATMULs on another engine used a
    # second CPU that PyTorch, at the same thread count, did not have
    dev = Device(exe, base + ".hlo", files, base + ".out", threads, pin=True)
    got = np.fromfile(base + ".out", dtype=np.float32).reshape(out)
    want = ref.contiguous().numpy()
    err = float(np.max(np.abs(got - want)) / (np.max(np.abs(want)) + 1e-30))
    # the library side: the faster memory format
    cl = torch.channels_last
    calls = {"nchw": torch_call(kind, x, w, dy, s, p, g),
             "nhwc": torch_call(kind, x.to(memory_format=cl), w.to(memory_format=cl),
                                dy.to(memory_format=cl), s, p, g)}
    lib_best = {}
    for fmt, fn in calls.items():
        fn()
        lib_best[fmt] = time_torch(fn, 3)[0]
    fmt = min(lib_best, key=lib_best.get)
    lib_fn = calls[fmt]
    dev_r = reps_for(dev.time(1)[0])
    lib_r = reps_for(lib_best[fmt])
    sim, lib = [], []
    for _ in range(rounds):
        sim.append(dev.time(dev_r))
        lib.append(time_torch(lib_fn, lib_r))
    dev.close()
    sim_best = min(t[0] for t in sim)
    lib_best_us = min(t[0] for t in lib)
    ratio = lib_best_us / sim_best
    ok = ratio >= TARGET and err < 1e-4
    print(f"{name:<24} {kind:<6} {sim_best / 1e3:10.3f} {lib_best_us / 1e3:10.3f} {fmt:>5} "
          f"{ratio:7.2f}x {err:9.1e}  {'PASS' if ok else 'FAIL'}", flush=True)
    return ok


class Hog:
    """One CPU-bound process (a busy loop) for the 'beside a CPU hog' rows."""

    def __enter__(self):
        self.p = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        return self

    def __exit__(self, *exc):
        self.p.kill()
        self.p.wait()


def interleave(sides, rounds):
    """Best time (us) per side, the sides taking turns each round (ABAB)."""
    best = [float("inf")] * len(sides)
    for _ in range(rounds):
        for i, fn in enumerate(sides):
            best[i] = min(best[i], fn())
    return best


def threads_table(exe, tmp, N, rounds):
    """neuronsim at 1 and 2 threads on GEMM-heavy modules; beside a CPU hog, the
    same against PyTorch's own 1 -> 2 thread ratio."""
    mlp = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared",
                       "hlo", "mlp-mlp_single_final.hlo")
    work = []
    for kind in ("fwd", "dgrad", "wgrad"):
        text = hlo_module(kind, N, 64, 56, 64, 3, 1, 1, 1)[0]
        path = os.path.join(tmp, f"thr-{kind}.hlo")
        with open(path, "w") as f:
            f.write(text)
        work.append((f"resnet 3x3 64->64 56 {kind}", path, kind))
    if os.path.exists(mlp):
        work.append(("MLP step (corpus)", os.path.abspath(mlp), None))
    # a whole convolutional training step: torchvision's resnet18 at batch 8,
    # 64x64, forward, backward and SGD update, as torch_xla 2.9 hands it over
    # (frontends/torch/bench/step_workload.py --model resnet18)
    work.append(("ResNet-18 b8 step (torch_xla)",
                 os.path.join(os.path.dirname(os.path.abspath(__file__)), "hlo",
                              "resnet18_b8_step.hlo"), None))
    print(f"\nboth cores: 1 CPU (NEURONSIM_THREADS=1, the process pinned to one CPU, engine "
          f"threads included) vs 2 CPUs (NEURONSIM_THREADS=2), best of {rounds} interleaved "
          f"rounds, ms; target >= 1.6x with 2 free cores (issue #15 goal 4); load average "
          f"{os.getloadavg()[0]:.2f}")
    print(f"{'work':<30} {'1 CPU':>10} {'2 CPUs':>10} {'speedup':>8}")
    for name, path, _ in work:
        devs = [Device(exe, path, [], os.path.join(tmp, "thr.out"), t, pin=True) for t in (1, 2)]
        r = reps_for(devs[0].time(1)[0])
        t1, t2 = interleave([lambda d=d: d.time(r)[0] for d in devs], rounds)
        for d in devs:
            d.close()
        print(f"{name:<30} {t1 / 1e3:10.3f} {t2 / 1e3:10.3f} {t1 / t2:7.2f}x", flush=True)
    # Medians decide here, not best times: a PyTorch call of 3.5 ms fits in one
    # scheduler slice, so its best of a few hundred calls is one the hog left
    # alone, while a 10 ms execution always shares its cores; the median is
    # what a step costs beside the hog (PyTorch's OpenMP threads then wait for
    # a descheduled peer).
    print(f"\nbeside one CPU-bound process: time at 2 threads / time at 1 thread, median "
          f"(and best) of {rounds} interleaved rounds (lower is better; target: "
          f"neuronsim's median <= PyTorch's)")
    print(f"{'work':<30} {'neuronsim':>10} {'torch':>10} {'best: sim':>10} {'torch':>7}  verdict")
    gen = torch.Generator().manual_seed(15)
    x = torch.randn(N, 64, 56, 56, generator=gen).to(memory_format=torch.channels_last)
    w = torch.randn(64, 64, 3, 3, generator=gen).to(memory_format=torch.channels_last)
    dy = torch.randn(N, 64, 56, 56, generator=gen).to(memory_format=torch.channels_last)
    with Hog():
        for name, path, kind in work:
            if kind is None:
                continue
            devs = [Device(exe, path, [], os.path.join(tmp, "thr.out"), t) for t in (1, 2)]
            fn = torch_call(kind, x, w, dy, 1, 1, 1)
            r = reps_for(devs[0].time(1)[0])

            def lib(n):
                torch.set_num_threads(n)
                return time_torch(fn, r)

            t = [[], [], [], []]  # per side: (best, median) of each round
            for _ in range(rounds):
                for i, f in enumerate([lambda: devs[0].time(r), lambda: devs[1].time(r),
                                       lambda: lib(1), lambda: lib(2)]):
                    t[i].append(f())
            for d in devs:
                d.close()
            best = [min(b for b, _ in side) for side in t]
            med = [sorted(m for _, m in side)[len(side) // 2] for side in t]
            sim, ref = med[1] / med[0], med[3] / med[2]
            print(f"{name:<30} {sim:9.2f}x {ref:9.2f}x {best[1] / best[0]:9.2f}x "
                  f"{best[3] / best[2]:6.2f}x  {'PASS' if sim <= ref * 1.05 else 'FAIL'}",
                  flush=True)
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


def device_exe(prog):
    """neuronsim-bench-conv of the build (NEURONSIM_BUILD_DIR, default ./build), or
    None after saying, as prog, that it is missing."""
    build = os.environ.get("NEURONSIM_BUILD_DIR", os.path.join(os.getcwd(), "build"))
    exe = os.path.join(build, "tests", "bench", "neuronsim-bench-conv")
    if os.access(exe, os.X_OK):
        return exe
    print(f"{prog}: {exe} is missing: build first (ninja -C build)", file=sys.stderr)
    return None


def main():
    exe = device_exe("bench_conv")
    if not exe:
        return 2
    threads = int(os.environ.get("BENCH_THREADS", "1"))
    N = int(os.environ.get("BENCH_CONV_BATCH", "8"))
    rounds = int(os.environ.get("BENCH_CONV_ROUNDS", "5"))
    only = os.environ.get("BENCH_CONV_ONLY", "")
    torch.set_num_threads(threads)
    print(f"convolutions, batch {N}, {threads} thread(s), best of {rounds} interleaved rounds, "
          f"ms; ratio = library time / neuronsim time (throughput, target >= {TARGET}x, "
          f"issue #15); load average {os.getloadavg()[0]:.2f}")
    print(f"{'shape':<24} {'kind':<6} {'neuronsim':>10} {'torch':>10} {'fmt':>5} {'ratio':>8} "
          f"{'rel err':>9}")
    fails = 0
    with tempfile.TemporaryDirectory(prefix="bench-conv-") as tmp:
        for name, C, H, O, k, s, p, g in CASES:
            if only and only not in name:
                continue
            for kind in ("fwd", "dgrad", "wgrad"):
                try:
                    fails += not run_case(exe, tmp, name, kind, N, C, H, O, k, s, p, g, threads,
                                          rounds)
                except (RuntimeError, ValueError) as e:
                    print(f"{name:<24} {kind:<6} failed: {e}", flush=True)
                    fails += 1
        print(f"load average at the end {os.getloadavg()[0]:.2f}; {fails} row(s) below target")
        if os.environ.get("BENCH_CONV_SKIP_THREADS") != "1":
            threads_table(exe, tmp, N, rounds)
            torch.set_num_threads(threads)
    return 0


if __name__ == "__main__":
    sys.exit(main())
