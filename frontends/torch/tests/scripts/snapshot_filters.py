# On-demand snapshots with the filters torch-neuronx users apply: one small graph
# runs once on every visible NeuronCore; the dump directory's files are reported.
import json
import os
import re

import torch
import torch_xla.core.xla_model as xm

dump = re.search(r"--xla_dump_to=(\S+)", os.environ.get("XLA_FLAGS", "")).group(1)
devices = xm.get_xla_supported_devices()
sums = []
for d in devices:
    dev = torch.device(d)
    x = torch.full((4, 4), 2.0).to(dev)
    y = (x @ x).relu()
    xm.mark_step()
    sums.append(float(y.cpu().sum()))
files = []
for root, _, names in os.walk(dump):
    files += [n for n in names if n.endswith(".decomposed_hlo_snapshot")]
print("RESULT " + json.dumps({"devices": devices, "sums": sums, "files": sorted(files)}))
