"""neuronsim-debug-run: one .tar.gz with environment (secrets redacted), versions,
metrics, HLO dumps, snapshots, logs, neuron-ls and the driver's sysfs counters."""

import json
import os
import re
import subprocess
import sys
import tarfile

import pytest

from harness import BUILD, SCRIPTS

from torch_neuronsim import debug_run

SECRETS = {
    "MY_API_TOKEN": "tok-s3cr3t-0001",
    "AWS_SECRET_ACCESS_KEY": "aws-s3cr3t-0002",
    "AWS_ACCESS_KEY_ID": "AKIAS3CR3T0003",
    "DB_PASSWORD": "pw-s3cr3t-0004",
    "HF_TOKEN": "hf_s3cr3t0005",
    "GOOGLE_APPLICATION_CREDENTIALS": "/home/u/s3cr3t-0006.json",
    "SSH_AUTH_SOCK": "/tmp/ssh-s3cr3t-0007/agent",
    "PRIVATE_KEY_PEM": "-----BEGIN s3cr3t-0008-----",
}
URL_SECRET = "pr0xy-s3cr3t-0009"


def test_redaction_rules():
    env = dict(SECRETS, HOME="/root", PATH="/usr/bin", XLA_FLAGS="--xla_dump_to=/x",
               HTTPS_PROXY=f"http://bob:{URL_SECRET}@proxy:3128",
               PIP_INDEX_URL=f"https://u:{URL_SECRET}@pypi.example/simple")
    red = debug_run.redact_environ(env)
    for k in SECRETS:
        assert red[k] == debug_run.REDACTED, k
    assert red["HOME"] == "/root" and red["XLA_FLAGS"] == "--xla_dump_to=/x"
    assert URL_SECRET not in json.dumps(red)
    assert red["HTTPS_PROXY"] == "http://<redacted>@proxy:3128"
    argv = debug_run.redact_argv(["train.py", "--api-token=abc", "--password", "xyz",
                                  "--lr", "0.1"])
    assert argv == ["train.py", "--api-token=<redacted>", "--password", "<redacted>",
                    "--lr", "0.1"]


def test_sysfs_absent_is_skipped(tmp_path):
    assert debug_run.copy_sysfs(str(tmp_path / "none"), str(tmp_path / "out")) is None
    assert not (tmp_path / "out").exists()


def test_archive_written_atomically(tmp_path, monkeypatch):
    work = tmp_path / "work"
    (work / "sub").mkdir(parents=True)
    (work / "sub" / "f.txt").write_text("x")
    out = tmp_path / "out" / "b.tar.gz"
    debug_run.write_archive(str(work), str(out), "b")
    assert tarfile.open(out).getnames() == ["b", "b/sub", "b/sub/f.txt"]
    assert os.listdir(tmp_path / "out") == ["b.tar.gz"]

    def broken(*a, **k):
        raise OSError("disk full")
    monkeypatch.setattr(tarfile.TarFile, "add", broken)
    out2 = tmp_path / "out" / "c.tar.gz"
    with pytest.raises(OSError):
        debug_run.write_archive(str(work), str(out2), "c")
    # neither a half archive under the final name nor a temporary left behind
    assert os.listdir(tmp_path / "out") == ["b.tar.gz"]


def _fake_sysfs(root):
    dev = root / "neuronsim0"
    (dev / "core0").mkdir(parents=True)
    for k, v in {"abi_version": "1.0", "jobs_submitted": "12", "jobs_num_err": "1",
                 "mem_in_use": "4096", "uevent": "DEVNAME=neuronsim0"}.items():
        (dev / k).write_text(v + "\n")
    (dev / "core0" / "jobs_success").write_text("11\n")


