"""neuronsim-debug-run: run a training script with every debug output of the stack
turned on and leave one .tar.gz to attach to a bug report (the debug_run.py idea).

    neuronsim-debug-run [-o OUT] [--] python train.py [args...]

The bundle holds the environment (secrets redacted), the versions of every
component, torch_xla's metrics report at every step (XLA_METRICS_FILE) and the
runtime's after every execution (NEURONSIM_RUNTIME_METRICS_FILE), HLO dumps (XLA_SAVE_TENSORS_FILE,
XLA_SAVE_HLO_FILE), snapshots, the run's stdout/stderr (the runtime logs to
stderr), neuron-ls output and, on the kernel backend, the driver's sysfs counters.
The command's exit status is passed through.
"""

import argparse
import datetime
import glob
import importlib.metadata
import json
import os
import platform
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time

REDACTED = "<redacted>"

# Variable names whose values are never copied: credentials of every kind.
_SECRET_NAME = re.compile(
    r"TOKEN|SECRET|PASSW|PASSPHRASE|KEY|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|"
    r"SIGNATURE|CERT", re.IGNORECASE)
_SECRET_PREFIXES = ("AWS_", "AZURE_", "GCP_", "GOOGLE_", "HF_", "HUGGING_FACE_",
                    "WANDB_", "NETRC", "GH_", "GITHUB_", "CI_JOB_", "DOCKER_",
                    "NPM_", "PYPI_", "TWINE_", "SSH_")
# user:password@ in URL-like values (proxies, index URLs, database URLs)
_URL_CREDENTIALS = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^/@\s:]*:[^/@\s]*@")
# --token=VALUE / --password VALUE on the command line
_SECRET_ARG = re.compile(r"^(--?[A-Za-z0-9_-]*(token|secret|passw|key|credential|auth)"
                         r"[A-Za-z0-9_-]*)(=.*)?$", re.IGNORECASE)

# What the bundle turns on in the child, unless the user set it already.
_MEMBERS = {
    "metrics": "metrics.txt",
    "runtime_metrics": "runtime-metrics.txt",
    "tensors": "hlo/tensors.hlo",
    "hlo_on_error": "hlo/graph_on_error.hlo",
    "snapshots": "snapshots",
    "stdout": "logs/stdout.txt",
    "stderr": "logs/stderr.txt",
}


def is_secret_name(name):
    up = name.upper()
    return bool(_SECRET_NAME.search(up)) or up.startswith(_SECRET_PREFIXES)


def redact_value(value):
    return _URL_CREDENTIALS.sub(lambda m: m.group("scheme") + REDACTED + "@", value)


def redact_environ(environ):
    """A copy of environ that is safe to share: values of secret-looking names are
    replaced, credentials inside URLs are cut out of the others."""
    return {k: (REDACTED if is_secret_name(k) else redact_value(v))
            for k, v in sorted(environ.items())}


def redact_argv(argv):
    out, hide_next = [], False
    for a in argv:
        if hide_next:
            out.append(REDACTED)
            hide_next = False
            continue
        m = _SECRET_ARG.match(a)
        if m:
            if m.group(3) is not None:
                out.append(m.group(1) + "=" + REDACTED)
            else:
                out.append(a)
                hide_next = True
            continue
        out.append(redact_value(a))
    return out


def _dist_version(name):
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _run_tool(argv, timeout=60, env=None):
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
        return {"argv": argv, "exit": p.returncode, "stdout": p.stdout, "stderr": p.stderr}
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"argv": argv, "error": repr(e)}


