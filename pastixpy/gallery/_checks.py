"""Argument checks shared by the gallery's generators."""

import numpy as np


def _check_dtype(dtype, kind):
    """Return ``np.dtype(dtype)``; ``kind`` is ``"real"`` (any inexact) or ``"complex"``."""
    dt = np.dtype(dtype)
    if kind == "complex":
        if not np.issubdtype(dt, np.complexfloating):
            raise ValueError(f"dtype must be a complex type (complex64, complex128), got {dt}")
    elif not np.issubdtype(dt, np.inexact):
        raise ValueError(f"dtype must be a floating-point type (float32, float64), got {dt}")
    return dt


def _check_shape(shape, ndims, name="shape"):
    """Validate a tuple of positive ints whose length is in ``ndims``."""
    try:
        shape = tuple(int(s) for s in shape)
    except TypeError:
        raise ValueError(f"{name} must be a tuple of ints, got {shape!r}") from None
    if len(shape) not in ndims:
        want = " or ".join(str(d) for d in ndims)
        raise ValueError(f"{name} must have {want} entries, got {shape}")
    if min(shape) < 1:
        raise ValueError(f"{name} must have positive sizes, got {shape}")
    return shape


def _check_size(n, name="n"):
    if isinstance(n, (bool, np.bool_)) or int(n) != n or n < 1:
        raise ValueError(f"{name} must be a positive integer, got {n!r}")
    return int(n)
