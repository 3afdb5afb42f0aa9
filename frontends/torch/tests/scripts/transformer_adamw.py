# A transformer encoder layer trained with AdamW.
import json

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

torch.manual_seed(0)
dev = xm.xla_device()
layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.0,
                                   batch_first=True).to(dev)
head = nn.Linear(64, 8).to(dev)
params = list(layer.parameters()) + list(head.parameters())
opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01)
g = torch.Generator().manual_seed(3)
x = torch.randn(4, 16, 64, generator=g)
y = torch.randint(0, 8, (4,), generator=g)
losses = []
for _ in range(3):
    opt.zero_grad()
    out = head(layer(x.to(dev)).mean(dim=1))
    loss = nn.functional.cross_entropy(out, y.to(dev))
    loss.backward()
    opt.step()
    xm.mark_step()
    losses.append(loss.item())
print("RESULT " + json.dumps({"losses": losses,
                              "head_sum": float(head.weight.detach().cpu().sum())}))
