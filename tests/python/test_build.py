"""The extension was built against the NumPy it runs with.

scripts/setup.sh runs this file alone (without conftest.py) right after the
build, so that an extension compiled against another NumPy's headers (a
system NumPy 1.x shadowing the venv's 2.x) fails there, saying so, before
any other test imports it.
"""
import importlib

import numpy as np


def test_the_extension_imports_and_was_compiled_against_this_numpy():
    try:
        ext = importlib.import_module("shapejit._shapejit")
    except ImportError as e:
        raise AssertionError(f"the extension does not import under NumPy {np.__version__} ({np.__file__}): {e}") from e
    built_major = ext.numpy_abi_version >> 24
    running_major = int(np.__version__.split(".")[0])
    assert built_major == running_major, (
        f"the extension was compiled against NumPy {built_major}.x headers, but runs NumPy {np.__version__}")
    # The C API level it uses is one this NumPy provides.
    core = getattr(np, "_core", None) or np.core
    runtime_api = core._multiarray_umath._get_ndarray_c_version()
    assert ext.numpy_api_version <= runtime_api, (
        f"compiled for NumPy's C API {ext.numpy_api_version:#x}, NumPy {np.__version__} provides {runtime_api:#x}")
