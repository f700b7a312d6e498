"""Smoothers for indefinite matrices, and the F-relaxation of the reduction framework.

Plain relaxation (Jacobi, Gauss-Seidel) amplifies, on an indefinite Helmholtz matrix, the
error components whose eigenvalues lie near zero or on the wrong side of it. Three
alternatives are offered:

* ``"polynomial"`` (default): the minimal-residual (GMRES) polynomial of a few Arnoldi
  steps. Its roots are the harmonic Ritz values of A, so it damps the eigenvalues where
  the spectrum has mass, wherever they lie in the complex plane, and leaves alone those
  near zero, which are the coarse levels' business. Being a fixed polynomial, it is a
  linear operator and costs ``degree`` products with A.
* ``"jacobi"``: damped Jacobi, the classical choice on fine grids (kh small).
* ``"kaczmarz"``: simultaneous Kaczmarz (Cimmino), Jacobi on the normal equations
  ``A Aᴴ y = b``: convergent for every nonsingular A, slowly.

``"f-jacobi"`` F-relaxation acts on the F points only (Jacobi on A_ff); with ideal
transfer operators the two-level convergence is that of this relaxation.

Each smoother works on one vector (n,) or a block of vectors (n, m) at once.
"""

import numpy as np
import scipy.sparse as sp

from ..norms import norm2
from .options import above_one, fraction, nonnegative_int, parse, positive_float, positive_int

__all__ = [
    "FRelaxation",
    "JacobiSmoother",
    "KaczmarzSmoother",
    "NormalChebyshevSmoother",
    "PolynomialSmoother",
    "SMOOTHERS",
    "F_RELAXATIONS",
    "make_smoother",
    "make_f_relaxation",
]


class PolynomialSmoother:
    """x ← x + q(A)(b − A x), with ``1 − z q(z)`` the GMRES polynomial of A.

    Parameters
    ----------
    degree : int
        Arnoldi steps, hence products with A per sweep.
    sweeps : int
        Applications per smoothing step.
    """

    name = "polynomial"

    def __init__(self, degree=4, sweeps=1):
        self.degree, self.sweeps = degree, sweeps
        self.roots = None

    def setup(self, A, rng):
        """Harmonic Ritz values of ``degree`` Arnoldi steps on A from a random vector."""
        roots = _leja_order(minimal_residual_roots(A, self.degree, rng))
        # Python scalars: they keep a single-precision level's vectors in single precision
        # (a NumPy double scalar would promote them).
        self.roots = [
            tuple(float(v) for v in r) if isinstance(r, tuple) else _scalar(r) for r in roots
        ]
        self._real = not np.iscomplexobj(A.data)
        return self

    def apply(self, A, b, x):
        for _ in range(self.sweeps):
            r = b - A @ x
            x = x + self.correction(A, r)
        return x

    def correction(self, A, r):
        """q(A) r, through the roots of p(z) = 1 − z q(z), conjugate pairs in real
        arithmetic when A is real."""
        dtype = np.result_type(r.dtype, A.dtype)
        x = np.zeros(r.shape, dtype)
        res = r.astype(dtype, copy=True)
        for root in self.roots:
            if isinstance(root, tuple):  # 1 − a z + c z², from θ and its conjugate
                a, c = root
                Ar = A @ res
                x += a * res - c * Ar
                res += c * (A @ Ar) - a * Ar
            else:
                x += res / root
                res -= (A @ res) / root
        return x


class JacobiSmoother:
    """Damped Jacobi, x ← x + ω D⁻¹(b − A x)."""

    name = "jacobi"

    def __init__(self, omega=0.6, sweeps=2):
        self.omega, self.sweeps = omega, sweeps

    def setup(self, A, rng):
        d = A.diagonal()
        if np.any(d == 0):
            d = np.where(d == 0, abs(A).max(axis=1).toarray().ravel() + 1.0, d)
        self.dinv = self.omega / d
        return self

    def apply(self, A, b, x):
        dinv = self.dinv if np.ndim(x) == 1 else self.dinv[:, None]
        for _ in range(self.sweeps):
            x = x + dinv * (b - A @ x)
        return x


