"""The `neuronsim` TorchDynamo backend: torch.compile(model, backend="neuronsim").

Found through the `torch_dynamo_backends` entry point, so a script needs no import
of torch_neuronsim (and neither do the repro scripts Dynamo's minifier writes).
It is torch_xla's openxla path (AOTAutograd, then torch_xla's dynamo bridge traces
the ATen graph into one XLA computation that the PJRT plugin compiles with ncc)
with three differences:

- the graph is compiled when Dynamo compiles it, not at its first call, so a
  neuronsim compile failure is raised inside the backend and Dynamo reports it as
  BackendCompilerFailed with the plugin's message (graphs with symbolic shapes are
  still compiled at their first call);
- inputs on the CPU are moved to the NeuronCore and the outputs moved back, so a
  model that was never `.to(xla)` also runs on the device (each call copies);
- Dynamo's minifier works against it after AOT too (TORCHDYNAMO_REPRO_AFTER=aot):
  torch 2.9's after-AOT minifier knows only Inductor, so the repro scripts written
  for this backend start with a line that makes them compile with neuronsim.

Test hook (like torch's relu_compile_error_TESTING_ONLY backends), read at every
compile: NEURONSIM_DYNAMO_INJECT="compile_error:OP" makes the device compute every
ATen op OP (e.g. relu) in complex64, which the neuronsim compiler rejects with its
own error (the device has no complex types); "accuracy:OP" adds 1 to OP's result on the device. Several entries are
separated by commas.
"""

import copy
import functools
import os

# The backend runs on the simulated NeuronCore; a process that picked no device
# gets it (torch_xla reads PJRT_DEVICE when it first creates its client).
os.environ.setdefault("PJRT_DEVICE", "NEURONSIM")

import torch  # noqa: E402
from functorch.compile import make_boxed_func  # noqa: E402
from torch._dynamo import config as dynamo_config  # noqa: E402
from torch._dynamo.backends.common import aot_autograd  # noqa: E402
from torch.utils import _pytree as pytree  # noqa: E402

INJECT_ENV = "NEURONSIM_DYNAMO_INJECT"
# First lines of every repro script the minifier writes for this backend.
_AFTER_AOT_PRELUDE = ("import torch_neuronsim.dynamo as _neuronsim_dynamo\n"
                      "_neuronsim_dynamo.use_in_after_aot_repro()\n")
_AFTER_DYNAMO_PRELUDE = "import torch_neuronsim.dynamo  # the xla device, the backend\n"


class NeuronSimCompileError(RuntimeError):
    """The neuronsim compiler (or torch_xla's lowering for it) refused a graph."""


# ---------------------------------------------------------------- test hook

def injections(value=None):
    """[(kind, op)] from NEURONSIM_DYNAMO_INJECT ("compile_error:relu,accuracy:mul")."""
    value = os.environ.get(INJECT_ENV, "") if value is None else value
    out = []
    for item in filter(None, (s.strip() for s in value.split(","))):
        kind, _, op = item.partition(":")
        if kind not in ("compile_error", "accuracy") or not op:
            raise ValueError(f"{INJECT_ENV}={value!r}: each entry is compile_error:OP or "
                             f"accuracy:OP (OP an ATen op name such as relu)")
        out.append((kind, op))
    return out


def _op_name(node):
    if node.op != "call_function":
        return None
    t = node.target
    packet = getattr(t, "_overloadpacket", None)
    if packet is not None:
        return packet.__name__
    return getattr(t, "__name__", None)


def _inject(gm):
    """Applies the test hook to an ATen graph (in place); True if it changed it."""
    changed = False
    for kind, op in injections():
        for node in [n for n in gm.graph.nodes if _op_name(n) == op]:
            val = node.meta.get("val")
            dtype = getattr(val, "dtype", torch.float32)
            with gm.graph.inserting_after(node):
                if kind == "accuracy":
                    first = last = gm.graph.call_function(torch.ops.aten.add.Tensor, (node, 1.0))
                else:
                    # the device has no complex types: a real compile error from ncc
                    first = gm.graph.call_function(torch.ops.aten._to_copy.default, (node,),
                                                   {"dtype": torch.complex64})
                    with gm.graph.inserting_after(first):
                        mul = gm.graph.call_function(torch.ops.aten.mul.Tensor, (first, 1.0))
                    with gm.graph.inserting_after(mul):
                        real = gm.graph.call_function(torch.ops.aten.real.default, (mul,))
                    with gm.graph.inserting_after(real):
                        last = gm.graph.call_function(torch.ops.aten._to_copy.default, (real,),
                                                      {"dtype": dtype})
            node.replace_all_uses_with(last, delete_user_cb=lambda u: u is not first)
            changed = True
    if changed:
        gm.recompile()
    return changed


# ---------------------------------------------------------------- the device

def _check_device():
    import torch_xla.runtime as xr
    dt = xr.device_type()
    if dt != "NEURONSIM":
        raise NeuronSimCompileError(
            f"backend 'neuronsim' runs on PJRT_DEVICE=NEURONSIM, but this process's "
            f"torch_xla runs on {dt!r} (PJRT_DEVICE={os.environ.get('PJRT_DEVICE')!r}); "
            f"unset PJRT_DEVICE or set it to NEURONSIM")


