#!/usr/bin/env python3
"""Regenerates the HloModuleProto test inputs of tests/unit/compiler/hlo/test_hlo_proto.c.

Each case runs a small PyTorch/XLA program on the CPU PJRT device with XLA's dump
flags, takes the module XLA received (the *.before_optimizations.hlo.pb dump, the
form a PJRT plugin is handed) and writes two files here:

  NAME.pb   the serialized xla.HloModuleProto (XLA dumps an xla.HloProto whose
            field 1 is the module; this script unwraps it)
  NAME.txt  XLA's own text dump of the same module (*.before_optimizations.txt)

The tests never run this script; the files are committed. To regenerate (needs
torch 2.9 + torch_xla 2.9, e.g. the venv the project documents):

  PJRT_DEVICE=CPU /tmp/venvtest/v/bin/python tests/unit/compiler/proto/gen_protos.py [CASE...]

Outputs are small on purpose (tiny tensors): the whole directory stays well under
2 MB. With XLA_HLO_DEBUG=1 (set for the cases marked debug below) torch_xla fills
OpMetadata (op_type, op_name, source_file, source_line).
"""
import glob
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# name -> (program run after the common prologue, XLA_HLO_DEBUG on?[, options])
CASES = {
    # A two-layer MLP training step: dot, broadcast, reduce, compare/select
    # (relu grad), cross-entropy (log-softmax, one-hot through iota/compare).
    "mlp_train": ("""
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).to(d)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(5, 8).to(d); y = torch.tensor([0, 1, 2, 3, 0]).to(d)
for _ in range(2):
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward(); opt.step(); torch_xla.sync()
print(loss.item())
""", True),
    # Convolution, batch norm, max pooling forward and backward (convolution
    # dnums, window, reduce-window, select-and-scatter, batch-norm-*).
    "conv_train": ("""
model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                      nn.MaxPool2d(2), nn.Flatten(), nn.Linear(4 * 4 * 4, 3)).to(d)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
x = torch.randn(2, 1, 8, 8).to(d); y = torch.tensor([0, 2]).to(d)
for _ in range(2):
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward(); opt.step(); torch_xla.sync()
print(loss.item())
""", False),
    # Embedding lookup and its gradient: gather, scatter-add.
    "embedding": ("""
emb = nn.Embedding(10, 4).to(d)
idx = torch.tensor([[1, 3, 3], [0, 9, 2]]).to(d)
out = emb(idx)
out.sum().backward()
torch_xla.sync()
print(emb.weight.grad.sum().item())
""", False),
    # index_put with and without accumulation, index_select, masked_fill.
    "index_put": ("""
x = torch.zeros(6, 3).to(d)
i = torch.tensor([4, 1, 4]).to(d)
v = torch.arange(9, dtype=torch.float32).reshape(3, 3).to(d)
a = x.index_put((i,), v, accumulate=True)
b = x.index_put((i,), v)
c = torch.index_select(a, 0, torch.tensor([1, 4]).to(d))
m = a.masked_fill(a > 3, -1.0)
r = (a + b).sum() + c.sum() + m.sum()
torch_xla.sync()
print(r.item())
""", False),
    # Softmax and layer norm, forward and backward, in bf16 and f32.
    "softmax_layernorm": ("""
ln = nn.LayerNorm(6).to(d)
x = torch.randn(3, 6, requires_grad=True).to(d)
h = ln(x)
s = F.softmax(h, dim=-1)
t = F.log_softmax(h.to(torch.bfloat16), dim=0).float()
(s * t).sum().backward()
torch_xla.sync()
print(ln.weight.grad.sum().item())
""", True),
    # argmax/argmin (variadic reduce), sort, topk, cumsum, flip, pad, cat.
    "argmax_sort": ("""
x = torch.randn(4, 5).to(d)
a = x.argmax(dim=1) + x.argmin(dim=0).sum()
s, si = torch.sort(x, dim=1, stable=True)
tv, ti = torch.topk(x, 2, dim=1)
c = torch.cumsum(x, dim=0)
f = torch.flip(x, [1])
p = F.pad(x, (1, 2, 0, 1), value=0.5)
q = torch.cat([x, f], dim=0)[::2, 1:4]
r = a.sum() + si.sum() + ti.sum() + s.sum() + tv.sum() + c.sum() + p.sum() + q.sum()
torch_xla.sync()
print(r.item())
""", False),
    # A while loop through torch's while_loop (torch_xla lowers it to an HLO while
    # whose condition and body call the traced functions; tuple parameters, a
    # root that is not the last instruction).
    "while_loop": ("""
import torch_xla.experimental.fori_loop
from torch._higher_order_ops.while_loop import while_loop
def cond(i, x):
    return i > 0
def body(i, x):
    return i - 1, torch.sin(x) + torch.cos(x)
i0 = torch.tensor(4, dtype=torch.int32, device=d)
x0 = torch.zeros(3, 3, device=d)
_, out = while_loop(cond, body, (i0, x0))
torch_xla.sync()
print(out.sum().item())
""", False),
    # Element-wise grab bag with integer and predicate types, constants of several
    # types, clamp, pow, remainder, where, bitwise ops, rng.
    "elementwise_mix": ("""
x = torch.randn(2, 3).to(d)
n = torch.tensor([[1, -2, 3], [4, 5, -6]], dtype=torch.int32).to(d)
u = torch.tensor([[1, 2, 3], [4, 5, 6]], dtype=torch.uint8).to(d)
y = torch.where(x > 0, x.clamp(-0.5, 0.5) ** 2, torch.remainder(x, 0.3))
k = (n & 6) | (n >> 1) ^ 3
z = (u * 3 + 7) // 2
h = x.to(torch.float16) * 1.5
e = torch.isfinite(x / (x - x)) | (n.abs() > 2)
r = torch.rand(2, 3, device=d)
out = y.sum() + k.sum().float() + z.sum().float() + h.float().sum() + e.float().sum() + r.sum()
torch_xla.sync()
print(out.item())
""", False),

    # Collectives on two CPU devices (two processes): all-reduce (tuple form, with
    # and without replica groups), reduce-scatter, collective-permute, all-to-all;
    # the module header carries replica_count=2 (the proto's device_assignment).
    # torch_xla's CPU collectives then hang in XLA's rendezvous and the run is
    # killed, after the module was compiled and dumped: its exit status is ignored.
    "collectives": ("""
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp
def f(index):
    d = torch_xla.device()
    x = torch.arange(8, dtype=torch.float32, device=d) * (index + 1)
    y = xm.all_reduce(xm.REDUCE_SUM, x, groups=[[0, 1]])
    z = xm.all_gather(x, dim=0)
    r = xm.reduce_scatter(xm.REDUCE_SUM, x, 1.0, 0, 2)
    p = xm.collective_permute(x, pairs=[[0, 1], [1, 0]])
    a = xm.all_to_all(x.reshape(2, 4), 0, 0, 2)
    torch_xla.sync()
    print(index, y.cpu(), z.shape, r.shape, p.shape, a.shape)
if __name__ == "__main__":
    xmp.spawn(f, args=())
""", False, {"CPU_NUM_DEVICES": "2", "may_hang": True}),
}

