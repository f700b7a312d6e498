"""Velocity models for the Helmholtz problems of the gallery: the wedge, a seeded Gaussian
random field and a Marmousi-like layered, folded and faulted synthetic.

Every model is a function ``c(x, y[, z])`` of the physical coordinates in the unit square
(cube), depth being the last coordinate (0 at the top), with velocities relative to the
slowest one (minimum 1), so that ``k(x) = k / c(x)`` has its largest value ``k``.
"""

from functools import lru_cache

import numpy as np
import scipy.interpolate

#: Reference grid of the random fields: points per unit length, per dimension; the field
#: is FFT-filtered white noise on a periodic grid of period 1.5 (so that the unit square's
#: opposite sides are not correlated through the periodicity) and is interpolated
#: (multilinearly) from it, so a seed gives the same field at every mesh resolution.
GRF_POINTS_PER_UNIT = {2: 256, 3: 64}
_GRF_PERIOD = 1.5


def wedge_velocity(*coords):
    """The wedge medium on the unit square (cube): three layers with velocities 1.5, 1.0
    and 2.0 from the top, separated by two slanted interfaces, at depths ``0.4 − 0.2 x``
    and ``0.5 + 0.3 x`` (x the first coordinate, depth the last), so that the middle,
    slowest layer is a wedge opening towards x = 1.

    Examples
    --------
    >>> wedge_velocity(np.array([0.5, 0.5, 0.5]), np.array([0.1, 0.45, 0.9]))
    array([1.5, 1. , 2. ])
    """
    x, depth = coords[0], coords[-1]
    first = 0.4 - 0.2 * x
    second = 0.5 + 0.3 * x
    return np.where(depth < first, 1.5, np.where(depth < second, 1.0, 2.0))


@lru_cache(maxsize=16)
def _grf_interpolator(dims, seed, correlation):
    """The normalized (values in [0, 1] on the unit square or cube) random field's
    interpolator on its reference grid."""
    per_unit = GRF_POINTS_PER_UNIT[dims]
    size = int(round(_GRF_PERIOD * per_unit))
    rng = np.random.default_rng(seed)
    noise = rng.standard_normal((size,) * dims)
    # Gaussian covariance exp(−r²/(2ℓ²)): its spectral density is ∝ exp(−ω²ℓ²/2), so the
    # filter (the density's square root) is exp(−ω²ℓ²/4), ω = 2π × frequency.
    freqs = np.fft.fftfreq(size, d=1.0 / per_unit)
    omega2 = sum(
        (2 * np.pi * f) ** 2 for f in np.meshgrid(*([freqs] * dims), indexing="ij", sparse=True)
    )
    field = np.fft.ifftn(np.fft.fftn(noise) * np.exp(-omega2 * correlation**2 / 4)).real
    field = field[(slice(0, per_unit + 1),) * dims]  # the unit square (cube), ends included
    field = (field - field.min()) / (field.max() - field.min())
    axis = np.arange(per_unit + 1) / per_unit
    return scipy.interpolate.RegularGridInterpolator((axis,) * dims, field, method="linear")


