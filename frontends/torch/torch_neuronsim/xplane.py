"""XPlane protobufs (the profiler's XSpace, tsl/profiler/protobuf/xplane.proto) written
without a protobuf library, and libnrt's Chrome trace turned into XPlanes: the
format TensorBoard's profile plugin reads as <run>/<host>.xplane.pb.

Only what is needed is encoded: XSpace.planes/hostnames; XPlane id, name, lines,
event and stat metadata; XLine id, name, display name, timestamp, events; XEvent
metadata id, offset, duration, stats; XStat int64/double/string values. Reading is
limited to splitting an XSpace into its planes and finding a plane's name, which
is all that merging planes into an existing file needs.
"""

import struct

from ._pb import encode_varint as _varint, iter_fields  # noqa: F401 (iter_fields is public)

HOST_PLANE = "/host:CPU"
# xprof's trace viewer shows planes with this prefix when there are no GPU or TPU
# planes; each becomes one process, its lines threads.
DEVICE_PLANE_PREFIX = "/device:CUSTOM:"
CORE_PID_BASE = 1 << 24   # libnrt's trace: pid of NeuronCore n is 2^24 + n


# ---------------------------------------------------------------- wire format

def _key(field, wire_type):
    return _varint((field << 3) | wire_type)


def _int(field, v):
    return _key(field, 0) + _varint(int(v))


def _bytes(field, b):
    return _key(field, 2) + _varint(len(b)) + b


def _str(field, s):
    return _bytes(field, s.encode("utf-8", "replace"))


def _double(field, v):
    return _key(field, 1) + struct.pack("<d", float(v))


# splitting a message into its fields: iter_fields, re-exported for the callers of
# this module (plane_names, merge_into_space, the tests)


def plane_names(xspace_bytes):
    """[(name, id)] of an XSpace's planes."""
    out = []
    for field, wt, v, _ in iter_fields(xspace_bytes):
        if field == 1 and wt == 2:
            name, pid = "", 0
            for f, w, pv, _ in iter_fields(v):
                if f == 2 and w == 2:
                    name = pv.decode("utf-8", "replace")
                elif f == 1 and w == 0:
                    pid = pv
            out.append((name, pid))
    return out


# ---------------------------------------------------------------- building

class Plane:
    """One XPlane being built. Event and stat metadata are interned by name."""

    def __init__(self, plane_id, name, md_base=1):
        self.id = plane_id
        self.name = name
        self._event_md = {}
        self._stat_md = {}
        self._md_next = md_base
        self.lines = {}   # line id -> [name, display_name, timestamp_ns, [events]]

    def _md(self, table, name):
        if name not in table:
            table[name] = self._md_next
            self._md_next += 1
        return table[name]

    def line(self, line_id, name, timestamp_ns, display_name=None):
        if line_id not in self.lines:
            self.lines[line_id] = [name, display_name or name, timestamp_ns, []]
        return line_id

    def event(self, line_id, name, start_ns, dur_ns, stats=None):
        """An event of line line_id from start_ns (absolute, ns) lasting dur_ns."""
        ln = self.lines[line_id]
        if start_ns < ln[2]:
            # XEvent offsets are unsigned from the line's timestamp: move it back.
            shift = ln[2] - start_ns
            ln[2] = start_ns
            ln[3] = [(m, off + shift * 1000, d, s) for (m, off, d, s) in ln[3]]
        md = self._md(self._event_md, name)
        st = []
        for k, v in (stats or {}).items():
            if v is None or v == "":
                continue
            st.append((self._md(self._stat_md, k), v))
        ln[3].append((md, int(round((start_ns - ln[2]) * 1000)), int(round(dur_ns * 1000)), st))

    def encode_body(self):
        """The plane's fields (without its id and name)."""
        out = bytearray()
        for lid, (name, disp, ts, events) in sorted(self.lines.items()):
            lb = bytearray(_int(1, lid) + _str(2, name) + _int(3, ts))
            for md, off, dur, stats in events:
                eb = bytearray(_int(1, md) + _int(2, off) + _int(3, dur))
                for sid, v in stats:
                    if isinstance(v, bool):
                        sb = _int(1, sid) + _int(4, int(v))
                    elif isinstance(v, int):
                        sb = _int(1, sid) + _int(4, v)
                    elif isinstance(v, float):
                        sb = _int(1, sid) + _double(2, v)
                    else:
                        sb = _int(1, sid) + _str(5, str(v))
                    eb += _bytes(4, sb)
                lb += _bytes(4, bytes(eb))
            lb += _int(10, lid) + _str(11, disp)
            out += _bytes(3, bytes(lb))
        for name, mid in self._event_md.items():
            entry = _int(1, mid) + _bytes(2, _int(1, mid) + _str(2, name))
            out += _bytes(4, entry)
        for name, mid in self._stat_md.items():
            entry = _int(1, mid) + _bytes(2, _int(1, mid) + _str(2, name))
            out += _bytes(5, entry)
        return bytes(out)

    def encode(self):
        return _int(1, self.id) + _str(2, self.name) + self.encode_body()


def encode_space(planes, hostnames=()):
    out = bytearray()
    for p in planes:
        out += _bytes(1, p.encode() if isinstance(p, Plane) else p)
    for h in hostnames:
        out += _str(4, h)
    return bytes(out)


# ---------------------------------------------------------------- libnrt trace

