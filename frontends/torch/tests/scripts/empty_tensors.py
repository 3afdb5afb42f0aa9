# Empty tensors in a graph, unchanged PyTorch: an empty batch (device data of zero
# elements) through a linear layer, torch.zeros(0, 4) @ w, an empty slice beside
# real outputs, a sum over nothing, and a training step that sees an empty batch.
import json

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

torch.manual_seed(0)
dev = xm.xla_device()
lin = nn.Linear(4, 3).to(dev)
w = torch.randn(4, 3).to(dev)
x = torch.randn(5, 4).to(dev)
empty_batch = torch.empty(0, 4).to(dev)      # a zero-element parameter of the graph
a = lin(empty_batch)                         # [0, 3]
b = torch.zeros(0, 4, device=dev) @ w        # [0, 3]
sl = x[2:2]                                  # [0, 4], an empty slice
s = (x[3:3] @ w).sum(0)                      # [3], a sum over nothing
z = x @ w                                    # a real output next to them
xm.mark_step()
result = {"shapes": [list(t.shape) for t in (a, b, sl, s, z)],
          "s": s.cpu().tolist(), "z": z.cpu().tolist(),
          "empty": [t.cpu().numel() for t in (a, b, sl)]}

# an SGD step whose loss sums over an empty batch besides a real one
opt = torch.optim.SGD(lin.parameters(), lr=0.1)
for batch in (x, empty_batch):
    opt.zero_grad()
    out = lin(batch)
    loss = out.sum() + (lin(empty_batch) ** 2).sum()
    loss.backward()
    opt.step()
    xm.mark_step()
result["weight"] = lin.weight.detach().cpu().tolist()
result["out_shape"] = list(out.shape)
print("RESULT " + json.dumps(result))