def _concrete(x):
    if isinstance(x, torch.Tensor):
        return not any(isinstance(s, torch.SymInt) for s in (*x.shape, *x.stride()))
    return not isinstance(x, (torch.SymInt, torch.SymFloat, torch.SymBool))


class _DeviceGraph:
    """One ATen graph compiled for the NeuronCore (torch_xla's dynamo bridge)."""

    def __init__(self, gm, example_inputs):
        import torch_xla
        self.gm = gm
        self.dev = torch_xla.device()
        tensors = [a for a in example_inputs if isinstance(a, torch.Tensor)]
        self.on_xla = any(t.device.type == "xla" for t in tensors)
        self.home = next((t.device for t in tensors if t.device.type != "xla"),
                         torch.device("cpu"))
        self.compiled = None
        if all(_concrete(a) for a in example_inputs):
            from torch._subclasses.fake_tensor import unset_fake_temporarily
            # AOTAutograd calls its compilers under its fake mode: the trace needs
            # real device tensors. Stand-ins of the example inputs' shapes do (values
            # do not matter to it; the bridge binds the real inputs at each call).
            with unset_fake_temporarily(), torch.no_grad():
                dummy = [torch.zeros(tuple(a.shape), dtype=a.dtype, device=self.dev)
                         if isinstance(a, torch.Tensor) else a for a in example_inputs]
                self._compile(dummy)

    def _compile(self, xargs):
        from torch_xla._dynamo import dynamo_bridge as bridge
        try:
            self.compiled = bridge.extract_compiled_graph(self.gm, xargs)
        except Exception as e:
            # The bridge leaves the failed trace pending on the device tensors; the
            # next graph (the minifier compiles many in one process) must not see it.
            import torch_xla
            torch_xla._XLAC._clear_pending_irs(str(self.dev))
            raise NeuronSimCompileError(str(e)) from e

    def _to_device(self, a):
        if isinstance(a, torch.Tensor) and a.device.type != "xla":
            return a.to(self.dev)
        return a

    def __call__(self, *args):
        xargs = [self._to_device(a) for a in args]
        if self.compiled is None:
            self._compile(xargs)
        out = self.compiled(*xargs)
        if not self.on_xla:
            out = pytree.tree_map_only(torch.Tensor, lambda t: t.to(self.home), out)
        return out


def compile_aten_graph(gm, example_inputs, **_kwargs):
    """The backend's compiler of ATen graphs (AOTAutograd's forward and backward):
    a boxed callable. Also what the after-AOT repro scripts call."""
    _check_device()
    # torch_xla's bridge rewrites the module it compiles (its submodules become
    # device calls), and the minifier's accuracy checks run the graph they passed
    # in as the reference: compile (and inject into) a copy.
    gm = copy.deepcopy(gm)
    _inject(gm)
    return make_boxed_func(_DeviceGraph(gm, example_inputs))


# ---------------------------------------------------------------- minifier

def _stable_hash_storage(storage, *, stable_hash=False):
    return _hash_storage(storage, stable_hash=True)


_hash_storage = None


def _set_repro_prelude():
    global _hash_storage
    from torch._dynamo.repro import after_aot, after_dynamo
    from torch.utils import _content_store
    # The repro writers name input files by a hash whose fast path, for CPU
    # tensors, compiles a kernel with Inductor (a C++ build, tens of seconds on a
    # small machine) in every process; the plain SHA-1 of the bytes is as good.
    if _content_store.hash_storage is not _stable_hash_storage:
        _hash_storage = _content_store.hash_storage
        _content_store.hash_storage = _stable_hash_storage
    if _AFTER_AOT_PRELUDE not in after_aot.extra_imports:
        after_aot.extra_imports = after_aot.extra_imports + "\n" + _AFTER_AOT_PRELUDE
    if _AFTER_DYNAMO_PRELUDE not in after_dynamo.extra_imports:
        after_dynamo.extra_imports = after_dynamo.extra_imports + "\n" + _AFTER_DYNAMO_PRELUDE


def use_in_after_aot_repro():
    """Called by the first lines of an after-AOT repro script: its `run`, `minify`
    and `minifier-query` commands compile with neuronsim instead of Inductor (torch
    2.9 hard-codes Inductor's compile_fx_inner there), and the scripts it writes in
    turn carry these lines."""
    import torch._inductor.compile_fx as compile_fx
    compile_fx.compile_fx_inner = compile_aten_graph
    _set_repro_prelude()


def _fw_compiler(gm, example_inputs):
    if dynamo_config.repro_after is not None:
        _set_repro_prelude()
    if dynamo_config.repro_after == "aot":
        from torch._dynamo.repro.after_aot import wrap_compiler_debug
        # "inductor": the only name torch 2.9's after-AOT minifier accepts at
        # TORCHDYNAMO_REPRO_LEVEL=4; the scripts it writes run neuronsim (prelude).
        return wrap_compiler_debug(compile_aten_graph, compiler_name="inductor")(
            gm, example_inputs)
    return compile_aten_graph(gm, example_inputs)


_aot = aot_autograd(fw_compiler=_fw_compiler)


@functools.wraps(_aot)
def neuronsim(gm, example_inputs, **kwargs):
    """torch.compile(model, backend="neuronsim")."""
    injections()  # a malformed test hook fails here, inside the backend
    return _aot(gm, example_inputs, **kwargs)


neuronsim.__name__ = "neuronsim"
