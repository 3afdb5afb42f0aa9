"""Profiles the PyTorch/XLA way (torch_xla.debug.profiler) with the NeuronCores in them.

A script that profiles as the PyTorch/XLA guide shows -- xp.start_server(port),
xp.trace(...) / xp.trace_detached(...) or xp.start_trace/stop_trace, xp.Trace("name")
blocks, xp.StepTrace -- gets, in the same TensorBoard profile run, the device trace
of the executions in that window, recorded by libnrt's profiler (docs/profiler.md):
one process per NeuronCore with a row per engine, one span per instruction named
by its HLO instruction (op_type, FLOPs, bytes, source line in its details), and the
runtime's host threads (nrt_execute, tensor transfers, the xp.Trace blocks).

torch_neuronsim installs this when torch_xla loads its plugin (PJRT_DEVICE=NEURONSIM):
the functions of torch_xla.debug.profiler are wrapped, the user's script is unchanged.

Two facts of the layers below shape it:

- libnrt traces the device executions of every model only in a session that starts
  at nrt_init (NEURON_RT_INSPECT_ENABLE=1, NEURON_RT_INSPECT_DEVICE_PROFILE=session);
  nrt_profile_start records one model's. So torch_neuronsim arms that session before
  the runtime starts when the script will profile: NEURONSIM_DEVICE_PROFILE=1, or
  unset and the main script calls the profiler (start_server/trace/start_trace in its
  source), or xp.start_server is called before the first device use. A window is cut
  out of it with nrt_profile_start/stop on a one-instruction model of its own.
- torch_xla 2.9 registers a profiler for every PJRT plugin and calls it without
  checking that the plugin has the PJRT profiler extension. The neuronsim plugin
  has one (pjrt/profiler.c, docs/pjrt.md), so torch_xla's profiler runs as usual:
  its server, xp.trace/trace_detached and start_trace/stop_trace write torch_xla's
  own XSpace file (host, Python, the plugin's planes), and the window's device and
  runtime planes from libnrt are merged into that file.
"""

import atexit
import ctypes
import glob
import json
import logging
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

from . import xplane as _xp

log = logging.getLogger("torch_neuronsim.profiler")

ENV_DEVICE_PROFILE = "NEURONSIM_DEVICE_PROFILE"
_ANCHOR_HLO = """HloModule neuronsim_profile_window

ENTRY main {
  p0 = f32[1] parameter(0)
  ROOT c = f32[1] copy(p0)
}
"""
_USES_PROFILER = re.compile(r"\b(start_server|trace_detached|start_trace)\s*\(|"
                            r"\bxp\.trace\s*\(|profiler\.trace\s*\(")

_state = {
    "installed": False,
    "armed": False,        # we set NEURON_RT_INSPECT_* before nrt_init
    "spool": None,         # our NEURON_RT_INSPECT_OUTPUT_DIR / window files
    "server_port": None,
    "warned": set(),
    "orig": {},
}
_lock = threading.Lock()
_nrt = None


def _warn_once(key, msg):
    if key not in _state["warned"]:
        _state["warned"].add(key)
        print(f"torch_neuronsim.profiler: {msg}", file=sys.stderr)


def _lib():
    global _nrt
    if _nrt is None:
        from ._paths import nrt_library_path
        lib = ctypes.CDLL(nrt_library_path())
        lib.nrt_load.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int32,
                                 ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p)]
        lib.nrt_unload.argtypes = [ctypes.c_void_p]
        lib.nrt_profile_start.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        lib.nrt_profile_stop.argtypes = [ctypes.c_char_p]
        lib.nrt_neuronsim_trace_begin.argtypes = [ctypes.c_char_p]
        lib.nrt_neuronsim_trace_step.argtypes = [ctypes.c_uint64]
        _nrt = lib
    return _nrt


def _runtime_started():
    """Has this process's torch_xla created its PJRT client (and so run nrt_init)?"""
    xla = sys.modules.get("torch_xla")
    probe = getattr(getattr(xla, "_XLAC", None), "_xla_runtime_is_initialized", None)
    return bool(probe()) if probe else False


