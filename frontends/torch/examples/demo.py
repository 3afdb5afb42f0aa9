"""make demo: train_mlp.py unchanged on the simulated NeuronCore (PJRT_DEVICE=NEURONSIM)
and on PyTorch/XLA's CPU device, then the metrics report and the comparison.

Exits 1 when the two runs disagree beyond the documented tolerance (docs/torch.md):
per-epoch mean loss within 2% relative, test accuracy within 0.03.
"""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
LOSS_RTOL = 0.02
ACC_ATOL = 0.03


def run(device, out_json, extra):
    env = dict(os.environ, PJRT_DEVICE=device)
    cmd = [sys.executable, os.path.join(HERE, "train_mlp.py"), "--json", out_json] + extra
    print(f"\n=== PJRT_DEVICE={device} {' '.join(cmd[1:])}", flush=True)
    p = subprocess.run(cmd, env=env)
    if p.returncode != 0:
        print(f"demo: the {device} run failed with exit code {p.returncode}", file=sys.stderr)
        sys.exit(1)
    with open(out_json) as f:
        return json.load(f)


def main():
    extra = sys.argv[1:] or ["--epochs", "3"]
    with tempfile.TemporaryDirectory(prefix="neuronsim-demo-") as tmp:
        sim = run("NEURONSIM", os.path.join(tmp, "sim.json"), extra + ["--metrics"])
        cpu = run("CPU", os.path.join(tmp, "cpu.json"), extra)
    print("\n=== neuronsim vs PyTorch/XLA CPU")
    print(f"{'epoch':>5} {'loss sim':>10} {'loss cpu':>10} {'rel diff':>9} "
          f"{'acc sim':>8} {'acc cpu':>8} {'ms/step sim':>12} {'ms/step cpu':>12}")
    ok = True
    for s, c in zip(sim["epochs"], cpu["epochs"]):
        rel = abs(s["loss"] - c["loss"]) / max(abs(c["loss"]), 1e-12)
        good = rel <= LOSS_RTOL and abs(s["accuracy"] - c["accuracy"]) <= ACC_ATOL
        ok &= good
        print(f"{s['epoch']:>5} {s['loss']:>10.4f} {c['loss']:>10.4f} {rel:>9.2e} "
              f"{s['accuracy']:>8.3f} {c['accuracy']:>8.3f} {s['step_ms']:>12.2f} "
              f"{c['step_ms']:>12.2f}{'' if good else '  <- beyond tolerance'}")
    if not ok:
        print(f"demo: FAILED: neuronsim and CPU disagree beyond loss rtol {LOSS_RTOL} / "
              f"accuracy atol {ACC_ATOL}", file=sys.stderr)
        return 1
    print(f"demo: OK: {len(sim['epochs'])} epochs on {sim['device']} match the CPU run "
          f"(loss rtol {LOSS_RTOL}, accuracy atol {ACC_ATOL})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
