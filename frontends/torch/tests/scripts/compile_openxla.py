# torch.compile with the openxla Dynamo backend.
import json

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

torch.manual_seed(0)
dev = xm.xla_device()
model = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 4)).to(dev)
compiled = torch.compile(model, backend="openxla")
x = torch.randn(8, 32, generator=torch.Generator().manual_seed(4))
outs = [compiled(x.to(dev)).cpu().tolist() for _ in range(2)]
print("RESULT " + json.dumps({"out": outs[0], "out2": outs[1]}))
