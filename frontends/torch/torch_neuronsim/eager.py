"""torch-neuronx's eager debug mode (NEURON_USE_EAGER_DEBUG_MODE=1) on torch_xla's own.

torch_xla 2.9 turns on its eager mode at import when XLA_USE_EAGER_DEBUG_MODE=1:
every op is then compiled on its own (once per op and shape: torch_xla's graph
cache serves repeats) and executed as soon as it is recorded. torch_xla reads that
variable after it has loaded the installed plugins' entry points, and this
package's entry point (torch_neuronsim.plugin) calls map_environment() when it is
imported, so setting the Neuron variable before `import torch_xla` is enough.

The mode exists to find the op that goes wrong, so it also turns on torch_xla's
source annotations (XLA_IR_DEBUG, XLA_HLO_DEBUG): the device's NaN check then names
the op and the user's file and line. Each stays as the user set it when set.
"""

import os
import sys

_TRUE = ("1", "true", "yes", "on")


def enabled(environ=None):
    """Whether NEURON_USE_EAGER_DEBUG_MODE asks for eager debug mode."""
    environ = os.environ if environ is None else environ
    return environ.get("NEURON_USE_EAGER_DEBUG_MODE", "").strip().lower() in _TRUE


def map_environment(environ=None):
    """Sets torch_xla's variables for NEURON_USE_EAGER_DEBUG_MODE=1 (only those the
    user left unset); returns whether eager debug mode was asked for."""
    environ = os.environ if environ is None else environ
    if not enabled(environ):
        return False
    environ.setdefault("XLA_USE_EAGER_DEBUG_MODE", "1")
    environ.setdefault("XLA_HLO_DEBUG", "1")
    if "XLA_IR_DEBUG" not in environ:
        environ["XLA_IR_DEBUG"] = "1"
        # torch_xla read XLA_IR_DEBUG when its _XLAC module loaded, before the
        # plugins: tell the loaded module too.
        xlac = sys.modules.get("_XLAC")
        if xlac is not None and hasattr(xlac, "_set_ir_debug"):
            xlac._set_ir_debug(True)
    return True