def collect_versions():
    """Versions of every component, each entry an error string when it cannot be read."""
    from . import _native
    v = {"python": sys.version.split()[0], "executable": sys.executable,
         "platform": platform.platform(), "kernel": platform.release(),
         "hostname": socket.gethostname()}
    for dist in ("torch", "torch_xla", "torch_neuronsim", "torchvision", "numpy",
                 "tensorboard", "tensorboard-plugin-profile"):
        v[dist] = _dist_version(dist)
    for key, fn in (("pjrt_plugin", _native.pjrt_api_info), ("libnrt", _native.nrt_version)):
        try:
            v[key] = fn()
        except Exception as e:  # a missing or broken library is a finding, not a crash
            v[key] = {"error": repr(e)}
    cc = _native.tool_path("neuronsim-cc")
    if cc:
        r = _run_tool([cc, "--version"])
        v["ncc"] = (r.get("stdout") or "").strip() or r
        # neuronsim-cc --version names the project's version, the plugin's
        # neuronsim_version attribute, and the compiler's (compiler_version).
        if isinstance(v["pjrt_plugin"], dict) and "error" not in v["pjrt_plugin"]:
            v["pjrt_plugin"]["neuronsim_version"] = v["ncc"]
    else:
        v["ncc"] = None
    v["build_dir"] = _native.build_dir()
    drv = "/sys/module/neuronsim"
    if os.path.isdir(drv):
        d = {}
        for f in ("version", "srcversion"):
            try:
                with open(os.path.join(drv, f)) as fh:
                    d[f] = fh.read().strip()
            except OSError:
                pass
        pdir = os.path.join(drv, "parameters")
        if os.path.isdir(pdir):
            d["parameters"] = {}
            for f in sorted(os.listdir(pdir)):
                try:
                    with open(os.path.join(pdir, f)) as fh:
                        d["parameters"][f] = fh.read().strip()
                except OSError:
                    pass
        v["driver"] = d
    else:
        v["driver"] = None
    return v


def copy_sysfs(root, dest, max_files=4096):
    """Copies the neuronsim class's sysfs attributes (small text files) into dest.
    Returns how many were copied, or None when there is no kernel device."""
    if not os.path.isdir(root):
        return None
    n = 0
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        # /sys/class/neuronsim/neuronsimN is a symlink to the device directory
        dirnames[:] = [d for d in dirnames if d not in ("subsystem", "power", "device")]
        rel = os.path.relpath(dirpath, root)
        for f in sorted(filenames):
            if n >= max_files or f == "uevent":
                continue
            src = os.path.join(dirpath, f)
            try:
                with open(src, "rb") as fh:
                    data = fh.read(65536)
            except OSError:
                continue  # write-only or unreadable attributes
            out = os.path.join(dest, rel, f)
            os.makedirs(os.path.dirname(out), exist_ok=True)
            with open(out, "wb") as fh:
                fh.write(data)
            n += 1
    # The class directory itself holds symlinks: follow one level of them.
    for entry in sorted(os.listdir(root)):
        p = os.path.join(root, entry)
        if os.path.islink(p) and os.path.isdir(p) and not os.path.exists(os.path.join(dest, entry)):
            n += copy_sysfs(p, os.path.join(dest, entry), max_files - n) or 0
    return n


def _xla_flags_dump_to(flags):
    """The last --xla_dump_to=DIR of an XLA_FLAGS string, or None."""
    found = None
    for tok in shlex.split(flags or ""):
        if tok.startswith("--xla_dump_to="):
            found = tok.split("=", 1)[1]
    return found


def child_environment(base, work):
    """The child's environment: the user's, plus every debug output pointed into work
    (a setting the user made wins). Returns (env, what_we_set)."""
    env = dict(base)
    ours = {}

    def setdefault(k, v):
        if not env.get(k):
            env[k] = v
            ours[k] = v

    setdefault("XLA_METRICS_FILE", os.path.join(work, _MEMBERS["metrics"]))
    # XLA_METRICS_FILE is torch_xla's alone (its metrics_saver numbers the
    # steps): the PJRT plugin sends the runtime's own report here instead.
    setdefault("NEURONSIM_RUNTIME_METRICS_FILE", os.path.join(work, _MEMBERS["runtime_metrics"]))
    setdefault("XLA_SAVE_TENSORS_FILE", os.path.join(work, _MEMBERS["tensors"]))
    setdefault("XLA_SAVE_TENSORS_FMT", "hlo")
    setdefault("XLA_SAVE_HLO_FILE", os.path.join(work, _MEMBERS["hlo_on_error"]))
    setdefault("XLA_IR_DEBUG", "1")
    setdefault("XLA_HLO_DEBUG", "1")
    # Keep the failing execution's inputs, in host memory so that the bundle does
    # not change how much device memory the run has.
    setdefault("NEURON_DUMP_HLO_SNAPSHOT", "ON_NRT_ERROR_CPU")
    if _xla_flags_dump_to(env.get("XLA_FLAGS")) is None:
        d = os.path.join(work, _MEMBERS["snapshots"])
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + f" --xla_dump_to={d}").strip()
        ours["XLA_FLAGS"] = env["XLA_FLAGS"]
    setdefault("NEURON_RT_LOG_LEVEL", "INFO")
    setdefault("PYTHONUNBUFFERED", "1")
    for d in ("hlo", "logs"):
        os.makedirs(os.path.join(work, d), exist_ok=True)
    return env, ours


