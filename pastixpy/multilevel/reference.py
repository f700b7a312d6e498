"""The exact-ideal two-grid method: the reference the multilevel construction approximates.

With a C/F splitting, the ideal interpolation ``P = [−A_ff⁻¹ A_fc; I]``, the ideal
restriction ``R = [−A_cf A_ff⁻¹, I]`` and the Schur complement ``S = R A P`` as coarse
operator, solved exactly, the coarse-grid correction leaves the error ``[e_f − W e_c; 0]``
(W the F rows of P): it removes the C error whatever it is. The F-relaxation that follows
acts on the F error alone, so after ν Jacobi sweeps with ``G = I − ω D_ff⁻¹ A_ff`` the
error of one cycle is ``[G^ν (e_f − W e_c); 0]``, and of j cycles ``[G^{νj} (e_f −
W e_c); 0]``: the two-grid method converges exactly as the F-relaxation does, in one
cycle when A_ff is solved exactly. Everything here is computed with this package's
factorizations: A_ff for P and R, A itself for the exact coarse solve (``S⁻¹ r_c`` is the
C part of ``A⁻¹ [0; r_c]``), so the reference is for problems a direct solver handles.
"""

import time

import numpy as np
import scipy.sparse as sp

from ..errors import InvalidInputError, OptionError
from .checks import check_matrix
from .coarsening import COARSENINGS, split
from .options import parse
from .smoothers import F_RELAXATIONS, make_smoother

__all__ = ["IdealTwoGrid"]


class IdealTwoGrid:
    """Exact-ideal two-grid cycle: ideal P and R, exact Schur-complement coarse solve.

    Parameters
    ----------
    A : sparse matrix
    fmask : array of bool, optional
        The F points; by default the splitting ``coarsening`` gives.
    coarsening : str or (str, dict)
        As in :func:`helmholtz_solver`, when ``fmask`` is not given.
    f_relaxation : "exact", "jacobi" or ("jacobi", dict)
        After the coarse correction: A_ff solved exactly, or ``sweeps`` Jacobi sweeps with
        damping ``omega``.
    smoother : str or (str, dict)
        Pre- and post-smoothing on A (``"none"`` by default, as in the theory).
    threads : int
    seed : int

    Attributes
    ----------
    fmask : ndarray of bool
    stats : dict
        ``setup_seconds``, ``n_f``, ``n_c``.
    """

    def __init__(
        self,
        A,
        fmask=None,
        *,
        coarsening="cr",
        f_relaxation=("jacobi", {"sweeps": 1}),
        smoother="none",
        threads=1,
        seed=0,
    ):
        from ..api import factorize

        t = time.perf_counter()
        self.A = A = check_matrix(A)
        n = A.shape[0]
        if fmask is None:
            name, params = parse(coarsening, COARSENINGS, "coarsening")
            fmask = split(A, name, params, params.get("shape")).fmask
        fmask = np.asarray(fmask)
        if fmask.shape != (n,) or fmask.dtype != bool:
            raise InvalidInputError(
                f"fmask must be a boolean array of length {n}, got {fmask.dtype} {fmask.shape}"
            )
        if fmask.all() or not fmask.any():
            raise InvalidInputError("fmask must have both F (True) and C (False) points")
        self.fmask = fmask.copy()
        self.F, self.C = np.flatnonzero(fmask), np.flatnonzero(~fmask)
        AF, AC = A[self.F], A[self.C]
        self.Aff, self.Afc = sp.csr_array(AF[:, self.F]), sp.csr_array(AF[:, self.C])
        self.Acf = sp.csr_array(AC[:, self.F])
        self.ff = factorize(sp.csc_array(self.Aff), threads=threads, refine="none")
        self.full = factorize(sp.csc_array(A), threads=threads)
        if f_relaxation == "exact":
            self.relax = "exact"
        else:
            name, params = parse(f_relaxation, {"jacobi": F_RELAXATIONS["jacobi"]}, "f_relaxation")
            self.relax = params
        factory = make_smoother(smoother)
        rng = np.random.default_rng(seed)
        self.smoother = None if factory is None else factory().setup(A, rng)
        self.stats = {
            "setup_seconds": time.perf_counter() - t,
            "n_f": int(len(self.F)),
            "n_c": int(len(self.C)),
        }

    # ------------------------------------------------------------ ideal operators

    def interpolate(self, ec):
        """P_ideal e_c = [−A_ff⁻¹ A_fc e_c; e_c]."""
        x = np.zeros(self.A.shape[0], np.result_type(ec, self.A.dtype))
        x[self.F] = -self.ff.solve(self.Afc @ ec)
        x[self.C] = ec
        return x

    def restrict(self, r):
        """R_ideal r = r_c − A_cf A_ff⁻¹ r_f."""
        return r[self.C] - self.Acf @ self.ff.solve(r[self.F])

    def schur_solve(self, rc):
        """S⁻¹ r_c, the C part of A⁻¹ [0; r_c]."""
        rhs = np.zeros(self.A.shape[0], np.result_type(rc, self.A.dtype))
        rhs[self.C] = rc
        return self.full.solve(rhs)[self.C]

    def relaxation_matrix(self):
        """G = I − ω D_ff⁻¹ A_ff (dense), whose powers are the two-grid error on F."""
        if self.relax == "exact":
            return np.zeros(self.Aff.shape)
        d = self.Aff.diagonal()
        G = -self.relax["omega"] * (self.Aff.toarray() / d[:, None])
        G[np.diag_indices_from(G)] += 1.0
        return G

    def predicted_factor(self):
        """ρ(G^ν): the asymptotic convergence factor of the two-grid method per cycle."""
        if self.relax == "exact":
            return 0.0
        if len(self.F) > 4000:
            raise InvalidInputError("predicted_factor forms G densely: at most 4000 F points")
        rho = float(np.abs(np.linalg.eigvals(self.relaxation_matrix())).max())
        return rho ** self.relax["sweeps"]

    # ------------------------------------------------------------------ the cycle

    def __call__(self, b):
        """One two-grid cycle from x = 0: an approximation of A⁻¹ b."""
        A = self.A
        b = np.asarray(b)
        x = np.zeros(b.shape, np.result_type(b, A.dtype))
        if self.smoother is not None:
            x = self.smoother.apply(A, b, x)
        x = x + self.interpolate(self.schur_solve(self.restrict(b - A @ x)))
        x = self.f_relax(b, x)
        if self.smoother is not None:
            x = self.smoother.apply(A, b, x)
        return x

    def f_relax(self, b, x):
        r = b - self.A @ x
        if self.relax == "exact":
            x[self.F] += self.ff.solve(r[self.F])
            return x
        d = self.Aff.diagonal()
        for sweep in range(self.relax["sweeps"]):
            if sweep:
                r = b - self.A @ x
            x[self.F] += self.relax["omega"] * r[self.F] / d
        return x

    def error_propagation(self, e):
        """The error after one cycle (no smoother) from the theory: [G^ν (e_f − W e_c); 0]."""
        if self.smoother is not None:
            raise OptionError("error_propagation is the theory without smoothing")
        ef = e[self.F] + self.ff.solve(self.Afc @ e[self.C])  # e_f − W e_c
        if self.relax != "exact":
            d = self.Aff.diagonal()
            for _ in range(self.relax["sweeps"]):
                ef = ef - self.relax["omega"] * (self.Aff @ ef) / d
        else:
            ef = np.zeros_like(ef)
        out = np.zeros_like(e)
        out[self.F] = ef
        return out