class KaczmarzSmoother:
    """Simultaneous Kaczmarz (Cimmino): x ← x + ω/ρ Aᴴ D⁻¹ (b − A x), D the squared row
    norms and ρ the spectral radius of Aᴴ D⁻¹ A (estimated), convergent for any
    nonsingular A when 0 < ω < 2."""

    name = "kaczmarz"

    def __init__(self, omega=1.0, sweeps=2):
        self.omega, self.sweeps = omega, sweeps

    def setup(self, A, rng):
        norms = np.asarray(abs(A).power(2).sum(axis=1)).ravel()
        norms[norms == 0] = 1.0
        self.dinv = 1.0 / norms
        self.AH = sp.csr_array(A.conj().T)
        v = rng.standard_normal(A.shape[0])
        rho = 1.0
        for _ in range(12):
            w = self.AH @ (self.dinv * (A @ v))
            rho = float(norm2(w) / norm2(v))
            v = w / norm2(w)
        self.step = self.omega / (1.05 * rho)
        return self

    def apply(self, A, b, x):
        dinv = self.dinv if np.ndim(x) == 1 else self.dinv[:, None]
        for _ in range(self.sweeps):
            x = x + self.step * (self.AH @ (dinv * (b - A @ x)))
        return x


class NormalChebyshevSmoother:
    """Chebyshev iteration on the row-scaled normal equations ``Aᴴ D⁻¹ A x = Aᴴ D⁻¹ b``
    (D the squared row norms): Kaczmarz (Cimmino) accelerated.

    Its error propagation is ``p(M)``, M = Aᴴ D⁻¹ A Hermitian positive semidefinite and p
    the Chebyshev polynomial of the interval ``[ρ/ratio, ρ]`` (ρ the largest eigenvalue of
    M, estimated) normalized by ``p(0) = 1``. On all of ``[0, ρ]``, ``|p| ≤ 1``: this
    smoother never amplifies any error component, on any level, whatever the spectrum of
    A in the complex plane; it damps those with ``σ² ≥ ρ/ratio`` (σ the singular values of
    D^{-1/2}A) by ``1/T_degree((ratio+1)/(ratio−1))`` at least and leaves the near-kernel
    (small σ), the coarse levels' business, nearly alone. The GMRES polynomial of
    :class:`PolynomialSmoother` has no such bound: on the coarse levels of problems with
    a PML or strong contrasts it was measured amplifying some components 4 to 28 times
    per sweep.

    Parameters
    ----------
    degree : int
        Chebyshev steps; each costs a product with A and one with Aᴴ.
    ratio : float
        ρ over the lower end of the damped interval, > 1.
    sweeps : int
        Applications per smoothing step.
    """

    name = "chebyshev"

    def __init__(self, degree=4, ratio=30.0, sweeps=1):
        self.degree, self.ratio, self.sweeps = degree, ratio, sweeps

    def setup(self, A, rng):
        norms = np.asarray(abs(A).power(2).sum(axis=1)).ravel()
        norms[norms == 0] = 1.0
        self.dinv = (1.0 / norms).astype(_real(A.dtype))
        self.AH = sp.csr_array(A.conj().T)
        # ρ by power iteration, with a margin: an upper bound keeps |p| <= 1.
        v = rng.standard_normal(A.shape[0]).astype(A.dtype)
        rho = 1.0
        for _ in range(15):
            w = self.AH @ (self.dinv * (A @ v))
            rho = float(norm2(w) / norm2(v))
            v = w / norm2(w)
        self.upper = 1.1 * rho
        self.lower = self.upper / self.ratio
        return self

    def apply(self, A, b, x):
        dinv = self.dinv if np.ndim(x) == 1 else self.dinv[:, None]
        theta = 0.5 * (self.upper + self.lower)
        delta = 0.5 * (self.upper - self.lower)
        sigma = theta / delta
        for _ in range(self.sweeps):
            r = self.AH @ (dinv * (b - A @ x))
            rho = 1.0 / sigma
            d = r / theta
            for step in range(self.degree):
                x = x + d
                if step == self.degree - 1:
                    break
                r = r - self.AH @ (dinv * (A @ d))
                rho_next = 1.0 / (2.0 * sigma - rho)
                d = (rho_next * rho) * d + (2.0 * rho_next / delta) * r
                rho = rho_next
        return x


def _real(dtype):
    """The real dtype of the same precision."""
    return np.finfo(dtype).dtype


class FRelaxation:
    """Jacobi on the F points: x_f ← x_f + ω D_ff⁻¹ (b − A x)_f, the C values kept."""

    name = "f-jacobi"

    def __init__(self, fpoints, diagonal, omega=1.0, sweeps=1):
        self.f = fpoints
        self.dinv = omega / diagonal
        self.sweeps = sweeps

    def apply(self, A, b, x):
        dinv = self.dinv if np.ndim(x) == 1 else self.dinv[:, None]
        for _ in range(self.sweeps):
            r = b - A @ x
            x[self.f] += dinv * r[self.f]
        return x


