"""The torch_xla DevicePlugin of neuronsim: PJRT_DEVICE=NEURONSIM loads it."""

import os

from torch_xla.experimental import plugins

from ._paths import pjrt_library_path
from .eager import map_environment as _map_eager_environment

# torch_xla imports this entry point before it reads XLA_USE_EAGER_DEBUG_MODE:
# NEURON_USE_EAGER_DEBUG_MODE=1 becomes torch_xla's eager mode (eager.py).
_map_eager_environment()


class NeuronSimPlugin(plugins.DevicePlugin):
    """Single host; one process drives all its visible NeuronCores (all cores of
    the device unless NEURON_RT_VISIBLE_CORES narrows them, one XLA device each)."""

    def library_path(self):
        return pjrt_library_path()

    def configure_single_process(self):
        # The embedded device runs inside this process: nothing to configure.
        pass

    def configure_multiprocess(self, local_rank, local_world_size):
        # One core per process, as torch-neuronx does under torchrun/xmp.spawn.
        os.environ.setdefault("NEURON_RT_VISIBLE_CORES", str(local_rank))

    def physical_chip_count(self):
        return 1

    def client_create_options(self):
        return {}
