# One small graph run twice, then a NaN: under NEURON_DUMP_HLO_SNAPSHOT the runtime
# keeps copies of the inputs (their memory is reported) and dumps the failing one.
import json

import torch
import torch_xla.core.xla_model as xm

dev = xm.xla_device()
w = torch.full((64, 64), 0.5).to(dev)
out = {}
for i in range(2):
    x = torch.full((64, 64), float(i + 1)).to(dev)
    y = torch.tanh(x @ w)
    xm.mark_step()
    y.cpu()
try:
    import torch_neuronsim.runtime as rt
    out["memory"] = rt.memory_usage()
except Exception as e:  # the CPU reference has no neuronsim runtime
    out["memory_error"] = str(e)
x = torch.tensor([[1.0, -1.0], [2.0, 3.0]]).to(dev)
z = torch.sqrt(x) + 1
try:
    z.cpu()
    out["raised"] = False
except Exception as e:
    out["raised"] = True
    out["message"] = str(e)
print("RESULT " + json.dumps(out))