def _remove_spool(path):
    """At exit: ends the inspection we armed first. libnrt's own exit handler
    (a C atexit, which runs after Python's) writes a running inspection into
    the spool: it recreated the directory this removed, and every profiled
    process left a neuronsim-profile-* directory in the temp dir."""
    if _state["armed"] and _runtime_started():
        try:
            _lib().nrt_inspect_stop()
        except OSError:
            pass
    shutil.rmtree(path, True)


def _spool():
    if _state["spool"] is None:
        _state["spool"] = tempfile.mkdtemp(prefix="neuronsim-profile-")
        atexit.register(_remove_spool, _state["spool"])
    return _state["spool"]


def device_trace_armed():
    """True when the runtime records the device executions of every model (an
    inspect session in session mode, ours or the user's)."""
    on = os.environ.get("NEURON_RT_INSPECT_ENABLE", "").lower() in ("1", "on", "true", "yes")
    return on and os.environ.get("NEURON_RT_INSPECT_DEVICE_PROFILE", "") == "session"


def arm(reason):
    """Sets NEURON_RT_INSPECT_* for the runtime that starts next. The user's own
    NEURON_RT_INSPECT_ENABLE wins (their session, their output directory)."""
    if _state["armed"] or os.environ.get("NEURON_RT_INSPECT_ENABLE"):
        return
    if _runtime_started():
        return
    os.environ["NEURON_RT_INSPECT_ENABLE"] = "1"
    os.environ["NEURON_RT_INSPECT_DEVICE_PROFILE"] = "session"
    os.environ.setdefault("NEURON_RT_INSPECT_SYSTEM_PROFILE", "1")
    os.environ["NEURON_RT_INSPECT_OUTPUT_DIR"] = os.path.join(_spool(), "session")
    _state["armed"] = True
    log.info("device trace armed (%s)", reason)


def _main_script_profiles():
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if not path or not os.path.isfile(path):
        return False
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return bool(_USES_PROFILER.search(fh.read(1 << 20)))
    except OSError:
        return False


def _maybe_arm_at_import():
    v = os.environ.get(ENV_DEVICE_PROFILE, "").strip().lower()
    if v in ("0", "off", "false", "no"):
        return
    if v in ("1", "on", "true", "yes"):
        arm(f"{ENV_DEVICE_PROFILE}={v}")
    elif _main_script_profiles():
        arm("the main script calls torch_xla.debug.profiler")


# ---------------------------------------------------------------- a window

class _Window:
    """One capture: nrt_profile_start/stop around the window, on an anchor model."""

    _neff = None

    def __init__(self):
        self.model = ctypes.c_void_p()
        self.path = None
        self.loaded = False
        self.started = False

    @classmethod
    def _anchor_neff(cls):
        if cls._neff is None:
            from . import _native
            cc = _native.tool_path("neuronsim-cc")
            if not cc:
                raise RuntimeError("neuronsim-cc not found (NEURONSIM_BUILD_DIR): cannot "
                                   "build the profiling window's anchor model")
            d = _spool()
            src, out = os.path.join(d, "anchor.hlo"), os.path.join(d, "anchor.neff")
            with open(src, "w") as fh:
                fh.write(_ANCHOR_HLO)
            subprocess.run([cc, "compile", src, "-o", out, "-O0", "--no-cache"], check=True,
                           capture_output=True, timeout=120)
            with open(out, "rb") as fh:
                cls._neff = fh.read()
        return cls._neff

    def start(self):
        if not _runtime_started():
            import torch_xla
            torch_xla.device()  # the PJRT client, and so nrt_init
        lib = _lib()
        neff = self._anchor_neff()
        st = lib.nrt_load(neff, len(neff), 0, 1, ctypes.byref(self.model))
        if st != 0:
            raise RuntimeError(f"nrt_load of the profiling anchor failed with NRT status {st}")
        self.loaded = True
        fd, self.path = tempfile.mkstemp(prefix="window-", suffix=".json", dir=_spool())
        os.close(fd)
        st = lib.nrt_profile_start(self.model, self.path.encode())
        if st != 0:
            self.close()
            raise RuntimeError(f"nrt_profile_start failed with NRT status {st} (another "
                               f"nrt_profile_start session open?)")
        self.started = True
        # CLOCK_REALTIME - CLOCK_MONOTONIC, to place libnrt's times on the profiler's
        # wall clock (the smaller of a few reads: the least preempted)
        self.offset = min((time.time_ns() - time.monotonic_ns()) for _ in range(5))

    def stop(self):
        """The window's libnrt trace (dict)."""
        lib = _lib()
        try:
            st = lib.nrt_profile_stop(self.path.encode())
            self.started = False
            if st != 0:
                raise RuntimeError(f"nrt_profile_stop failed with NRT status {st}")
            with open(self.path) as fh:
                return json.load(fh)
        finally:
            self.close()

    def close(self):
        if self.started:
            _lib().nrt_profile_stop(self.path.encode())
            self.started = False
        if self.loaded:
            _lib().nrt_unload(self.model)
            self.loaded = False
        if self.path:
            try:
                os.unlink(self.path)
            except OSError:
                pass


