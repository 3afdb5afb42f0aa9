"""HLO snapshots from Python: torch-neuronx 2.1's register_hlo_snapshot_callback, and
a reader and writer of neuronsim's snapshot files (docs/snapshot.md, format 1.0).

The callback decides, per execution, what the runtime dumps while on-demand snapshots
are on (XLA_FLAGS="--xla_dump_hlo_snapshots --xla_dump_to=DIR"):

    import torch_neuronsim

    def fn(name, addressable_device_index, execution_count):
        return execution_count >= 100          # True: the inputs, False: nothing

    torch_neuronsim.register_hlo_snapshot_callback(fn)

What fn may return (docs/torch.md, "Choosing which executions to dump"):
True -> "inputs"; False, None, "" -> nothing; a string of the words "inputs" and
"outputs" (also "both"/"all" for the two), separated by spaces, commas or '+'; or a
list/tuple/set of such words. Anything else, and any exception fn raises, is logged
(logger "torch_neuronsim") and means "no dump": a bug in the callback never stops
the training run.
"""

import ctypes
import json
import logging
import os
import struct
import threading

import numpy as np

log = logging.getLogger("torch_neuronsim")

# include/nrt/nrt_neuronsim.h: nrt_neuronsim_snapshot_cb_t. The result is a
# const char * the runtime reads after we return: declared void * so ctypes hands
# over the address of one of the static buffers below instead of converting (and
# freeing) a temporary bytes object.
_CB_TYPE = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint32,
                            ctypes.c_uint64, ctypes.c_void_p)

# The four answers the runtime understands, alive for the whole process.
_ANSWER_BUFS = {
    frozenset(): ctypes.create_string_buffer(b""),
    frozenset({"inputs"}): ctypes.create_string_buffer(b"inputs"),
    frozenset({"outputs"}): ctypes.create_string_buffer(b"outputs"),
    frozenset({"inputs", "outputs"}): ctypes.create_string_buffer(b"inputs outputs"),
}
_WORDS = {"inputs": {"inputs"}, "input": {"inputs"}, "outputs": {"outputs"},
          "output": {"outputs"}, "both": {"inputs", "outputs"},
          "all": {"inputs", "outputs"}, "none": set()}

_lock = threading.Lock()
_current = None      # (user fn, ctypes thunk) now registered
_thunks = []         # every thunk ever registered: the runtime may still be inside an old one
_warned = set()


def _warn_once(key, msg, *args, exc_info=False):
    with _lock:
        first = key not in _warned
        _warned.add(key)
    if first:
        log.warning(msg + " (reported once)", *args, exc_info=exc_info)
    else:
        log.debug(msg, *args)


def _words(answer):
    """The set of dump kinds an answer of the user's callback means; raises
    ValueError for an answer that means nothing known."""
    if answer is None or answer is False:
        return set()
    if answer is True:
        return {"inputs"}
    if isinstance(answer, bytes):
        answer = answer.decode("utf-8", "replace")
    if isinstance(answer, str):
        parts = answer.replace(",", " ").replace("+", " ").split()
    elif isinstance(answer, (list, tuple, set, frozenset)):
        parts = []
        for a in answer:
            if isinstance(a, bytes):
                a = a.decode("utf-8", "replace")
            if not isinstance(a, str):
                raise ValueError(f"a {type(a).__name__} in the list")
            parts.append(a)
    else:
        raise ValueError(f"a {type(answer).__name__}")
    out = set()
    for p in parts:
        w = _WORDS.get(p.strip().lower())
        if w is None:
            raise ValueError(f"unknown word {p!r}")
        out |= w
    return out


def decide(answer):
    """What the runtime is told for the callback's answer: "", "inputs", "outputs"
    or "inputs outputs" (ValueError for an answer that is none of the accepted
    forms)."""
    return _ANSWER_BUFS[frozenset(_words(answer))].value.decode()


def _make_thunk(fn):
    def thunk(name, device, count, _arg):
        module = name.decode("utf-8", "replace") if name else ""
        try:
            answer = fn(module, int(device), int(count))
        except BaseException:  # noqa: BLE001 - nothing may escape into the runtime
            _warn_once(("raise", id(fn)), "snapshot callback %r raised for model %r "
                       "execution %d: no snapshot for this execution", fn, module, count,
                       exc_info=True)
            return ctypes.addressof(_ANSWER_BUFS[frozenset()])
        try:
            kinds = frozenset(_words(answer))
        except ValueError as e:
            _warn_once(("answer", id(fn)), "snapshot callback %r returned %r (%s) for "
                       "model %r execution %d: expected True/False, 'inputs', 'outputs', "
                       "'inputs outputs' or ''; no snapshot for this execution",
                       fn, answer, e, module, count)
            kinds = frozenset()
        return ctypes.addressof(_ANSWER_BUFS[kinds])
    return _CB_TYPE(thunk)


