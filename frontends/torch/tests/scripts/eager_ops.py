# An ordinary PyTorch/XLA script, run unchanged with and without
# NEURON_USE_EAGER_DEBUG_MODE=1: twenty small ops, then (argument "nan") a NaN
# from log(-1).
import json
import sys

import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.debug.metrics as met

dev = xm.xla_device()
x = torch.ones(16, device=dev)
w = torch.full((16,), 0.5, device=dev)
for _ in range(10):
    x = x * w + 1
values = x.cpu().tolist()


def samples(name):
    d = met.metric_data(name)
    return d[0] if d else 0


out = {"eager": torch_xla._XLAC._get_use_eager_mode(), "values": values,
       "torch_xla": {k: samples(k) for k in ("CompileTime", "ExecuteTime",
                                               "EagerOpCompileTime", "EagerOpExecuteTime")}}
try:
    import torch_neuronsim.runtime as rt
    out["runtime_report"] = rt.metrics_report()
    out["runtime_executions"] = rt.counter_value("ExecuteComputation")
except Exception as e:  # the CPU device has no neuronsim runtime
    out["runtime_error"] = repr(e)

if sys.argv[1:] == ["nan"]:
    y = torch.tensor([1.0, -1.0, 4.0], device=dev)
    try:
        z = torch.log(y)  # NAN_LINE
        z = z * 2 + 1
        z.cpu()
        out["raised"] = False
    except Exception as e:
        out["raised"] = True
        out["message"] = str(e)
print("RESULT " + json.dumps(out))
