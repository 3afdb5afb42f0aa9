# Profiling as the PyTorch/XLA guide shows: a profiler server, named blocks and
# steps, a trace of a few training steps taken from a background thread.
# Usage: profile_tensorboard.py LOGDIR PORT (start_trace/stop_trace write LOGDIR_api)
import json
import sys
import threading
import time

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.debug.profiler as xp

logdir, port = sys.argv[1], int(sys.argv[2])
server = xp.start_server(port)

torch.manual_seed(0)
dev = xm.xla_device()
model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
loss_fn = nn.CrossEntropyLoss()
data = [(torch.randn(32, 64), torch.randint(0, 10, (32,))) for _ in range(4)]


def train_step(step):
    x, y = data[step % len(data)]
    with xp.StepTrace("train_step", step_num=step):
        with xp.Trace("forward"):
            loss = loss_fn(model(x.to(dev)), y.to(dev))
        with xp.Trace("backward"):
            loss.backward()
        with xp.Trace("optimizer"):
            opt.step()
            opt.zero_grad()
    return loss


for step in range(3):  # warm-up: compilations happen here
    train_step(step)

duration_ms = 2000
xp.trace_detached(f"localhost:{port}", logdir, duration_ms=duration_ms)
t0 = time.time()
step = 3
while time.time() - t0 < duration_ms / 1000 + 0.5:
    loss = train_step(step)
    step += 1
for t in threading.enumerate():
    if t is not threading.main_thread():
        t.join()

# The programmatic way: start_trace/stop_trace around a few steps.
xp.start_trace(logdir + "_api")
for _ in range(5):
    loss = train_step(step)
    step += 1
xp.stop_trace()
# the spool torch_neuronsim.profiler keeps the device trace in: gone at exit
prof = sys.modules.get("torch_neuronsim.profiler")
spool = prof._state["spool"] if prof else None
print("RESULT " + json.dumps({"steps": step, "loss": loss.item(), "spool": spool}))