def _lib():
    from .runtime import _nrt
    lib = _nrt()
    f = lib.nrt_neuronsim_set_snapshot_callback
    f.argtypes = [_CB_TYPE, ctypes.c_void_p]
    f.restype = ctypes.c_int
    return lib


def register_hlo_snapshot_callback(fn):
    """Makes fn(name, addressable_device_index, execution_count) decide what each
    execution dumps while on-demand snapshots are on (XLA_FLAGS
    --xla_dump_hlo_snapshots, or NEURON_DUMP_HLO_SNAPSHOT=1); None restores the
    default (the inputs of every execution). Process-wide; may be called before
    torch_xla uses the device. fn runs on the runtime's execution thread, so it
    must be quick and thread-safe. Returns the previously registered function (or
    None)."""
    global _current
    if fn is not None and not callable(fn):
        raise TypeError(f"register_hlo_snapshot_callback: {fn!r} is not callable")
    lib = _lib()
    thunk = _make_thunk(fn) if fn is not None else None
    with _lock:
        prev = _current[0] if _current else None
        if thunk is not None:
            _thunks.append(thunk)
        st = lib.nrt_neuronsim_set_snapshot_callback(
            thunk if thunk is not None else ctypes.cast(None, _CB_TYPE), None)
        if st != 0:
            raise RuntimeError(f"nrt_neuronsim_set_snapshot_callback failed with NRT status {st}")
        _current = (fn, thunk) if fn is not None else None
    return prev


# ------------------------------------------------------------------ files

_MAGIC = b"NSIMSNAP"
_HEADER = struct.Struct("<8sHHIQQQQQQQQQII24sQ")
assert _HEADER.size == 128
DTYPES = {  # snapshot dtype -> numpy dtype (bf16 as its raw 16-bit pattern)
    "f32": "<f4", "f16": "<f2", "bf16": "<u2", "s8": "|i1", "s16": "<i2", "s32": "<i4",
    "s64": "<i8", "u8": "|u1", "u16": "<u2", "u32": "<u4", "u64": "<u8", "pred": "|u1",
}
_xxh = None


def _xxh64_py(data, seed=0):
    """XXH64 in Python, used only when libxxhash cannot be loaded."""
    P1, P2, P3, P4, P5 = (0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9,
                          0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5)
    M = (1 << 64) - 1

    def rotl(x, r):
        return ((x << r) | (x >> (64 - r))) & M

    def rnd(acc, lane):
        return (rotl((acc + lane * P2) & M, 31) * P1) & M

    def merge(acc, v):
        return (((acc ^ rnd(0, v)) * P1) + P4) & M

    n, i = len(data), 0
    if n >= 32:
        v = [(seed + P1 + P2) & M, (seed + P2) & M, seed & M, (seed - P1) & M]
        while i + 32 <= n:
            lanes = struct.unpack_from("<4Q", data, i)
            v = [rnd(v[k], lanes[k]) for k in range(4)]
            i += 32
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & M
        for k in range(4):
            h = merge(h, v[k])
    else:
        h = (seed + P5) & M
    h = (h + n) & M
    while i + 8 <= n:
        h = (rotl(h ^ rnd(0, struct.unpack_from("<Q", data, i)[0]), 27) * P1 + P4) & M
        i += 8
    if i + 4 <= n:
        h = (rotl(h ^ (struct.unpack_from("<I", data, i)[0] * P1 & M), 23) * P2 + P3) & M
        i += 4
    while i < n:
        h = (rotl(h ^ (data[i] * P5 & M), 11) * P1) & M
        i += 1
    h ^= h >> 33
    h = (h * P2) & M
    h ^= h >> 29
    h = (h * P3) & M
    h ^= h >> 32
    return h


def xxh64(data):
    """XXH64 (seed 0) of bytes-like data, through libxxhash when it is there."""
    global _xxh
    if _xxh is None:
        try:
            lib = ctypes.CDLL("libxxhash.so.0")
            lib.XXH64.restype = ctypes.c_uint64
            lib.XXH64.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint64]
            _xxh = lib.XXH64
        except OSError:
            _xxh = False
    mv = memoryview(data).cast("B")
    if not _xxh:
        return _xxh64_py(bytes(mv))
    if len(mv) == 0:
        return _xxh(None, 0, 0)
    buf = (ctypes.c_char * len(mv)).from_buffer_copy(mv) if mv.readonly else \
        (ctypes.c_char * len(mv)).from_buffer(mv)
    return _xxh(ctypes.addressof(buf), len(mv), 0)


