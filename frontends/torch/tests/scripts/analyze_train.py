# A small training loop, unchanged: an MLP trained with SGD, and an accuracy
# metric computed in complex64 on the device (the simulated NeuronCore has no complex
# types, so its compiler refuses them, as neuronx-cc does).
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

torch.manual_seed(0)
dev = xm.xla_device()
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(32, 8).to(dev)
y = torch.randint(0, 4, (32,)).to(dev)
for step in range(3):
    opt.zero_grad()
    out = model(x)
    loss = F.cross_entropy(out, y)
    loss.backward()
    opt.step()
    acc = ((out.argmax(1) == y).float().to(torch.complex64) * 1).real.mean()  # C64_LINE
    xm.mark_step()
print(f"loss {loss.item():.4f} accuracy {acc.item():.3f}")
