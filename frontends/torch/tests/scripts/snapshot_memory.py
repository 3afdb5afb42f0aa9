# The memory a NEURON_DUMP_HLO_SNAPSHOT mode costs, as the runtime reports it: a
# graph with 64 KiB of inputs runs twice; the runtime's metrics report and memory
# by use are printed.
import json

import torch
import torch_xla.core.xla_model as xm

import torch_neuronsim.runtime as rt

dev = xm.xla_device()
a = torch.full((64, 128), 0.25).to(dev)     # 32 KiB
b = torch.full((128, 64), 2.0).to(dev)      # 32 KiB
for _ in range(2):
    c = torch.tanh(a @ b)
    xm.mark_step()
    c.cpu()
print("RESULT " + json.dumps({"report": rt.metrics_report(), "memory": rt.memory_usage()}))
