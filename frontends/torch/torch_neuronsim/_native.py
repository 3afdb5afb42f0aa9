"""What the native side is, read without starting it: the PJRT plugin's API version and
extensions (from its PJRT_Api table), libnrt's version, the tools of the build."""

import ctypes
import os

from ._paths import _CHECKOUT, nrt_library_path, pjrt_library_path

# include/pjrt/pjrt_c_api.h: PJRT_Extension_Type
PJRT_EXTENSION_NAMES = (
    "gpu_custom_call", "profiler", "custom_partitioner", "stream", "layouts", "ffi",
    "memory_descriptions", "triton", "raw_buffer", "phase_compile", "example",
    "unknown", "cross_host_transfers", "executable_metadata")


class _ExtBase(ctypes.Structure):
    pass


_ExtBase._fields_ = [("struct_size", ctypes.c_size_t), ("type", ctypes.c_int),
                     ("next", ctypes.POINTER(_ExtBase))]


class _ApiVersion(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("extension_start", ctypes.c_void_p),
                ("major_version", ctypes.c_int), ("minor_version", ctypes.c_int)]


class _ApiHead(ctypes.Structure):
    # The first members of PJRT_Api, which every PJRT version keeps in place.
    _fields_ = [("struct_size", ctypes.c_size_t),
                ("extension_start", ctypes.POINTER(_ExtBase)),
                ("pjrt_api_version", _ApiVersion)]


def pjrt_api_info(path=None):
    """{"path", "api_version": "MAJOR.MINOR", "extensions": [names]} of the plugin.
    Only reads the table GetPjrtApi returns (no PJRT_Plugin_Initialize, no client)."""
    path = path or pjrt_library_path()
    lib = ctypes.CDLL(path)
    lib.GetPjrtApi.restype = ctypes.POINTER(_ApiHead)
    api = lib.GetPjrtApi().contents
    exts = []
    e = api.extension_start
    seen = 0
    while e and seen < 64:  # a corrupt chain must not loop forever
        t = e.contents.type
        exts.append(PJRT_EXTENSION_NAMES[t] if 0 <= t < len(PJRT_EXTENSION_NAMES)
                    else f"type{t}")
        e = e.contents.next
        seen += 1
    v = api.pjrt_api_version
    return {"path": path, "api_version": f"{v.major_version}.{v.minor_version}",
            "extensions": exts}


class _NrtVersion(ctypes.Structure):
    # include/nrt/nrt_version.h
    _fields_ = [("rt_major", ctypes.c_uint64), ("rt_minor", ctypes.c_uint64),
                ("rt_patch", ctypes.c_uint64), ("rt_maintenance", ctypes.c_uint64),
                ("rt_detail", ctypes.c_char * 128), ("git_hash", ctypes.c_char * 64)]


def nrt_version(path=None):
    """libnrt's nrt_get_version (usable before nrt_init)."""
    path = path or nrt_library_path()
    lib = ctypes.CDLL(path)
    v = _NrtVersion()
    st = lib.nrt_get_version(ctypes.byref(v), ctypes.c_size_t(ctypes.sizeof(v)))
    if st != 0:
        raise RuntimeError(f"nrt_get_version failed with NRT status {st}")
    return {"path": path,
            "version": f"{v.rt_major}.{v.rt_minor}.{v.rt_patch}.{v.rt_maintenance}",
            "detail": v.rt_detail.decode(errors="replace"),
            "git_hash": v.git_hash.decode(errors="replace")}


def build_dir():
    """The build directory the libraries come from (NEURONSIM_BUILD_DIR, else the
    checkout's build/), or None."""
    b = os.environ.get("NEURONSIM_BUILD_DIR")
    if b and os.path.isdir(b):
        return b
    b = os.path.join(_CHECKOUT, "build")
    return b if os.path.isdir(b) else None


def tool_path(name):
    """Path of a neuronsim tool (build/tools/NAME), or None."""
    b = build_dir()
    if b:
        p = os.path.join(b, "tools", name)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return None
