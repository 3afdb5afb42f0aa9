"""torch_neuronsim: run PyTorch/XLA on neuronsim's simulated NeuronCores.

Importing this package does not import torch_xla; torch_xla finds the plugin
through the ``torch_xla.plugins`` entry point when ``PJRT_DEVICE=NEURONSIM``.
"""

from ._paths import pjrt_library_path, nrt_library_path  # noqa: F401

__version__ = "0.1.0"


def _install_profiler():
    # torch_xla imports its plugins' entry points while it loads: with
    # PJRT_DEVICE=NEURONSIM, torch_xla.debug.profiler gets the device traces
    # (profiler.py), before the script's first use of the device.
    import os
    import sys
    if "torch_xla" in sys.modules and os.environ.get("PJRT_DEVICE") == "NEURONSIM":
        from . import profiler
        profiler.install()


_install_profiler()


def register_hlo_snapshot_callback(fn):
    """torch-neuronx 2.1's snapshot callback: fn(name, addressable_device_index,
    execution_count) decides what each execution dumps under XLA_FLAGS=
    --xla_dump_hlo_snapshots (torch_neuronsim.snapshot has the details)."""
    from .snapshot import register_hlo_snapshot_callback as register
    return register(fn)