def _tee(src, sinks):
    for chunk in iter(lambda: src.read1(65536) if hasattr(src, "read1") else src.read(65536), b""):
        for s in sinks:
            try:
                s.write(chunk)
                s.flush()
            except (OSError, ValueError):
                pass
    src.close()


def run_child(cmd, env, work):
    """Runs cmd with stdout/stderr going both to the terminal and to the bundle.
    Returns the exit status (128+N for a signal, as a shell reports it)."""
    out_f = open(os.path.join(work, _MEMBERS["stdout"]), "wb")
    err_f = open(os.path.join(work, _MEMBERS["stderr"]), "wb")
    try:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as e:
        err_f.write(f"neuronsim-debug-run: cannot run {cmd[0]!r}: {e}\n".encode())
        out_f.close()
        err_f.close()
        print(f"neuronsim-debug-run: cannot run {cmd[0]!r}: {e}", file=sys.stderr)
        return 127
    threads = [threading.Thread(target=_tee, args=(proc.stdout, [sys.stdout.buffer, out_f])),
               threading.Thread(target=_tee, args=(proc.stderr, [sys.stderr.buffer, err_f]))]
    for t in threads:
        t.start()

    # Ctrl-C goes to the whole foreground process group already; keep waiting so
    # that the bundle is still written.
    def forward(signum, _frame):
        try:
            proc.send_signal(signum)
        except OSError:
            pass
    old = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGHUP)}
    old_int = signal.signal(signal.SIGINT, lambda *_: None)
    try:
        rc = proc.wait()
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        signal.signal(signal.SIGINT, old_int)
    for t in threads:
        t.join()
    out_f.close()
    err_f.close()
    return rc if rc >= 0 else 128 - rc