#: Smoother options: name → {parameter: (default, check)}.
SMOOTHERS = {
    "polynomial": {"degree": (4, positive_int), "sweeps": (1, positive_int)},
    "jacobi": {"omega": (0.6, positive_float), "sweeps": (2, positive_int)},
    "kaczmarz": {"omega": (1.0, positive_float), "sweeps": (2, positive_int)},
    "chebyshev": {
        "degree": (4, positive_int),
        "ratio": (30.0, above_one),
        "sweeps": (1, positive_int),
    },
    "none": {},
}

#: F-relaxation options.
F_RELAXATIONS = {
    "jacobi": {"omega": (1.0, fraction), "sweeps": (1, nonnegative_int)},
    "none": {},
}

_CLASSES = {
    "polynomial": PolynomialSmoother,
    "jacobi": JacobiSmoother,
    "kaczmarz": KaczmarzSmoother,
    "chebyshev": NormalChebyshevSmoother,
}


def make_smoother(option, argname="smoother"):
    """Validate a smoother option; returns a factory of fresh smoothers (one per level),
    or None for ``"none"``."""
    name, params = parse(option, SMOOTHERS, argname)
    if name == "none":
        return None
    cls = _CLASSES[name]
    return lambda: cls(**params)


def make_f_relaxation(option, argname="f_relaxation"):
    """Validate an F-relaxation option; returns its parameters, or None for ``"none"``."""
    name, params = parse(option, F_RELAXATIONS, argname)
    if name == "none" or params["sweeps"] == 0:
        return None
    return params


def minimal_residual_roots(A, degree, rng):
    """The harmonic Ritz values of ``degree`` Arnoldi steps on A from a random vector:
    the roots of the residual polynomial of GMRES after ``degree`` steps.

    Returns fewer roots when the Krylov space is exhausted early (A has few distinct
    eigenvalues), and never a root at zero.
    """
    n = A.shape[0]
    complex_ = np.iscomplexobj(A.data)
    v = rng.standard_normal(n)
    if complex_:
        v = v + 1j * rng.standard_normal(n)
    dtype = v.dtype
    V = [v / norm2(v)]
    H = np.zeros((degree + 1, degree), dtype)
    m = degree
    for j in range(degree):
        w = A @ V[j]
        for _ in range(2):
            for i in range(j + 1):
                c = np.vdot(V[i], w)
                H[i, j] += c
                w = w - c * V[i]
        H[j + 1, j] = norm2(w)
        if abs(H[j + 1, j]) <= 1e-12 * max(1.0, abs(H[: j + 1, j]).max()):
            m = j + 1
            break
        V.append(w / H[j + 1, j])
    Hm = H[:m, :m]
    e = np.zeros(m)
    e[-1] = 1.0
    try:
        f = np.linalg.solve(Hm.conj().T, e)
        roots = np.linalg.eigvals(Hm + abs(H[m, m - 1]) ** 2 * np.outer(f, e))
    except np.linalg.LinAlgError:  # singular H_m: the Ritz values instead
        roots = np.linalg.eigvals(Hm)
    scale = abs(roots).max() if roots.size else 1.0
    roots = roots[abs(roots) > 1e-8 * scale]
    if not complex_:
        roots = _pair_conjugates(roots)
    return roots


def _pair_conjugates(roots):
    """For a real A: real roots as floats, complex ones as (a, c) factors 1 − a z + c z²
    of each conjugate pair (Arnoldi in real arithmetic gives them in pairs)."""
    out = []
    used = np.zeros(len(roots), bool)
    for i, t in enumerate(roots):
        if used[i]:
            continue
        used[i] = True
        if abs(t.imag) <= 1e-10 * abs(t):
            out.append(float(t.real))
            continue
        rest = [j for j in range(len(roots)) if not used[j]]
        j = min(rest, key=lambda j: abs(roots[j] - np.conj(t))) if rest else None
        if j is not None:
            used[j] = True
        mod2 = abs(t) ** 2
        out.append((2 * t.real / mod2, 1.0 / mod2))
    return out


def _leja_order(roots):
    """Order the roots so that partial products stay bounded (Leja ordering), for a
    numerically stable product form of the polynomial."""
    if len(roots) <= 1:
        return list(roots)
    points = [complex(r) if not isinstance(r, tuple) else _pair_point(r) for r in roots]
    order = [int(np.argmax(np.abs(points)))]
    while len(order) < len(points):
        rest = [i for i in range(len(points)) if i not in order]
        scores = [np.prod([abs(points[i] - points[j]) for j in order]) for i in rest]
        order.append(rest[int(np.argmax(scores))])
    return [roots[i] for i in order]


def _scalar(root):
    return float(root) if np.isrealobj(root) else complex(root)


def _pair_point(pair):
    """A representative point of a conjugate pair (a, c): its root in the upper half plane."""
    a, c = pair
    re = a / (2 * c)
    return complex(re, np.sqrt(max(1.0 / c - re * re, 0.0)))
