# A model compiled with backend="neuronsim"; under TORCHDYNAMO_REPRO_AFTER the
# minifier writes its launcher when neuronsim fails to compile it or computes it
# wrongly (NEURONSIM_DYNAMO_INJECT plays the bug).
import json

import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4), nn.Tanh())
x = torch.randn(4, 8)
compiled = torch.compile(model, backend="neuronsim")
try:
    out = compiled(x)
    res = {"raised": None, "max_diff": (out - model(x)).abs().max().item()}
except Exception as e:
    inner = getattr(e, "inner_exception", None)
    res = {"raised": type(e).__name__, "message": str(e),
           "inner": type(inner).__name__ if inner is not None else None,
           "minifier_path": getattr(inner, "minifier_path", None) or getattr(e, "minifier_path", None)}
print("RESULT " + json.dumps(res))
