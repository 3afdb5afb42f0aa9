# torch-neuronx 2.1's per-execution snapshot decision: the user registers
# fn(name, addressable_device_index, execution_count) and runs with
# XLA_FLAGS="--xla_dump_hlo_snapshots --xla_dump_to=DIR". Each phase runs the same
# small graph three times under another callback (the model's execution count runs
# on: 0-2, 3-5, ...); the files each phase added are reported.
import json
import logging
import os
import re

import torch
import torch_xla.core.xla_model as xm

import torch_neuronsim

logging.basicConfig(level=logging.WARNING)
dump = re.search(r"--xla_dump_to=(\S+)", os.environ.get("XLA_FLAGS", "")).group(1)
calls = []


def listing():
    out = set()
    for root, _, files in os.walk(dump):
        out |= {f for f in files if f.endswith(".decomposed_hlo_snapshot")}
    return out


def every_second(name, device, count):          # a bool: dump the inputs or not
    calls.append([name, device, count])
    return count % 2 == 1


def outputs_then_both(name, device, count):      # the words the runtime knows
    return "outputs" if count % 3 == 0 else ["inputs", "outputs"]


def broken(name, device, count):                 # a bug in the user's callback
    raise KeyError("no such rule")


def nonsense(name, device, count):
    return 42


dev = xm.xla_device()
w = torch.full((8, 8), 0.5).to(dev)
phases = {}
for label, fn in [("every_second", every_second), ("outputs_then_both", outputs_then_both),
                  ("broken", broken), ("nonsense", nonsense), ("default", None)]:
    torch_neuronsim.register_hlo_snapshot_callback(fn)
    before = listing()
    for i in range(3):
        x = torch.full((8, 8), float(i + 1)).to(dev)
        y = torch.tanh(x @ w)
        xm.mark_step()
        y.cpu()
    phases[label] = sorted(listing() - before)
print("RESULT " + json.dumps({"phases": phases, "calls": calls}))
