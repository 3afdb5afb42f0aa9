# The debug guide's lazy-tensor walk-through: printing a lazy tensor cuts and runs
# a graph, mark_step runs one graph for every pending tensor, an op without an XLA
# lowering falls back to the CPU and shows as an aten:: counter.
import json

import torch
import torch_xla.core.xla_model as xm
import torch_xla.debug.metrics as met


def executions():
    d = met.metric_data("ExecuteTime")
    return d[0] if d else 0


dev = xm.xla_device()
a = torch.arange(12, dtype=torch.float32).reshape(3, 4).to(dev)
b = a * 2 + 1
e0 = executions()
print(b)
e1 = executions()
c = b.sum(dim=0)
d = torch.relu(b - 10)
f = (b * b).mean()
xm.mark_step()
xm.wait_device_ops()  # mark_step only schedules the graph; ExecuteTime lands when it ran
e2 = executions()
vals = {"b": b.cpu().tolist(), "c": c.cpu().tolist(), "d": d.cpu().tolist(), "f": f.item()}
e3 = executions()
h = torch.histc(a.flatten(), bins=4, min=0, max=12)
xm.mark_step()
vals["histc"] = h.cpu().tolist()
report = met.metrics_report()
print("RESULT " + json.dumps({"executions": [e0, e1, e2, e3], "values": vals,
                              "report": report, "counters": met.counter_names()}))
