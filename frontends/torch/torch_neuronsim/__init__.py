"""torch_neuronsim: run PyTorch/XLA on neuronsim's simulated NeuronCores.

Importing this package does not import torch_xla; torch_xla finds the plugin
through the ``torch_xla.plugins`` entry point when ``PJRT_DEVICE=NEURONSIM``.
"""

from ._paths import pjrt_library_path, nrt_library_path  # noqa: F401

__version__ = "0.1.0"
