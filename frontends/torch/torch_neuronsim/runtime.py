"""The runtime's own view, read from libnrt's public C API through ctypes: its metrics
report (CompileTime of the plugin, device execution times, snapshot copies ...),
counters and device memory by use. The plugin links the same libnrt.so, so this
reads the runtime the process's torch_xla device runs on."""

import ctypes

from ._paths import nrt_library_path

_MEM_CATEGORIES = ("tensors", "constants", "code", "scratch", "staging", "snapshot")
_lib = None


class _MemUsage(ctypes.Structure):
    # include/nrt/nrt_neuronsim.h: nrt_neuronsim_mem_usage_t
    _fields_ = [("total", ctypes.c_uint64), ("in_use", ctypes.c_uint64),
                ("peak", ctypes.c_uint64),
                ("by_category", ctypes.c_uint64 * len(_MEM_CATEGORIES)),
                ("host_tensors", ctypes.c_uint64), ("host_snapshot", ctypes.c_uint64)]


def _nrt():
    global _lib
    if _lib is None:
        # RTLD_NOLOAD would be stricter, but loading by the same path returns the
        # copy the plugin already mapped (one runtime per process).
        lib = ctypes.CDLL(nrt_library_path())
        lib.nrt_neuronsim_metrics_report.restype = ctypes.c_void_p
        lib.nrt_neuronsim_counter_value.restype = ctypes.c_int64
        lib.nrt_neuronsim_counter_value.argtypes = [ctypes.c_char_p]
        lib.nrt_neuronsim_get_mem_usage.argtypes = [ctypes.POINTER(_MemUsage)]
        lib.nrt_neuronsim_get_mem_usage.restype = ctypes.c_int
        _lib = lib
    return _lib


def metrics_report():
    """The runtime's metrics report, in torch_xla's metrics_report() text format."""
    lib = _nrt()
    p = lib.nrt_neuronsim_metrics_report()
    if not p:
        raise MemoryError("nrt_neuronsim_metrics_report: out of memory")
    try:
        return ctypes.string_at(p).decode("utf-8", "replace")
    finally:
        ctypes.CDLL(None).free(ctypes.c_void_p(p))


def counter_value(name):
    """A runtime counter's value (0 when it does not exist)."""
    return int(_nrt().nrt_neuronsim_counter_value(name.encode()))


def memory_usage():
    """Device memory by use (bytes), as neuron-top and neuron-monitor show it.
    Raises RuntimeError before the runtime is initialised (no device used yet)."""
    u = _MemUsage()
    st = _nrt().nrt_neuronsim_get_mem_usage(ctypes.byref(u))
    if st != 0:
        raise RuntimeError(f"nrt_neuronsim_get_mem_usage failed with NRT status {st}: "
                           f"is a neuronsim device in use in this process?")
    out = {"total": u.total, "in_use": u.in_use, "peak": u.peak,
           "host_tensors": u.host_tensors, "host_snapshot": u.host_snapshot}
    out.update({c: u.by_category[i] for i, c in enumerate(_MEM_CATEGORIES)})
    return out
