# The profiler guide's model: an MLP trained with SGD, one graph per step.
import json
import sys

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.debug.metrics as met

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 4
torch.manual_seed(0)
dev = xm.xla_device()
model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
                      nn.Linear(64, 10)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()
g = torch.Generator().manual_seed(1)
losses, compiles = [], []
for step in range(steps):
    x = torch.randn(16, 64, generator=g).to(dev)
    y = torch.randint(0, 10, (16,), generator=g).to(dev)
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    xm.mark_step()
    losses.append(loss.item())
    d = met.metric_data("CompileTime")
    compiles.append(d[0] if d else 0)
w = model[0].weight.detach().cpu()
print("RESULT " + json.dumps({"losses": losses, "compiles": compiles,
                              "w0": w[:4, :8].tolist(), "w0_sum": float(w.sum())}))
