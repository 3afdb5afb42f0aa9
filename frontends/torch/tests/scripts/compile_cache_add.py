# One small graph, run by test_compile_cache.py twice in two processes with the same
# NEURON_COMPILE_CACHE_URL: the second process finds its NEFF in the persistent cache.
import json

import torch
import torch_xla.core.xla_model as xm

dev = xm.xla_device()
a = torch.arange(6, dtype=torch.float32).reshape(2, 3).to(dev)
b = torch.full((2, 3), 0.5).to(dev)
y = (a * 2 + b).sum(dim=1)
xm.mark_step()
print("RESULT " + json.dumps({"y": y.cpu().tolist()}), flush=True)
