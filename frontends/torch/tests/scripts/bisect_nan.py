# A training step whose loss becomes NaN: the log of a value that the update drives
# negative. Unchanged user script; neuronsim-bisect finds where.
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

torch.manual_seed(0)
dev = xm.xla_device()
lin = nn.Linear(4, 2).to(dev)
opt = torch.optim.SGD(lin.parameters(), lr=0.5)
x = torch.linspace(-1, 1, 12).reshape(3, 4).to(dev)
for step in range(3):
    opt.zero_grad()
    h = torch.tanh(lin(x))
    loss = torch.log(h.sum() + 1.0)  # NAN_LINE
    loss.backward()
    opt.step()
    xm.mark_step()
    print(f"step {step}: loss {loss.item():.4f}")
