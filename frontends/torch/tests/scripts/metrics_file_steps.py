# A few training steps with XLA_METRICS_FILE set (and, when the test asks,
# NEURONSIM_RUNTIME_METRICS_FILE): torch_xla's metrics_saver appends its report
# at every mark_step; the runtime must not append its own to the same file.
import json

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

torch.manual_seed(0)
dev = xm.xla_device()
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x = torch.randn(16, 8).to(dev)
y = torch.randn(16, 1).to(dev)
losses = []
for step in range(4):
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
    xm.mark_step()
    losses.append(loss.item())
print("RESULT " + json.dumps({"losses": losses, "steps": 4}), flush=True)