class SnapshotTensor:
    def __init__(self, name, role, dtype, shape, array, alias_input=-1):
        self.name, self.role, self.dtype = name, role, dtype
        self.shape = list(shape)
        self.array = array          # numpy, DTYPES[dtype], C order
        self.alias_input = alias_input


class Snapshot:
    """A snapshot file in memory: meta (the JSON object), hlo (text) and tensors."""

    def __init__(self, meta, hlo, tensors):
        self.meta, self.hlo, self.tensors = meta, hlo, tensors

    def inputs(self):
        return [t for t in self.tensors if t.role == "input"]

    def outputs(self):
        return [t for t in self.tensors if t.role == "output"]

    @property
    def module(self):
        return self.meta.get("module_name") or ""


def read(path):
    """Reads a snapshot file (checks magic, version and the checksums of the
    metadata and HLO; the tensor data is checked by `neuron-snapshot info`)."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 128 or data[:8] != _MAGIC:
        raise ValueError(f"{path}: not a neuronsim HLO snapshot (no NSIMSNAP magic)")
    (_, major, _minor, _hs, fsize, moff, msize, mck, hoff, hsize, hck, doff, _dsize, _n,
     _flags, _res, _hck) = _HEADER.unpack_from(data, 0)
    if major != 1:
        raise ValueError(f"{path}: snapshot format {major}.x, this reader supports 1.x")
    if fsize != len(data):
        raise ValueError(f"{path}: truncated: the file has {len(data)} bytes, its header "
                         f"says {fsize}")
    meta_b = data[moff:moff + msize]
    hlo_b = data[hoff:hoff + hsize]
    if xxh64(meta_b) != mck or xxh64(hlo_b) != hck:
        raise ValueError(f"{path}: metadata or HLO checksum mismatch: the file is corrupt")
    meta = json.loads(meta_b)
    tensors = []
    for t in meta["tensors"]:
        dt = np.dtype(DTYPES[t["dtype"]])
        shape = [int(d) for d in t["shape"]]
        off, size = int(t["offset"]), int(t["size"])
        arr = np.frombuffer(data, dtype=dt, count=size // dt.itemsize,
                            offset=doff + off).reshape(shape).copy()
        tensors.append(SnapshotTensor(t["name"], t["role"], t["dtype"], shape, arr,
                                      int(t.get("alias_input", -1))))
    return Snapshot(meta, hlo_b.decode("utf-8", "replace"), tensors)


def write(path, meta, hlo, tensors):
    """Writes a format-1.0 snapshot: meta is the JSON object without "tensors" (its
    "format" is set), hlo the HLO text, tensors SnapshotTensor objects in file
    order. Written to a temporary file and renamed, mode 0600."""
    hlo_b = hlo.encode() if isinstance(hlo, str) else bytes(hlo)
    table, blobs, off = [], [], 0
    for t in tensors:
        arr = np.asarray(t.array, dtype=np.dtype(DTYPES[t.dtype]), order="C")
        b = arr.tobytes()
        table.append({"name": t.name, "role": t.role, "dtype": t.dtype,
                      "shape": [int(d) for d in t.shape], "alias_input": int(t.alias_input),
                      "offset": off, "size": len(b), "checksum": f"{xxh64(b):016x}"})
        blobs.append((off, b))
        off += (len(b) + 63) // 64 * 64
    data_size = off
    m = {"format": "neuronsim-hlo-snapshot"}
    m.update({k: v for k, v in meta.items() if k not in ("format", "tensors")})
    m["tensors"] = table
    meta_b = json.dumps(m, separators=(",", ":")).encode()
    moff = 128
    hoff = moff + len(meta_b)
    doff = (hoff + len(hlo_b) + 4095) // 4096 * 4096
    fsize = doff + data_size
    buf = bytearray(fsize)
    buf[moff:hoff] = meta_b
    buf[hoff:hoff + len(hlo_b)] = hlo_b
    for o, b in blobs:
        buf[doff + o:doff + o + len(b)] = b
    head = _HEADER.pack(_MAGIC, 1, 0, 128, fsize, moff, len(meta_b), xxh64(meta_b), hoff,
                        len(hlo_b), xxh64(hlo_b), doff, data_size, len(tensors), 0,
                        bytes(24), 0)
    head = head[:120] + struct.pack("<Q", xxh64(head[:120]))
    buf[:128] = head
    tmp = f"{path}.tmp-{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(buf)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
