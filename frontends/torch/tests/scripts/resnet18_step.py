# torchvision's resnet18: a forward pass, then two training steps (SGD), small images.
import json

import torch
import torch.nn as nn
import torchvision
import torch_xla.core.xla_model as xm

torch.manual_seed(0)
dev = xm.xla_device()
model = torchvision.models.resnet18(num_classes=10).to(dev)
g = torch.Generator().manual_seed(2)
x = torch.randn(4, 3, 64, 64, generator=g)
y = torch.randint(0, 10, (4,), generator=g)
model.eval()
with torch.no_grad():
    logits = model(x.to(dev)).cpu()
model.train()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
losses = []
for _ in range(2):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x.to(dev)), y.to(dev))
    loss.backward()
    opt.step()
    xm.mark_step()
    losses.append(loss.item())
print("RESULT " + json.dumps({"logits": logits.tolist(), "losses": losses,
                              "fc_sum": float(model.fc.weight.detach().cpu().sum())}))
