"""The PJRT plugin's persistent compile cache under torch_xla (docs/pjrt.md): on by
default, moved with NEURON_COMPILE_CACHE_URL; a second process running the same
script compiles nothing (the runtime counts CachedCompile, the log names the
cached NEFF). The harness gives every other run its own empty cache."""

import pathlib
import re

from harness import run_script


def _entries(root):
    # DIR/neuronsim-cc-VERSION+BUILD/MODULE_KEY/model.neff
    return sorted(p for p in root.glob("neuronsim-cc-*+*/MODULE_*/model.neff"))


def _counter(text, name):
    m = re.search(rf"^Counter: {name}\n  Value: (\d+)", text, re.MULTILINE)
    return int(m.group(1)) if m else 0


def test_second_process_hits_the_persistent_cache(tmp_path):
    cache = tmp_path / "cache"
    env = {"NEURON_COMPILE_CACHE_URL": str(cache)}
    first = run_script("compile_cache_add.py",
                       env={**env, "NEURONSIM_RUNTIME_METRICS_FILE": str(tmp_path / "m1.txt")})
    entries = _entries(cache)
    assert entries, f"no cache entry under {cache}: " + first.describe()
    # torch-neuronx's log lines (docs/pjrt.md), as scripts that parse them expect
    assert "Using a cached neff at" not in first.stderr, first.describe()
    assert re.search(r"INFO \|\|NEURON_CACHE\|\|: Compile cache path: " + re.escape(str(cache)) + "\n",
                     first.stderr), first.describe()
    assert re.search(r"INFO \|\|NEURON_CC_WRAPPER\|\|: Compilation Successfully Completed for "
                     r"model\.MODULE_[0-9a-f]+\.hlo_module\.pb", first.stderr), first.describe()
    m1 = (tmp_path / "m1.txt").read_text()
    assert _counter(m1, "UncachedCompile") >= 1 and _counter(m1, "CachedCompile") == 0, m1[:2000]
    # no temporary files left next to the entries (written by rename)
    for e in entries:
        assert sorted(p.name for p in e.parent.iterdir()) == ["model.neff"], list(e.parent.iterdir())

    second = run_script("compile_cache_add.py",
                        env={**env, "NEURONSIM_RUNTIME_METRICS_FILE": str(tmp_path / "m2.txt")})
    assert second.result == first.result
    hits = re.findall(r"Using a cached neff at\s+(\S+model\.neff)", second.stderr)
    assert hits and all(pathlib.Path(h) in entries for h in hits), second.describe()
    assert "Exiting with a successfully compiled graph." in second.stderr, second.describe()
    m2 = (tmp_path / "m2.txt").read_text()
    assert _counter(m2, "CachedCompile") >= 1, m2[:2000]
    assert _counter(m2, "UncachedCompile") == 0, m2[:2000]
    assert _entries(cache) == entries