def grf_velocity(dims=2, *, seed=0, correlation=0.1, contrast=3.0):
    """A Gaussian random field velocity with values in ``[1, contrast]``, as a function.

    White noise (``numpy.random.default_rng(seed)``) on a fixed reference grid
    (:data:`GRF_POINTS_PER_UNIT` points per unit length) is filtered by FFT to the
    Gaussian covariance ``exp(−r²/(2 ℓ²))``, ``ℓ = correlation`` (a fraction of the
    domain's side), then mapped affinely so that its minimum and maximum on the unit
    square (cube) are 1 and ``contrast``. The returned function interpolates it
    multilinearly at any points (clipped to the unit square), so the same seed gives the
    same medium at every mesh resolution and every wavenumber.

    Parameters
    ----------
    dims : {2, 3}
    seed : int
        The random seed; different seeds give independent fields.
    correlation : float
        Correlation length ℓ, in (0, 1]; at least two reference grid steps.
    contrast : float
        The ratio of the largest to the smallest velocity, >= 1.

    Returns
    -------
    callable
        ``c(x, y[, z])`` for arrays of coordinates, values in ``[1, contrast]``.

    Examples
    --------
    >>> c = grf_velocity(seed=3, correlation=0.1, contrast=3.0)
    >>> x = np.linspace(0, 1, 201)
    >>> v = c(*np.meshgrid(x, x, indexing="ij"))
    >>> bool(1.0 <= v.min() < 1.05 and 2.95 < v.max() <= 3.0)
    True
    >>> bool(np.array_equal(v, grf_velocity(seed=3)(*np.meshgrid(x, x, indexing="ij"))))
    True
    """
    if dims not in (2, 3):
        raise ValueError(f"dims must be 2 or 3, got {dims!r}")
    if isinstance(seed, (bool, np.bool_)) or int(seed) != seed or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    step = 1.0 / GRF_POINTS_PER_UNIT[dims]
    if not (np.isfinite(correlation) and 2 * step <= correlation <= 1):
        raise ValueError(
            f"correlation must lie in [{2 * step:g}, 1] (a fraction of the domain), "
            f"got {correlation!r}"
        )
    if not (np.isfinite(contrast) and contrast >= 1):
        raise ValueError(f"contrast must be a finite number >= 1, got {contrast!r}")
    interp = _grf_interpolator(dims, int(seed), float(correlation))

    def velocity(*coords):
        if len(coords) != dims:
            raise ValueError(f"this random field takes {dims} coordinates, got {len(coords)}")
        coords = np.broadcast_arrays(*(np.clip(np.asarray(c, float), 0, 1) for c in coords))
        g = interp(np.stack([c.ravel() for c in coords], axis=-1)).reshape(coords[0].shape)
        return 1.0 + (contrast - 1.0) * g

    return velocity


#: Layer velocities of :func:`marmousi_velocity` from the top (km/s): water, then
#: sediments, mostly faster with depth, with low-velocity inversions.
MARMOUSI_LAYERS = (1.5, 1.7, 2.0, 2.4, 2.1, 2.7, 3.1, 2.6, 3.5, 4.0, 4.5)


def marmousi_velocity(*coords, absolute=False):
    """A Marmousi-like synthetic: layered, folded and faulted, with sharp contrasts.

    A water layer (1.5 km/s) over ten sediment layers (:data:`MARMOUSI_LAYERS`, up to
    4.5 km/s, with two low-velocity inversions). The interfaces are folded (a gentle
    sine and an anticline whose amplitude grows with depth) and cut by two normal faults
    dipping in opposite directions, whose hanging walls are shifted down (throws 0.06 and
    0.04 of the depth). Deterministic; x is the first coordinate, depth the last (0 at
    the top); in 3D the model does not depend on the middle coordinate.

    Parameters
    ----------
    *coords : arrays
        ``x, depth`` (2D) or ``x, y, depth`` (3D), in the unit square (cube).
    absolute : bool
        True gives km/s (1.5 to 4.5); False (the default) relative to water (1 to 3).

    Examples
    --------
    >>> v = marmousi_velocity(np.array([0.5, 0.5, 0.5]), np.array([0.02, 0.5, 0.99]))
    >>> v.round(3).tolist()
    [1.0, 1.8, 3.0]
    """
    x, depth = np.broadcast_arrays(*(np.asarray(c, float) for c in (coords[0], coords[-1])))
    water = 0.07 + 0.015 * np.sin(2 * np.pi * 1.7 * x)
    # Two normal faults: lines x = x0 + slope·depth; the side x > line is shifted down.
    shifted = depth.copy()
    shifted -= np.where(x > 0.28 + 0.35 * depth, 0.06, 0.0)
    shifted -= np.where(x > 0.80 - 0.30 * depth, 0.04, 0.0)
    count = np.zeros(x.shape, dtype=np.intp)
    for i, base in enumerate(np.linspace(0.16, 0.88, len(MARMOUSI_LAYERS) - 2)):
        fold = 0.02 * np.sin(2 * np.pi * (1.3 * x + 0.11 * i)) - (0.015 + 0.06 * i / 8) * np.exp(
            -(((x - 0.55) / 0.18) ** 2)
        )
        count += shifted >= base + fold
    v = np.asarray(MARMOUSI_LAYERS)[np.where(depth < water, 0, 1 + count)]
    return v if absolute else v / MARMOUSI_LAYERS[0]