def _write_atomic(path, data):
    d = os.path.dirname(path)
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=d)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


def _check_trace(trace):
    other = trace.get("otherData", {})
    devices = sum(1 for e in trace.get("traceEvents", []) if e.get("cat") == "device")
    if not devices and not device_trace_armed():
        _warn_once("unarmed",
                   "no device trace in this profile: the runtime started without device "
                   f"profiling. Set {ENV_DEVICE_PROFILE}=1 (or call xp.start_server before "
                   "the first use of the device) so that torch_neuronsim arms it.")
    if other.get("jobs_dropped"):
        _warn_once("dropped", f"{other['jobs_dropped']} executions have no device trace: "
                   "the session's span limit (NEURONSIM_PROFILE_MAX_SPANS) was reached")


def _session_events(events, t0):
    """The window opens before torch_xla's session does: what ran before the
    session's start is left out (TensorBoard refuses times before it), and an
    execution goes whole, by its nrt_execute span, as libnrt picks a window's
    executions: cut event by event, one whose nrt_execute began before the
    session kept its later device spans without it."""
    def after(e):
        return t0 + float(e.get("ts", 0)) * 1000 >= 0

    def execution(e):
        a = e.get("args") or {}
        return (a.get("model"), a["exec_index"]) if "exec_index" in a else None

    gone = {execution(e) for e in events if e.get("name") == "nrt_execute" and not after(e)}
    gone.discard(None)
    return [e for e in events
            if e.get("ph") == "M" or (after(e) and execution(e) not in gone)]


def merge_profile(xplane_path, trace, offset):
    """Adds the window's libnrt trace to an XSpace file torch_xla wrote."""
    with open(xplane_path, "rb") as fh:
        space = fh.read()
    # metadata and line ids far from the ones torch_xla's tracers use
    start = _xp.profile_start_time(space)
    shift = offset - (start or 0)
    t0 = int(trace.get("otherData", {}).get("base_ns", 0)) + shift
    trace = dict(trace, traceEvents=_session_events(trace.get("traceEvents", []), t0))
    hp, devs = _xp.planes_from_nrt_trace(trace, shift, md_base=1 << 40,
                                         line_id_base=1 << 31, first_device_id=1000)
    _write_atomic(xplane_path, _xp.merge_into_space(space, hp, devs))


def _xplanes_since(logdir, t0):
    files = glob.glob(os.path.join(logdir, "plugins", "profile", "*", "*.xplane.pb"))
    return sorted((f for f in files if os.path.getmtime(f) >= t0 - 1), key=os.path.getmtime)