def write_archive(work, out_path, arcname):
    """tar.gz of work as out_path, atomically: a temporary name in the target
    directory, renamed once complete (a reader never sees half an archive)."""
    target_dir = os.path.dirname(os.path.abspath(out_path))
    os.makedirs(target_dir, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".neuronsim-debug-", suffix=".tar.gz.tmp", dir=target_dir)
    try:
        with os.fdopen(fd, "wb") as fh:
            with tarfile.open(fileobj=fh, mode="w:gz") as tar:
                tar.add(work, arcname=arcname)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644 & ~_umask())
        os.replace(tmp, out_path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return out_path


def _umask():
    m = os.umask(0)
    os.umask(m)
    return m


def default_name(now=None):
    now = now or datetime.datetime.now()
    return (f"neuronsim-debug-{socket.gethostname()}-{now.strftime('%Y%m%d-%H%M%S')}"
            f"-{os.getpid()}.tar.gz")


def resolve_python(cmd):
    """`python`/`python3` means this tool's interpreter (the venv torch_neuronsim is
    installed in), not whatever comes first on PATH."""
    if cmd and cmd[0] in ("python", "python3"):
        return [sys.executable] + list(cmd[1:])
    return list(cmd)


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="neuronsim-debug-run",
        description="Run COMMAND (e.g. python train.py) with neuronsim's debug outputs "
                    "on and write one .tar.gz bundle for a bug report.",
        epilog="The bundle never contains the values of environment variables whose "
               "names look like credentials (TOKEN, SECRET, PASSWORD, KEY, CREDENTIAL, "
               "AWS_*, ...). Exit status: COMMAND's.")
    p.add_argument("-o", "--output", default=".",
                   help="bundle file (*.tar.gz) or directory to write it into (default: .)")
    p.add_argument("--keep-dir", action="store_true",
                   help="also keep the unpacked bundle directory next to the archive")
    p.add_argument("command", nargs=argparse.REMAINDER, help="the command to run")
    a = p.parse_args(argv)
    if a.command and a.command[0] == "--":
        a.command = a.command[1:]
    if not a.command:
        p.error("no command given (e.g. neuronsim-debug-run python train.py)")
    return a


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    out = a.output
    name = default_name()
    if out.endswith((".tar.gz", ".tgz")):
        out_path = os.path.abspath(out)
        name = os.path.basename(out_path)
    else:
        out_path = os.path.abspath(os.path.join(out, name))
    stem = name[:-len(".tar.gz")] if name.endswith(".tar.gz") else os.path.splitext(name)[0]
    target_dir = os.path.dirname(out_path)
    os.makedirs(target_dir, exist_ok=True)
    work = tempfile.mkdtemp(prefix=".neuronsim-debug-work-", dir=target_dir)
    try:
        env, ours = child_environment(os.environ, work)
        cmd = resolve_python(a.command)
        started = time.time()
        rc = run_child(cmd, env, work)
        ended = time.time()
        manifest = {
            "tool": "neuronsim-debug-run",
            "command": redact_argv(a.command),
            "ran": redact_argv(cmd),
            "cwd": os.getcwd(),
            "exit_status": rc,
            "started": datetime.datetime.fromtimestamp(started).isoformat(),
            "duration_s": round(ended - started, 3),
            "set_by_debug_run": {k: redact_value(v.replace(work, "<bundle>"))
                                 for k, v in ours.items()},
            "members": {},
        }
        with open(os.path.join(work, "environment.json"), "w") as fh:
            json.dump(redact_environ(env), fh, indent=1, sort_keys=True)
        with open(os.path.join(work, "versions.json"), "w") as fh:
            json.dump(collect_versions(), fh, indent=1, sort_keys=True)
        from . import _native
        ls = _native.tool_path("neuron-ls")
        if ls:
            # The tool starts its own runtime: keep it off the user's debug outputs.
            tool_env = {k: v for k, v in os.environ.items()
                        if not k.startswith(("XLA_", "NEURON_DUMP"))}
            r = _run_tool([ls], env=tool_env)
            rj = _run_tool([ls, "--json"], env=tool_env)
            with open(os.path.join(work, "neuron-ls.txt"), "w") as fh:
                fh.write(r.get("stdout", "") + r.get("stderr", "") + r.get("error", ""))
            with open(os.path.join(work, "neuron-ls.json"), "w") as fh:
                fh.write(rj.get("stdout") or json.dumps(rj))
            manifest["members"]["neuron-ls"] = f"exit {r.get('exit')}"
        else:
            manifest["members"]["neuron-ls"] = "not found (no build directory)"
        sysfs_root = os.environ.get("NEURONSIM_SYSFS_ROOT", "/sys/class/neuronsim")
        n = copy_sysfs(sysfs_root, os.path.join(work, "sysfs"))
        manifest["members"]["sysfs"] = (f"{n} files from {sysfs_root}" if n is not None else
                                        f"absent ({sysfs_root}: no kernel device)")
        # Snapshots the user asked to go elsewhere are copied in too.
        user_dump = _xla_flags_dump_to(env.get("XLA_FLAGS"))
        if user_dump and not user_dump.startswith(work) and os.path.isdir(user_dump):
            shutil.copytree(user_dump, os.path.join(work, "snapshots"), dirs_exist_ok=True)
        for key in ("metrics", "runtime_metrics", "tensors", "hlo_on_error", "snapshots", "stdout",
                    "stderr"):
            p = os.path.join(work, _MEMBERS[key])
            # torch_xla adds .0, .1 ... (one file per device ordinal) to some of them
            numbered = sorted(glob.glob(glob.escape(p) + ".*"))
            if numbered and not os.path.exists(p):
                manifest["members"][key] = ", ".join(
                    f"{os.path.basename(f)}: {os.path.getsize(f)} bytes" for f in numbered)
            elif os.path.isdir(p):
                files = sum(len(f) for _, _, f in os.walk(p))
                manifest["members"][key] = f"{files} files" if files else "empty"
            elif os.path.isfile(p):
                manifest["members"][key] = f"{os.path.getsize(p)} bytes"
            else:
                src = env.get({"metrics": "XLA_METRICS_FILE",
                               "runtime_metrics": "NEURONSIM_RUNTIME_METRICS_FILE",
                               "tensors": "XLA_SAVE_TENSORS_FILE",
                               "hlo_on_error": "XLA_SAVE_HLO_FILE"}.get(key, ""), "")
                if src and os.path.isfile(src):  # the user's own path: copy it in
                    os.makedirs(os.path.dirname(p), exist_ok=True)
                    shutil.copyfile(src, p)
                    manifest["members"][key] = f"{os.path.getsize(p)} bytes (from {src})"
                else:
                    manifest["members"][key] = "not produced by the run"
        with open(os.path.join(work, "manifest.json"), "w") as fh:
            json.dump(manifest, fh, indent=1, sort_keys=True)
        write_archive(work, out_path, stem)
        if a.keep_dir:
            keep = os.path.join(target_dir, stem)
            if not os.path.exists(keep):
                shutil.copytree(work, keep)
        print(f"neuronsim-debug-run: bundle written to {out_path} (exit status {rc})",
              file=sys.stderr)
        return rc
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
