"""pytest set-up of the torch_neuronsim suite: the plugin must be built first."""

import os

import pytest

from harness import BUILD


def pytest_sessionstart(session):
    lib = os.path.join(BUILD, "pjrt", "libneuronsim_pjrt.so")
    if not os.path.isfile(lib):
        raise pytest.UsageError(
            f"{lib} is missing: build neuronsim first (`make` in the checkout) or set "
            f"NEURONSIM_BUILD_DIR to a build directory")
