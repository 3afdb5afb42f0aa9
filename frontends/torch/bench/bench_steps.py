"""make bench, frontend part: training-step time through the PJRT plugin
(PJRT_DEVICE=NEURONSIM) next to PyTorch/XLA's CPU device and PyTorch eager, measured
in the same run with the same thread count and as many CPUs (each process pinned);
prints the ratios (lower is faster)."""

import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOAD = os.path.join(HERE, "step_workload.py")


def measure(model, mode, steps, threads, warmup=3, phases=None, floor=None):
    """The median step time (ms) of model on mode, or None; with phases (a list),
    appends the median of each of the step's phases (trace, sync, wait); with
    floor (a list, eager only), appends the step's GEMM FLOPs and sgemm's peak
    GFLOP/s."""
    # the same CPU budget for all three: `threads` for each library's pools
    # (the simulator's NEURONSIM_THREADS too), and the process pinned to that
    # many CPUs, since the simulator's engines are threads of their own
    env = dict(os.environ, PYTHONWARNINGS="ignore", OMP_NUM_THREADS=str(threads),
               OPENBLAS_NUM_THREADS=str(threads), NEURONSIM_THREADS=str(threads))
    cpus = sorted(os.sched_getaffinity(0))[:threads]
    args = [sys.executable, WORKLOAD, "--model", model, "--steps", str(steps),
            "--warmup", str(warmup), "--threads", str(threads)]
    if mode == "eager":
        args.append("--eager")
        if floor is not None:
            args.append("--floor")
    else:
        env["PJRT_DEVICE"] = mode
        # XLA:CPU's own thread pools, the same budget as the others
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") +
                            f" --xla_cpu_multi_thread_eigen={'true' if threads > 1 else 'false'}"
                            f" intra_op_parallelism_threads={threads}").strip()
    p = subprocess.run(args, env=env, capture_output=True, text=True, timeout=3600,
                       preexec_fn=lambda: os.sched_setaffinity(0, cpus))
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            r = json.loads(line[7:])
            if phases is not None:
                phases.extend(statistics.median(s[k] for s in r["phase_ms"]) for k in range(3))
            if floor is not None and "gemm_flops" in r:
                floor.extend((r["gemm_flops"], r["peak_gflops"]))
            return statistics.median(r["step_ms"])
    print(f"bench: {model} on {mode} failed:\n{p.stderr[-3000:]}", file=sys.stderr)
    return None


def main():
    threads = int(os.environ.get("BENCH_THREADS", "1"))
    only = os.environ.get("BENCH_STEPS_ONLY", "")
    print(f"training step, median ms over the timed steps, {threads} thread(s) on as many "
          f"CPUs, median of interleaved rounds; "
          f"ratio = neuronsim / peer, the median of the rounds' (target <= 0.5x eager, "
          f"<= 1.0x XLA:CPU, issue #15)")
    print(f"{'model':<17} {'neuronsim':>10} {'XLA:CPU':>10} {'eager':>10} "
          f"{'vs XLA:CPU':>11} {'vs eager':>9} {'rounds':>7}")
    # (model, timed steps, warmup steps, rounds); mobilenet_v2_b96 is the corpus
    # step's shapes (about 5 s a step here, 10-13 s in eager, 42 s on XLA:CPU).
    # The three run in turn, a process each, `rounds` times: a shared machine's
    # speed drifts by a third over minutes, so each ratio is the median of the
    # rounds' ratios (paired: measured within a minute of each other) and each
    # time the median of the rounds' medians
    split = []
    for model, steps, warmup, rounds in (("mlp", 30, 3, 3), ("mbconv", 5, 3, 3),
                                         ("mobilenet_v2", 3, 3, 3), ("mobilenet_v2_b96", 3, 2, 1),
                                         ("resnet18", 5, 3, 3), ("transformer", 10, 3, 3)):
        if only and only not in model:
            continue
        runs = []
        for _ in range(rounds):
            ph, fl = [], []
            sim = measure(model, "NEURONSIM", steps, threads, warmup, ph)
            runs.append((sim, measure(model, "CPU", steps, threads, warmup),
                         measure(model, "eager", steps, threads, warmup, floor=fl), ph, fl))
        med = lambda vals: statistics.median(vals) if vals else None
        sim, cpu, eager = (med([r[k] for r in runs if r[k]]) for k in range(3))
        fmt = lambda v: f"{v:10.2f}" if v is not None else f"{'failed':>10}"
        ratio = lambda k: med([r[0] / r[k] for r in runs if r[0] and r[k]])
        rfmt = lambda v: f"{v:10.2f}x" if v is not None else f"{'-':>11}"
        print(f"{model:<17} {fmt(sim)} {fmt(cpu)} {fmt(eager)} {rfmt(ratio(1))} "
              f"{rfmt(ratio(2)):>9} {rounds:>7}")
        phs = [r[3] for r in runs if r[3]]
        # the best a device on this CPU's sgemm could do, per round: torch_xla's
        # trace and sync as measured, plus the step's GEMM FLOPs at sgemm's peak
        floors = []
        for r in runs:
            if r[2] and r[3] and r[4]:
                gemm = r[4][0] / r[4][1] / 1e6
                floors.append(((r[3][0] + r[3][1] + gemm) / r[2], gemm))
        if phs:
            split.append((model, [med([p[k] for p in phs]) for k in range(3)], eager,
                          med([f[1] for f in floors]), med([f[0] for f in floors])))
    # torch_xla's own tracing and sync are paid whatever the device: they bound
    # the ratio to eager that a faster device can reach
    print(f"\nwhere a neuronsim step goes, median ms: traced by torch_xla, sync (hash, "
          f"dispatch), waiting for the device; the device time that 0.5x eager leaves; "
          f"the step's matmul and convolution FLOPs at this CPU's sgemm peak (torch.mm "
          f"1024^3, same threads), and the ratio to eager that trace + sync + that "
          f"leaves at best (above 0.5x: the target is out of reach here)")
    print(f"{'model':<17} {'trace':>8} {'sync':>8} {'wait':>8} {'0.5x eager leaves':>18} "
          f"{'GEMM floor':>11} {'best vs eager':>14}")
    for model, (tr, sy, wa), eager, gemm, best in split:
        left = eager / 2 - tr - sy if eager else None
        left = f"{'-':>18}" if left is None else f"{'none':>18}" if left <= 0 else f"{left:18.2f}"
        gemm = f"{gemm:11.2f}" if gemm is not None else f"{'-':>11}"
        best = f"{best:13.2f}x" if best is not None else f"{'-':>14}"
        print(f"{model:<17} {tr:8.2f} {sy:8.2f} {wa:8.2f} {left} {gemm} {best}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