PROLOGUE = """
import torch, torch.nn as nn, torch.nn.functional as F, torch_xla
torch.manual_seed(0)
"""
# every case but the multi-process one uses the device right away
DEVICE = """d = torch_xla.device()
"""


def read_varint(b, i):
    r = s = 0
    while True:
        c = b[i]
        i += 1
        r |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return r, i


def unwrap_hlo_proto(b):
    """Returns field 1 (hlo_module) of a serialized xla.HloProto."""
    i = 0
    while i < len(b):
        key, i = read_varint(b, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            _, i = read_varint(b, i)
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        elif wire == 2:
            n, i = read_varint(b, i)
            if field == 1:
                return b[i:i + n]
            i += n
        else:
            raise ValueError("unexpected wire type %d" % wire)
    raise ValueError("no hlo_module in the HloProto dump")


def run_case(name):
    body, debug = CASES[name][:2]
    opts = CASES[name][2] if len(CASES[name]) > 2 else {}
    with tempfile.TemporaryDirectory() as dump:
        env = dict(os.environ)
        env["PJRT_DEVICE"] = "CPU"
        env["XLA_FLAGS"] = ("--xla_dump_to=%s --xla_dump_hlo_as_proto --xla_dump_hlo_as_text"
                            % dump)
        if debug:
            env["XLA_HLO_DEBUG"] = "1"
        else:
            env.pop("XLA_HLO_DEBUG", None)
        for k, v in opts.items():
            if k.isupper():
                env[k] = v
        # a file, not -c: multiprocessing's spawn re-imports the main module
        script = os.path.join(dump, "case_%s.py" % name)
        with open(script, "w") as f:
            f.write(PROLOGUE + ("" if opts.get("may_hang") else DEVICE) + body)
        if opts.get("may_hang"):
            try:
                subprocess.run([sys.executable, script], env=env, timeout=120)
            except subprocess.TimeoutExpired:
                pass
        else:
            subprocess.run([sys.executable, script], env=env, check=True)
        # the program's module is the largest one (device data transfers and
        # initialisations are compiled as small modules of their own)
        pbs = glob.glob(os.path.join(dump, "*.before_optimizations.hlo.pb"))
        if not pbs:
            raise SystemExit("%s: XLA dumped no before_optimizations proto" % name)
        pb = max(pbs, key=os.path.getsize)
        txt = pb[:-len(".hlo.pb")] + ".txt"
        with open(pb, "rb") as f:
            module = unwrap_hlo_proto(f.read())
        with open(os.path.join(HERE, name + ".pb"), "wb") as f:
            f.write(module)
        with open(txt) as f, open(os.path.join(HERE, name + ".txt"), "w") as g:
            g.write(f.read())
        print("%s: %s (%d bytes)" % (name, os.path.basename(pb), len(module)))


def main():
    names = sys.argv[1:] or list(CASES)
    for n in names:
        if n not in CASES:
            raise SystemExit("unknown case %s (have: %s)" % (n, ", ".join(CASES)))
        run_case(n)


if __name__ == "__main__":
    main()