class _Capture:
    """The device side of one torch_xla capture: a libnrt window merged into the
    XSpace file torch_xla writes."""

    def __init__(self, logdir):
        self.logdir = str(logdir)
        self.window = None
        self.t0 = time.time()

    def __enter__(self):
        self.window = _Window()
        try:
            self.window.start()
        except Exception as e:
            _warn_once("start", f"no device trace: {e}")
            self.window = None
        return self

    def finish(self):
        """Stops the window and merges it into torch_xla's newest file; its path."""
        if self.window is None:
            return None
        trace = self.window.stop()
        _check_trace(trace)
        files = _xplanes_since(self.logdir, self.t0)
        if not files:
            _warn_once("nofile", f"torch_xla wrote no profile under {self.logdir}: the "
                       "device trace of this window is dropped")
            return None
        merge_profile(files[-1], trace, self.window.offset)
        return files[-1]

    def __exit__(self, *exc):
        if self.window is not None and self.window.started:
            self.window.close()


# ---------------------------------------------------------------- the wrappers

def _start_server(port, only_on_master=True):
    _state["server_port"] = port
    arm("xp.start_server before the first device use")
    return _state["orig"]["start_server"](port, only_on_master)


def _local(service_addr):
    port = _state["server_port"]
    if port is None:
        return False
    for addr in str(service_addr).split(","):
        host, _, p = addr.rpartition(":")
        if p == str(port) and host in ("localhost", "127.0.0.1", "[::1]", "::1", "",
                                       socket.gethostname()):
            return True
    return False


def _trace(service_addr, logdir, duration_ms=1000, num_tracing_attempts=3,
           host_tracer_level=2, device_tracer_level=1, delay_ms=0, timeout_s=120,
           interval_s=5):
    orig = _state["orig"]["trace"]
    args = (service_addr, logdir, duration_ms, num_tracing_attempts, host_tracer_level,
            device_tracer_level, delay_ms, timeout_s, interval_s)
    if not _local(service_addr):
        return orig(*args)  # another process's server: its profiler, not ours
    with _lock, _Capture(logdir) as cap:
        orig(*args)
        path = cap.finish()
    if path:
        log.info("device trace merged into %s", path)
    return None


def _start_trace(log_dir):
    with _lock:
        _state["orig"]["start_trace"](log_dir)  # raises if a profile is running
        _state["session"] = _Capture(log_dir).__enter__()


def _stop_trace():
    with _lock:
        _state["orig"]["stop_trace"]()  # raises if no profile is running
        cap, _state["session"] = _state.get("session"), None
        if cap is not None:
            try:
                cap.finish()
            finally:
                cap.__exit__(None, None, None)


def install():
    """Wraps torch_xla.debug.profiler (once per process)."""
    if _state["installed"]:
        return
    import torch_xla.debug.profiler as xp
    _state["installed"] = True
    o = _state["orig"]
    o.update(start_server=xp.start_server, trace=xp.trace, start_trace=xp.start_trace,
             stop_trace=xp.stop_trace)
    xp.start_server = _start_server
    xp.trace = _trace            # xp.trace_detached looks it up at call time
    xp.start_trace = _start_trace
    xp.stop_trace = _stop_trace

    trace_cls = xp.Trace
    enter, exit_ = trace_cls.__enter__, trace_cls.__exit__

    def __enter__(self):
        r = enter(self)
        try:
            _lib().nrt_neuronsim_trace_begin(str(self.name).encode()[:63] or b"?")
        except OSError:
            pass
        return r

    def __exit__(self, *exc):
        try:
            _lib().nrt_neuronsim_trace_end()
        except OSError:
            pass
        return exit_(self, *exc)

    trace_cls.__enter__ = __enter__
    trace_cls.__exit__ = __exit__

    step_init = xp.StepTrace.__init__

    def step_trace_init(self, name, **kwargs):
        step_init(self, name, **kwargs)
        if "step_num" in kwargs:
            try:
                _lib().nrt_neuronsim_trace_step(int(kwargs["step_num"]))
            except (OSError, TypeError, ValueError):
                pass

    xp.StepTrace.__init__ = step_trace_init
    _maybe_arm_at_import()
