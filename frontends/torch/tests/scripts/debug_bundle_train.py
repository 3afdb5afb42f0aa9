# A short training loop that ends in a NaN (log of a negative value), as a bug
# report's script would: run under neuronsim-debug-run, unchanged.
import json
import os
import sys

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
for step in range(3):
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
    xm.mark_step()
    losses.append(loss.item())
try:
    bad = torch.log(model(x) - 100.0).mean()  # NAN_LINE
    print(bad.item())
    raised = None
except Exception as e:  # torch_xla raises with the device's message
    raised = str(e)
print("RESULT " + json.dumps({"losses": losses, "raised": raised}), flush=True)
# A failing run with a status of its own (os._exit: torch_xla's exit hook would
# turn any status into 1 after a failed execution).
sys.stderr.flush()
os._exit(3)
