# A NaN produced by log of a negative number: the error must name the HLO
# instruction and this file's line.
import json

import torch
import torch_xla.core.xla_model as xm

dev = xm.xla_device()
x = torch.tensor([1.0, -1.0, 2.0, 3.0], device=dev)
y = torch.log(x)  # NAN_LINE
z = y * 2 + 1
try:
    print(z.cpu())
    out = {"raised": False}
except Exception as e:  # torch_xla raises RuntimeError/ValueError with the plugin's message
    out = {"raised": True, "type": type(e).__name__, "message": str(e)}
print("RESULT " + json.dumps(out))