def profile_start_time(xspace_bytes):
    """The profile_start_time stat (wall-clock ns) of the "Task Environment" plane
    TSL writes, or None. TSL stores every line's timestamp relative to it."""
    for field, wt, v, _ in iter_fields(xspace_bytes):
        if field != 1 or wt != 2:
            continue
        name, md, stats = "", {}, []
        for f, w, pv, _ in iter_fields(v):
            if f == 2 and w == 2:
                name = pv.decode("utf-8", "replace")
            elif f == 5 and w == 2:
                for f2, w2, ev, _ in iter_fields(pv):
                    if f2 == 2 and w2 == 2:
                        mid = mname = None
                        for f3, w3, x, _ in iter_fields(ev):
                            if f3 == 1:
                                mid = x
                            elif f3 == 2 and w3 == 2:
                                mname = x.decode("utf-8", "replace")
                        md[mid] = mname
            elif f == 6 and w == 2:
                stats.append({f2: x for f2, w2, x, _ in iter_fields(pv)})
        if name != "Task Environment":
            continue
        for st in stats:
            if md.get(st.get(1)) == "profile_start_time":
                v = st.get(3, st.get(4))
                return int(v) if isinstance(v, int) else None
    return None


def task_environment_plane(plane_id, start_ns, stop_ns):
    """TSL's "Task Environment" plane: the profile's wall-clock start and stop."""
    p = Plane(plane_id, "Task Environment")
    body = bytearray()
    for i, (k, v) in enumerate((("profile_start_time", start_ns),
                                ("profile_stop_time", stop_ns)), start=1):
        body += _bytes(6, _int(1, i) + _int(3, v))
        body += _bytes(5, _int(1, i) + _bytes(2, _int(1, i) + _str(2, k)))
    return _int(1, p.id) + _str(2, p.name) + bytes(body)


def planes_from_nrt_trace(trace, shift_ns, host_plane_name=HOST_PLANE,
                          host_plane_id=0, first_device_id=0, md_base=1, line_id_base=0):
    """XPlanes of a libnrt trace (docs/profiler.md): the host process's threads as
    lines of a host plane, each NeuronCore as a device plane with one line per
    engine (events named by the HLO instruction) and its jobs line.

    libnrt's times are CLOCK_MONOTONIC ns, otherData.base_ns + ts; the planes get
    that plus shift_ns (TSL's files hold wall-clock ns minus the profile's start:
    shift by CLOCK_REALTIME - CLOCK_MONOTONIC - profile_start_time).
    Returns (host_plane, [device planes]); host_plane is None without host events."""
    other = trace.get("otherData", {})
    base = int(other.get("base_ns", 0)) + int(shift_ns)
    names = {}      # (pid, tid) -> thread name
    procs = {}      # pid -> process name
    for e in trace.get("traceEvents", []):
        if e.get("ph") == "M":
            if e.get("name") == "thread_name":
                names[(e["pid"], e.get("tid"))] = e.get("args", {}).get("name", "")
            elif e.get("name") == "process_name":
                procs[e["pid"]] = e.get("args", {}).get("name", "")
    host = None
    cores = {}
    for e in trace.get("traceEvents", []):
        ph = e.get("ph")
        if ph not in ("X", "i", "I"):
            continue
        pid, tid = e.get("pid"), e.get("tid", 0)
        start = base + int(round(float(e.get("ts", 0)) * 1000))
        dur = int(round(float(e.get("dur", 0)) * 1000)) if ph == "X" else 0
        args = dict(e.get("args") or {})
        if e.get("cat"):
            args.setdefault("category", e["cat"])
        if isinstance(pid, int) and pid >= CORE_PID_BASE:
            core = pid - CORE_PID_BASE
            p = cores.get(core)
            if p is None:
                p = cores[core] = Plane(first_device_id + core,
                                        f"{DEVICE_PLANE_PREFIX}{core} "
                                        f"{procs.get(pid, f'NeuronCore {core}')}", md_base)
            p.line(tid, names.get((pid, tid), f"engine {tid}"), start)
            # The trace viewer names a span by its event: the HLO instruction.
            p.event(tid, e.get("name", "?"), start, dur, args)
        else:
            if host is None:
                host = Plane(host_plane_id, host_plane_name, md_base)
            tname = names.get((pid, tid)) or f"thread {tid}"
            lid = line_id_base + tid
            host.line(lid, f"neuronsim runtime: {tname} (tid {tid})", start)
            name = e.get("name", "?")
            if name == "nrt_execute" and args.get("model"):
                name = f"nrt_execute {args['model']}"
            host.event(lid, name, start, dur, args)
    return host, [cores[c] for c in sorted(cores)]


def merge_into_space(xspace_bytes, host_plane, device_planes):
    """xspace_bytes with the device planes added, and the host plane's lines added
    to the existing host plane (a new host plane when there is none). Plane ids of
    device planes are moved past the ones in use."""
    fields = list(iter_fields(xspace_bytes))
    used = {pid for name, pid in plane_names(xspace_bytes)}
    out = bytearray()
    merged_host = False
    for field, wt, v, raw in fields:
        if field == 1 and wt == 2 and host_plane is not None:
            name = next((pv.decode("utf-8", "replace") for f, w, pv, _ in iter_fields(v)
                         if f == 2 and w == 2), "")
            if name == host_plane.name:
                # Concatenated fields merge: the plane gains lines and metadata
                # (ids chosen high enough not to meet the existing ones).
                out += _bytes(1, bytes(v) + host_plane.encode_body())
                merged_host = True
                continue
        out += raw
    if host_plane is not None and not merged_host:
        out += _bytes(1, host_plane.encode())
    next_id = max(used | {0}) + 1
    for p in device_planes:
        if p.id in used:
            p.id = next_id
            next_id += 1
        used.add(p.id)
        out += _bytes(1, p.encode())
    return bytes(out)
