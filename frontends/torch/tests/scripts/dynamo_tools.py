# torch.compile with backend="neuronsim" (no torch_neuronsim import), the Dynamo
# tools on it: explain's graph breaks, recompilations (TORCH_LOGS=recompiles).
import json

import torch
import torch._dynamo
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.debug.metrics as met

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
x = torch.randn(8, 16, generator=torch.Generator().manual_seed(1))
ref = model(x)

# A CPU model: the backend moves it to the NeuronCore and the results back.
compiled = torch.compile(model, backend="neuronsim")
out_cpu = compiled(x)

# The torch_xla way: model and data on the device.
dev = xm.xla_device()
model_x = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
model_x.load_state_dict(model.state_dict())
model_x = model_x.to(dev)
out_xla = torch.compile(model_x, backend="neuronsim")(x.to(dev)).cpu()

# Training through the compiled model (forward and backward on the device).
opt = torch.optim.SGD(model.parameters(), lr=0.1)
losses = []
for _ in range(3):
    opt.zero_grad()
    loss = compiled(x).pow(2).mean()
    loss.backward()
    opt.step()
    losses.append(loss.item())


def with_break(t):
    y = torch.relu(t) * 2
    print("graph break here")  # NOT a traceable op: Dynamo breaks the graph
    return y.sum() + 1


explained = torch._dynamo.explain(with_break)(x)
explain_backend = torch._dynamo.backends.debugging.ExplainWithBackend("neuronsim")
got = torch.compile(with_break, backend=explain_backend)(x)
explained_on_device = explain_backend.output()


def scaled(t, k):
    return (t * k).sum()


f = torch.compile(scaled, backend="neuronsim", dynamic=False)
recompiled = [f(torch.ones(4), 2.0).item(), f(torch.ones(6), 2.0).item(),
              f(torch.ones(6), 3.0).item()]



def in_complex(t):
    return (t.to(torch.complex64) * 3).real.sum()  # no complex types on the device


try:
    torch.compile(in_complex, backend="neuronsim")(x)
    compile_error = None
except Exception as e:
    inner = getattr(e, "inner_exception", None)
    compile_error = {"type": type(e).__name__, "module": type(e).__module__,
                     "inner": type(inner).__name__, "message": str(e)}

print("RESULT " + json.dumps({
    "compile_error": compile_error,
    "executions": met.metric_data("ExecuteTime")[0],
    "compiles": met.metric_data("CompileTime")[0],
    "ref": ref.tolist(), "out_cpu": out_cpu.tolist(), "out_xla": out_xla.tolist(),
    "out_device": str(out_cpu.device), "losses": losses,
    "graph_count": explained.graph_count, "graph_break_count": explained.graph_break_count,
    "break_reasons": [str(r.reason) for r in explained.break_reasons],
    "device_graph_count": explained_on_device.graph_count,
    "device_break_count": explained_on_device.graph_break_count,
    "with_break": float(got), "with_break_ref": float(with_break(x)),
    "recompiled": recompiled}))