def test_debug_bundle(tmp_path):
    tool = os.path.join(os.path.dirname(sys.executable), "neuronsim-debug-run")
    assert os.path.isfile(tool), f"{tool} missing: run `make deps` (console script)"
    out = tmp_path / "bundles"
    sysfs = tmp_path / "sysfs"
    _fake_sysfs(sysfs)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("XLA_", "NEURON_", "PJRT_"))}
    env.update(SECRETS, PJRT_DEVICE="NEURONSIM", NEURONSIM_BUILD_DIR=BUILD,
               NEURONSIM_SYSFS_ROOT=str(sysfs),
               HTTPS_PROXY=f"http://bob:{URL_SECRET}@proxy:3128")
    script = os.path.join(SCRIPTS, "debug_bundle_train.py")
    proc = subprocess.run([tool, "-o", str(out), "python", script, f"--token={URL_SECRET}"],
                          env=env, capture_output=True, text=True, timeout=600,
                          cwd=tmp_path)
    desc = f"exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    assert proc.returncode == 3, "the script's exit status passes through: " + desc
    assert "RESULT " in proc.stdout, "the script's output still reaches the terminal: " + desc
    names = os.listdir(out)
    assert len(names) == 1 and names[0].endswith(".tar.gz"), names  # no temporaries left
    print(f"bundle: {out / names[0]}")
    with tarfile.open(out / names[0]) as tar:
        members = {m.name.split("/", 1)[1]: m for m in tar.getmembers() if "/" in m.name}
        data = {n: tar.extractfile(m).read() for n, m in members.items() if m.isfile()}
    for value in list(SECRETS.values()) + [URL_SECRET]:
        for n, blob in data.items():
            assert value.encode() not in blob, f"secret {value!r} copied into {n}"
    envj = json.loads(data["environment.json"])
    assert envj["MY_API_TOKEN"] == "<redacted>" and envj["PJRT_DEVICE"] == "NEURONSIM"
    man = json.loads(data["manifest.json"])
    assert man["exit_status"] == 3 and man["command"][-1] == "--token=<redacted>", man
    ver = json.loads(data["versions.json"])
    assert ver["torch"] == "2.9.0" and ver["torch_xla"] == "2.9.0", ver
    assert ver["torch_neuronsim"] and ver["ncc"].startswith("neuronsim-cc"), ver
    assert ver["pjrt_plugin"]["api_version"].startswith("0."), ver
    assert ver["libnrt"]["version"].startswith("2."), ver
    metrics = data["metrics.txt"].decode()
    assert "Metric: CompileTime" in metrics and "Metric: ExecuteTime" in metrics, metrics[:500]
    # one writer per file: torch_xla's steps in metrics.txt, the runtime's
    # executions in runtime-metrics.txt, each numbered 0, 1, 2 ...
    for name in ("metrics.txt", "runtime-metrics.txt"):
        steps = [int(n) for n in re.findall(r"^\[MetricsData; step=(\d+)\]$",
                                            data[name].decode(), re.MULTILINE)]
        assert steps and steps == list(range(len(steps))), (name, steps)
    assert "DeviceMemoryInUse" not in metrics, metrics[:500]
    assert b"Metric: DeviceMemoryInUse" in data["runtime-metrics.txt"]
    assert man["members"]["runtime_metrics"].endswith(" bytes"), man
    hlo = [n for n in data if n.startswith("hlo/tensors.hlo")]
    assert hlo and b"HloModule" in data[hlo[0]], sorted(data)
    snaps = [n for n in data if n.startswith("snapshots/") and ".error." in n]
    assert len(snaps) == 1, sorted(data)
    assert b"RESULT " in data["logs/stdout.txt"]
    assert b"aten__log" in data["logs/stderr.txt"] or b"aten__log" in data["logs/stdout.txt"]
    assert b"DEVICE" in data["neuron-ls.txt"] and json.loads(data["neuron-ls.json"])
    assert data["sysfs/neuronsim0/jobs_num_err"] == b"1\n"
    assert data["sysfs/neuronsim0/core0/jobs_success"] == b"11\n"
    assert "sysfs/neuronsim0/uevent" not in data
