"""One training workload timed per step, on an XLA device (PJRT_DEVICE picks it) or
in plain PyTorch eager on the CPU (--eager). Prints RESULT {"step_ms": [...],
"phase_ms": [[trace, sync, wait], ...]}: per timed step, the forward, backward and
optimizer step (on an XLA device: traced into lazy tensors), torch_xla.sync()
(the graph's hash, cache lookup and dispatch), and the wait for the loss (the
device's execution, when it runs asynchronously). With --eager --floor, also
"gemm_flops" (the step's matmul and convolution FLOPs) and "peak_gflops" (the
CPU's sgemm peak on these threads): the time no device built on that sgemm
can go below."""

import argparse
import json
import math
import time

import torch
import torch.nn as nn


def build(model):
    if model == "mlp":
        net = nn.Sequential(nn.Linear(784, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                            nn.Linear(84, 10))
        return net, (32, 784), 10
    if model == "resnet18":
        import torchvision
        return torchvision.models.resnet18(num_classes=10), (8, 3, 64, 64), 10
    if model == "mbconv":
        # a MobileNetV2 block's convolutions: pointwise expansion, then a stride-2
        # depthwise 3x3 whose backward has the input gradient (lhs-dilated) and the
        # depthwise weight gradient of the full model's slowest instructions
        net = nn.Sequential(nn.Conv2d(24, 144, 1, bias=False), nn.ReLU6(),
                            nn.Conv2d(144, 144, 3, stride=2, padding=1, groups=144, bias=False),
                            nn.ReLU6(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(144, 10))
        return net, (8, 24, 56, 56), 10
    if model == "mobilenet_v2":
        import torchvision
        return torchvision.models.mobilenet_v2(num_classes=10), (8, 3, 112, 112), 10
    if model == "mobilenet_v2_b96":
        # the corpus step's shapes (xla-mobilenet_v2.hlo): b96 224x224, 1000 classes
        import torchvision
        return torchvision.models.mobilenet_v2(), (96, 3, 224, 224), 1000
    if model == "transformer":
        # one encoder layer (BERT-small sized), its output pooled into a classifier
        class Encoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.layer = nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0,
                                                        batch_first=True)
                self.head = nn.Linear(256, 10)

            def forward(self, x):
                return self.head(self.layer(x).mean(1))
        return Encoder(), (8, 128, 256), 10
    raise SystemExit(f"unknown model {model}")


def _conv_backward_flops(grad_out_shape, x_shape, w_shape, *args, **kwargs):
    # the input and the weight gradient each cost the forward's multiply-adds
    # (w_shape[1] is the input channels per group); torch's own formula counts
    # a grouped convolution's backward as if it were dense (144x for a 144-group
    # depthwise one)
    output_mask = args[7] if len(args) > 7 else kwargs["output_mask"]
    per = 2 * math.prod(grad_out_shape) * math.prod(w_shape[1:])
    return per * (int(output_mask[0]) + int(output_mask[1]))


def gemm_floor(net, x, y):
    """(GEMM-like FLOPs of one training step, the CPU's sgemm peak in GFLOP/s):
    the matmul and convolution FLOPs counted by torch's FlopCounterMode, and the
    best of ten 1024^3 torch.mm calls on this process's threads (the library the
    simulator's MATMUL calls too, oneDNN's sgemm, runs at the same peak)."""
    from torch.utils.flop_counter import FlopCounterMode
    aten = torch.ops.aten
    fc = FlopCounterMode(display=False,
                         custom_mapping={aten.convolution_backward: _conv_backward_flops})
    with fc:
        nn.functional.cross_entropy(net(x), y).backward()
    net.zero_grad()
    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    best = math.inf
    for _ in range(10):
        t0 = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - t0)
    return fc.get_total_flops(), 2 * 1024 ** 3 / best / 1e9


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="mlp")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--eager", action="store_true")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--floor", action="store_true",
                    help="with --eager: also count the step's GEMM FLOPs and time sgemm's peak")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    net, xshape, ncls = build(a.model)
    if a.eager:
        dev, sync = torch.device("cpu"), (lambda: None)
    else:
        import torch_xla
        dev, sync = torch_xla.device(), torch_xla.sync
    net = net.to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    x = torch.randn(*xshape).to(dev)
    y = torch.randint(0, ncls, (xshape[0],)).to(dev)
    times, phases = [], []
    for i in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = nn.functional.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        t1 = time.perf_counter()
        sync()
        t2 = time.perf_counter()
        loss.item()  # wait for the step's result
        t3 = time.perf_counter()
        if i >= a.warmup:
            times.append(1e3 * (t3 - t0))
            phases.append([1e3 * (t1 - t0), 1e3 * (t2 - t1), 1e3 * (t3 - t2)])
    result = {"step_ms": times, "phase_ms": phases}
    if a.floor and a.eager:
        result["gemm_flops"], result["peak_gflops"] = gemm_floor(net, x, y)
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
