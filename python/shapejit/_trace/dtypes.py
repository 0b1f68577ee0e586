"""The dtypes shapejit has, by NumPy's dtype and by the op set's name."""
from __future__ import annotations

import numpy as np

DTYPES = {"f32": np.dtype(np.float32), "f64": np.dtype(np.float64), "i32": np.dtype(np.int32),
          "i64": np.dtype(np.int64), "bool": np.dtype(np.bool_)}
NAMES = {v: k for k, v in DTYPES.items()}
FLOAT = ("f32", "f64")
INT_RANGE = {"i32": (-2**31, 2**31 - 1), "i64": (-2**63, 2**63 - 1)}
END = 2**62  # a slice bound past any dim ("to the end"; bounds clamp)


def dtype_name(dtype) -> str:
    """Our name (f32...) for anything np.dtype takes, or one of our names."""
    if isinstance(dtype, str) and dtype in DTYPES:
        return dtype
    d = np.dtype(dtype)
    if d not in NAMES:
        raise TypeError(f"dtype {d} is not one shapejit takes (float32, float64, int32, int64, bool)")
    return NAMES[d]


def python_int_fits(value, dtype):
    """Raises NumPy 2's OverflowError for a Python int that an array of our
    dtype `dtype` cannot take (NEP 50: a weak int out of the array's range
    is an error, not a wrapped value); a Python int for a float dtype is
    converted to a float, which may itself overflow."""
    if dtype in INT_RANGE:
        lo, hi = INT_RANGE[dtype]
        if not lo <= value <= hi:
            if dtype == "i64":
                raise OverflowError("Python int too large to convert to C long")
            raise OverflowError(f"Python integer {value} out of bounds for int32")
    elif dtype == "bool":
        python_int_fits(value, "i64")
    elif dtype in FLOAT:
        float(value)
