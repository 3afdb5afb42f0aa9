"""An ordinary PyTorch/XLA training script: a 784-120-84-10 MLP on Fashion-MNIST
with SGD, one graph per step (xm.mark_step). Nothing in it knows about neuronsim:
PJRT_DEVICE picks the device (NEURONSIM, CPU, ...).

  PJRT_DEVICE=NEURONSIM python train_mlp.py --epochs 3
"""

import argparse
import gzip
import json
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.debug.metrics as met

DATA_DIR = "/usr/share/datasets/fashion-mnist"  # Debian's dataset-fashion-mnist


def load_idx(path):
    with gzip.open(path, "rb") as f:
        magic, n = struct.unpack(">II", f.read(8))
        if magic == 2051:
            rows, cols = struct.unpack(">II", f.read(8))
            return np.frombuffer(f.read(), np.uint8).reshape(n, rows * cols)
        return np.frombuffer(f.read(), np.uint8)


def dataset(n_train, n_test, seed):
    """Fashion-MNIST when installed, else a seeded synthetic set of the same shape."""
    if os.path.isdir(DATA_DIR):
        x = load_idx(os.path.join(DATA_DIR, "train-images-idx3-ubyte.gz"))[:n_train]
        y = load_idx(os.path.join(DATA_DIR, "train-labels-idx1-ubyte.gz"))[:n_train]
        tx = load_idx(os.path.join(DATA_DIR, "t10k-images-idx3-ubyte.gz"))[:n_test]
        ty = load_idx(os.path.join(DATA_DIR, "t10k-labels-idx1-ubyte.gz"))[:n_test]
        name = "fashion-mnist"
    else:
        g = np.random.default_rng(seed)
        centers = g.integers(0, 256, size=(10, 784))
        y = g.integers(0, 10, n_train)
        ty = g.integers(0, 10, n_test)
        x = np.clip(centers[y] + g.normal(0, 60, (n_train, 784)), 0, 255)
        tx = np.clip(centers[ty] + g.normal(0, 60, (n_test, 784)), 0, 255)
        name = "synthetic"
    f = lambda a: torch.tensor(np.asarray(a, np.float32) / 255.0)
    return name, f(x), torch.tensor(np.asarray(y, np.int64)), f(tx), torch.tensor(
        np.asarray(ty, np.int64))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = torch.relu(self.fc1(x))
        x = torch.relu(self.fc2(x))
        return self.fc3(x)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--train", type=int, default=2048, help="training samples")
    ap.add_argument("--test", type=int, default=1024, help="test samples")
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--metrics", action="store_true", help="print met.metrics_report()")
    ap.add_argument("--json", help="write per-epoch results to this file")
    args = ap.parse_args()

    torch.manual_seed(args.seed)
    name, x, y, tx, ty = dataset(args.train, args.test, args.seed)
    device = torch_xla.device()
    model = MLP().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()
    print(f"training a 784-120-84-10 MLP on {name} ({args.train} samples, batch "
          f"{args.batch}) on {xm.xla_real_devices([str(device)])[0]}", flush=True)

    results = []
    steps_per_epoch = args.train // args.batch
    for epoch in range(1, args.epochs + 1):
        t0 = time.perf_counter()
        total = torch.zeros((), device=device)
        for i in range(steps_per_epoch):
            xb = x[i * args.batch:(i + 1) * args.batch].to(device)
            yb = y[i * args.batch:(i + 1) * args.batch].to(device)
            opt.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()
            total += loss.detach()
            torch_xla.sync()
        mean_loss = total.item() / steps_per_epoch
        elapsed = time.perf_counter() - t0
        with torch.no_grad():
            pred = model(tx.to(device)).argmax(dim=1).cpu()
        acc = (pred == ty).float().mean().item()
        results.append({"epoch": epoch, "loss": mean_loss, "accuracy": acc,
                        "step_ms": 1e3 * elapsed / steps_per_epoch})
        print(f"epoch {epoch}: loss {mean_loss:.4f}  test accuracy {acc:.3f}  "
              f"{1e3 * elapsed / steps_per_epoch:.2f} ms/step", flush=True)
    if args.metrics:
        print(met.metrics_report())
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"dataset": name, "epochs": results,
                       "device": xm.xla_real_devices([str(device)])[0]}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
