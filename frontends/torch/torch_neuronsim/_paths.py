"""Where the native libraries are: the PJRT plugin and libnrt."""

import os

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
# An editable install imports from the checkout: frontends/torch/torch_neuronsim.
_CHECKOUT = os.path.normpath(os.path.join(_PKG_DIR, "..", "..", ".."))


def _find(env_var, name, build_subdir):
    path = os.environ.get(env_var)
    if path:
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{env_var}={path}: no such file")
        return path
    candidates = [os.path.join(_PKG_DIR, "lib", name)]
    build = os.environ.get("NEURONSIM_BUILD_DIR")
    if build:
        candidates.insert(0, os.path.join(build, build_subdir, name))
    candidates.append(os.path.join(_CHECKOUT, "build", build_subdir, name))
    for c in candidates:
        if os.path.isfile(c):
            return c
    raise FileNotFoundError(
        f"cannot find {name} (looked in {', '.join(candidates)}): build neuronsim "
        f"with `make` in the checkout, or set {env_var} to the library's path")


def pjrt_library_path():
    """Path of libneuronsim_pjrt.so (NEURONSIM_PJRT_LIBRARY overrides)."""
    return _find("NEURONSIM_PJRT_LIBRARY", "libneuronsim_pjrt.so", "pjrt")


def nrt_library_path():
    """Path of the libnrt the plugin links (NEURONSIM_NRT_LIBRARY overrides)."""
    return _find("NEURONSIM_NRT_LIBRARY", "libnrt.so.1", "runtime")
