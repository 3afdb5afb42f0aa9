# What the plugin shows torch_xla (devices) and what the runtime itself reports.
import json

import torch
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr

dev = xm.xla_device()
a = (torch.ones(8, 8).to(dev) * 3).sum()
xm.mark_step()
out = {"value": a.item(), "device_type": xr.device_type(),
       "devices": xm.get_xla_supported_devices(),
       "real_devices": xm.xla_real_devices([str(dev)])}
try:
    import torch_neuronsim.runtime as rt
    out["runtime_report"] = rt.metrics_report()
    out["memory"] = rt.memory_usage()
except Exception as e:
    out["runtime_error"] = repr(e)
print("RESULT " + json.dumps(out))
