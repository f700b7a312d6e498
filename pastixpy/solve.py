"""Solve phase: b into the factored space, the triangular solves, back, then refinement.

A :class:`Solver` holds everything a solve reads, fixed when the factorization is
made: the matrix, its preprocessing, the factors and the gathers between the user's
numbering and pivot order. It is never modified, so any number of threads can solve
with one at once, and a refactorization replaces it as a whole (solves already
running finish on the one they started with). What a solve finds out (backward
error, refinement steps, time) comes back as a :class:`SolveInfo`.

The factors may be in a lower precision than the matrix (mixed precision): the
residuals, the solution and the refinement stay in the matrix's precision, and only
the triangular solves run in the factors' (:meth:`Solver.apply_inverse` converts
down and back). Refinement sees the factors through :meth:`Solver.apply_inverse` and
the matrix through a :class:`MatrixOperator`, nothing else.

This module is the mechanism. The rules it follows and the verdicts it passes (what
``refine="auto"`` runs, when a solve is singular, the growth check, the condition
estimates, the wording of perturbed pivots) are :mod:`pastixpy.solve_policy`'s, which
the solver calls at those points.
"""

import functools
import time
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from . import _numeric, solve_policy
from .errors import OutOfMemoryError, SingularMatrixError
from .memory import headroom
from .numeric import SchurFactors
from .permutation import inverse_permutation
from .preprocess import equilibrate
from .refine import backward_error, refine
from .runtime import blas_threads

#: Vectors of n entries per right-hand side a refined solve may hold at once: x, b, the
#: residual, copies in pivot order, and GMRES's basis (restarted every 30 iterations).
SOLVE_VECTORS = 40


@dataclass(frozen=True)
class SolveInfo:
    """What one solve found: the worst backward error over its columns, the
    refinement steps and Krylov iterations it took, what refinement ran (``"none"``,
    ``"ir"``, ``"ir+gmres"``, ``"ir+cg"``), and its wall time."""

    backward_error: float
    refinement_steps: int
    refinement: str
    seconds: float


@dataclass(frozen=True)
class Solver:
    """The solve of one factorization (see the module docstring).

    Attributes
    ----------
    kind : Kind
    C : scipy.sparse.csc_array
        The matrix as given (canonical), for residuals: its dtype is the working
        precision of solves and refinement.
    prep : Preprocessing
    factors : Factors
        In the working precision, or a lower one (mixed precision).
    norm_a : float
        ‖C‖∞, for backward errors.
    norm_scaled : float
        ‖B‖∞ of the preprocessed (scaled) matrix, for the growth of solutions.
    pivot_tol : float
    perturbed_columns : tuple of int
        Columns of C whose pivots static pivoting replaced.
    refine : (str, dict)
        The refinement option, parsed.
    threads : int or None
        BLAS threads for the solves (None: as configured).
    gathers : dict
        See :func:`pivot_order_gathers`.
    exact : bool
        The factored matrix is A itself; False where a symmetric kind factors the
        lower triangle of a matrix symmetric only up to rounding, or forced on one
        that is not: refinement then always runs, against A itself.
    compressed : bool
        Block low-rank factors: they solve a matrix within the compression tolerance of
        A, so refinement always runs, by GMRES preconditioned by them ("auto").
    promote : bool
        A right-hand side in a higher precision than the matrix (float64 b, float32 A)
        is solved in b's precision: the matrix, exact in it, with these factors refined
        to its accuracy (:attr:`in_double`, mixed precision). False where single
        precision was asked for.
    equilibrated_growth : bool
        Factors of A itself, unscaled (the small path's simplicial LU): the growth check
        of a solution measures it on A equilibrated, as the pipeline's scaled factors
        would (:func:`~pastixpy.solve_policy.check_growth`).
    """

    kind: str
    C: object
    prep: object
    factors: object
    norm_a: float
    norm_scaled: float
    pivot_tol: float
    perturbed_columns: tuple
    refine: tuple
    threads: int | None
    gathers: dict
    exact: bool = True
    compressed: bool = False
    promote: bool = True
    equilibrated_growth: bool = False

    @property
    def dtype(self):
        """The working precision: the matrix's (solutions, residuals, refinement)."""
        return self.C.dtype

    @property
    def mixed(self):
        """Whether the factors are in a lower precision than the matrix."""
        return self.factors.dtype != self.dtype

    @property
    def n(self):
        return self.C.shape[0]

    # ------------------------------------------------------------------ one solve

    def solve(self, b2, trans="N", warn=True):
        """Solve op(A) X = B for a checked 2-D ``b2``; returns ``(x, SolveInfo)``.

        The mechanism under :meth:`pastixpy.Factorization.solve`, which checks b and
        its shape and calls this.

        x has the dtype promoted from A's and b2's. Raises SingularMatrixError
        when refinement cannot reach the requested backward error.
        """
        t0 = time.perf_counter()
        dtype = self.dtype
        if b2.dtype == dtype:  # the usual case: nothing to promote, convert or scale
            scales = None
        else:
            dtype = np.promote_types(dtype, b2.dtype)
            if self.promote and _bits(dtype) > _bits(self.dtype):
                return self.in_double.solve(b2, trans, warn)
            # b converted to a lower precision (precision="single") is first brought into
            # its range, column by column, by a power of two that x is divided by after.
            b2, scales = into_range(b2, self.dtype)
        try:
            if self.threads is None:  # the small path's factors: no BLAS to limit
                x, berr, steps, used = self._columns(b2, trans, warn)
            else:
                with blas_threads(self.threads):
                    x, berr, steps, used = self._columns(b2, trans, warn)
            info = SolveInfo(berr, steps, used, time.perf_counter() - t0)
            x = x.astype(dtype, copy=False)
            if scales is not None:
                x = x / scales
                if not np.isfinite(x).all():
                    raise SingularMatrixError(
                        f"the solution overflows {dtype}: its entries lie beyond the largest "
                        "float; scale A or b"
                    )
            return x, info
        except MemoryError as exc:
            if isinstance(exc, OutOfMemoryError):
                raise
            raise self._out_of_memory(str(exc), b2) from None

    def _columns(self, b2, trans, warn):
        """:meth:`_checked` of b2 in the working precision: ``(x, worst backward error,
        steps, what ran)``; a complex b2 with real factors as two real systems."""
        if b2.dtype.kind == "c" and self.dtype.kind != "c":
            # Real factors: the real and imaginary parts are two real systems.
            re, berr_re, s_re, used = self._checked(self._real_part(b2.real), trans, warn)
            im, berr_im, s_im, used_im = self._checked(self._real_part(b2.imag), trans, warn)
            return re + 1j * im, max(berr_re, berr_im), s_re + s_im, max(used, used_im, key=len)
        return self._checked(b2.astype(self.dtype, copy=False), trans, warn)

    def _out_of_memory(self, reason, b2):
        """OutOfMemoryError for an allocation of a solve that failed (numpy's or the
        kernels' work buffers), with about what a refined solve holds."""
        nrhs = b2.shape[1] if b2.ndim > 1 else 1
        needed = SOLVE_VECTORS * self.n * nrhs * np.dtype(self.dtype).itemsize
        room = headroom()
        available = 0 if room is None else room.bytes
        where = "" if room is None else f" ({room.limit})"
        return OutOfMemoryError(
            f"{reason or 'an allocation failed'}: a refined solve of {nrhs} right-hand "
            f"side(s) holds about {needed / 2**30:.2f} GiB besides the factors and this "
            f"process may take only {available / 2**30:.2f} GiB more{where}; solve fewer "
            "right-hand sides at once, or factor with compress= or precision='mixed' "
            "(smaller factors leave more room)",
            needed=needed,
            available=available,
        )

    @cached_property
    def in_double(self):
        """This solver for right-hand sides in double precision: the matrix converted
        (exactly) to float64 / complex128, the same factors, refined to double accuracy
        as mixed precision is (the solver itself where it is already double)."""
        double = np.dtype(np.complex128 if np.iscomplexobj(self.C.data) else np.float64)
        if self.dtype == double:
            return self
        method, kw = self.refine
        if method == "none":
            method = "auto"
        perm, iperm = self.gathers["N"][1], self.gathers["N"][2]
        return replace(
            self,
            C=self.C.astype(double),
            refine=(method, kw),
            gathers=pivot_order_gathers(self.prep, perm, iperm, double),
        )

    @cached_property
    def rules(self):
        """The refinement its solves run (:func:`~pastixpy.solve_policy.refinement_rules`,
        fixed by the factorization), made on first use and kept."""
        return solve_policy.refinement_rules(self)

    @cached_property
    def rough_equilibration(self):
        """``(D_r, D_c)`` of :data:`~pastixpy.solve_policy.ROUGH_EQUILIBRATION` Ruiz
        iterations, made on first use and kept: the growth check's first try, before
        :attr:`equilibration`."""
        return equilibrate(self.C, symmetric=False, iterations=solve_policy.ROUGH_EQUILIBRATION)

    @cached_property
    def equilibration(self):
        """``(D_r, D_c)``, the Ruiz equilibration of the matrix, made on first use and
        kept: what :attr:`equilibrated_growth` measures with."""
        return equilibrate(self.C, symmetric=False)

    def _real_part(self, a):
        return np.ascontiguousarray(a, dtype=self.dtype)

    def _checked(self, b, trans, warn):
        """Refined x, its worst backward error, the steps and what refinement ran, or
        SingularMatrixError (the verdict is :func:`~pastixpy.solve_policy.check_solution`'s)."""
        x, berr, steps, used, growth = self._refined(b, trans)
        worst = float(berr.max()) if berr.size else 0.0
        solve_policy.check_solution(self, x, b, worst, trans, warn, growth)
        return x, worst, steps, used

    def refined(self, b, trans, to_floor=None):
        """x for op(A) x = b (2-D, A's dtype), refined as the ``refine`` option says
        (:func:`~pastixpy.solve_policy.refinement_rules`).

        ``to_floor`` (default: as the option says) refines columns already at ``tol``
        on to the precision's floor. Returns ``(x, backward error of each column,
        steps, what ran)``; never raises for accuracy (:meth:`solve`'s verdict does).
        """
        return self._refined(b, trans, to_floor)[:4]

    def _refined(self, b, trans, to_floor=None):
        """:meth:`refined`'s, and each column's growth ‖A‖∞ ‖x‖∞ / ‖b‖∞ where the factors
        measured it in their one-call solve (else None)."""
        rules = self.rules
        fused = getattr(self.factors, "refined_solve", None)
        always = rules.always if to_floor is None else to_floor
        if fused is not None and trans == "N" and rules.method in ("auto", "ir") and not always:
            # Factors that solve, check and refine in one kernel call (the small path's
            # simplicial LU and LDLᵀ): the generic refinement below only where that one
            # stopped above the tolerance.
            x, berr, growth, steps = fused(self.C, b, rules.tol, rules.maxiter)
            if not (berr > rules.tol).any():
                return x, berr, steps, "ir" if steps else "none", growth
        else:
            x = self.apply_inverse(b, trans)
        op = self.operator(trans)
        if rules.method == "none":
            return x, backward_error(op, x, b, self.norm_a), 0, "none", None
        x, berr, steps, used = refine(
            op,
            lambda R: self.apply_inverse(R, trans, overwrite=True),
            b,
            x,
            self.norm_a,
            rules.tol,
            rules.maxiter,
            rules.krylov,
            always=rules.always if to_floor is None else to_floor,
            ir_steps=rules.ir_steps,
        )
        return x, berr, steps, used, None

    @cached_property
    def refined_condition(self):
        """``(estimate of κ₁(A), worst backward error)`` from refined solves, made on
        first use and kept (once per factorization): see
        :func:`~pastixpy.solve_policy.refined_condition`, which words the warnings of
        solves with perturbed pivots from it."""
        return solve_policy.refined_condition(self)

    def apply_inverse(self, R, trans, overwrite=False):
        """x = A⁻¹ R (or A⁻ᵀ, A⁻ᴴ) with the factors, no refinement. R: (n, k) in A's dtype.

        With ``overwrite``, x is written into R (a refinement's residual): the rows go
        back to their order by a gather into an array already in memory, not into a
        new one nor by following the permutation's cycles in place. Factors in a lower
        precision solve on a copy converted down, converted back after.
        """
        conj_op = trans == "H" or (trans == "T" and self.kind.hermitian and np.iscomplexobj(R))
        if conj_op:  # Aᴴ = conj(Aᵀ), and Aᵀ = conj(A) for the Hermitian kinds
            X = self.apply_inverse(np.conj(R), "T" if trans == "H" else "N", overwrite=True)
            return np.conj(X, out=X)
        into, back, inverse, d_in, d_out = self.gathers["N" if trans == "N" else "T"]
        op = "T" if trans == "T" and self.kind.two_factors else "N"
        out = R if overwrite and R.flags.c_contiguous and R.flags.writeable else None
        if self.mixed:
            R = np.ascontiguousarray(R)
            if not _fits_single(R, d_in):
                return self._apply_inverse_in_range(R, op, into, back, inverse, d_in, d_out, out)
            # Gathered into pivot order and converted down in one pass, solved and scaled
            # in the factors' precision, gathered back and converted up in one pass.
            Y = np.empty(R.shape, self.factors.dtype)
            _numeric.gather_rows_converted(R, into, Y)
            if d_in is not None:
                Y *= d_in
            self.factors.solve_inplace(Y, op)
            if d_out is not None:
                Y *= d_out
            out = np.empty(R.shape, self.dtype) if out is None else out
            _numeric.gather_rows_converted(Y, inverse, out)
            return out
        # Rows gathered into pivot order, row-major for the kernels, in one pass, and
        # scaled there: X is the solution's only array (each n x k array is a
        # page-fault bill, and a pass over it). Then the same backwards.
        X = permuted_rows(R, into)
        if d_in is not None:
            X *= d_in
        self.factors.solve_inplace(X, op)
        if d_out is not None:
            X *= d_out
        return unpermute_rows(X, back, inverse, out=out)

    def _apply_inverse_in_range(self, R, op, into, back, inverse, d_in, d_out, out):
        """The mixed-precision solve of :meth:`apply_inverse` for an R whose scaled
        columns lie outside single precision's range (entries near 1e±38 and beyond):
        gathered and scaled in double, each column brought to a largest magnitude
        in [1/2, 1) by a power of two before it is converted down, and the solution
        scaled back in double."""
        X = permuted_rows(R, into)
        if d_in is not None:
            X *= d_in
        scales = _binary_scales(_numeric.column_max_abs(X))
        X *= scales
        Y = X.astype(self.factors.dtype)
        self.factors.solve_inplace(Y, op)
        X[...] = Y
        if d_out is not None:
            X *= d_out
        X /= scales
        return unpermute_rows(X, back, inverse, out=out)

    def operator(self, trans):
        """op(A) as refinement sees it (a :class:`MatrixOperator`)."""
        # A's rows are its columns only where it is exactly symmetric (Hermitian).
        unsymmetric = self.kind.two_factors or not self.exact
        return MatrixOperator(self.C, trans, self.kind.hermitian, unsymmetric)


#: Single precision's comfortable range for a right-hand side's largest magnitude: the
#: solve's products may grow it by the factors' norms (order 1 after scaling) without
#: leaving float32, whose range is about 1e±38.
SINGLE_RANGE = (2.0**-60, 2.0**60)


@functools.cache
def _bits(dtype):
    """The bits of one real component of ``dtype`` (32 for float32 and complex64)."""
    return np.finfo(dtype).bits


def _binary_scales(maxima):
    """Powers of two s with s·maxima in [1/2, 1) (1 where a maximum is 0 or not finite)."""
    maxima = np.asarray(maxima, dtype=np.float64)
    ok = np.isfinite(maxima) & (maxima > 0)
    _, exponent = np.frexp(np.where(ok, maxima, 1.0))
    return np.where(ok, np.ldexp(1.0, -exponent), 1.0)


def _fits_single(R, d):
    """Whether R's columns, converted to single precision and then scaled by the rows'
    ``d`` (None: 1), lie in :data:`SINGLE_RANGE` (bounds from R's column maxima and d's
    extremes)."""
    top = _numeric.column_max_abs(R) if R.size else np.zeros(1)
    top = top[top > 0]
    if not top.size:
        return True
    lo, hi = (1.0, 1.0) if d is None else (float(d.min()), float(d.max()))
    low, high = SINGLE_RANGE
    return bool(top.min() * min(lo, 1.0) >= low and top.max() * max(hi, 1.0) <= high)


def into_range(b, dtype):
    """b converted to ``dtype``, and the column scales it was multiplied by first (None
    when none was needed): powers of two (exact) that bring each column's largest
    magnitude into [1/2, 1) when the conversion lowers the precision and a column lies
    outside :data:`SINGLE_RANGE`."""
    dtype = np.dtype(dtype)
    if b.dtype.kind == "c":  # a complex b keeps its imaginary part (real factors split it)
        dtype = np.promote_types(dtype, np.complex64)
    if _bits(b.dtype) <= _bits(dtype) or b.dtype.kind not in "fc":
        return b.astype(dtype, copy=False), None
    top = np.abs(b).max(axis=0) if b.size else np.zeros(b.shape[1])
    live = top[top > 0]
    if not live.size or (live.min() >= SINGLE_RANGE[0] and live.max() <= SINGLE_RANGE[1]):
        return b.astype(dtype, copy=False), None
    scales = _binary_scales(top)
    return (b * scales).astype(dtype), scales


def pivot_order_gathers(prep, perm, iperm, dtype):
    """What a solve gathers its rows by, per op (``"N"``, and ``"T"`` for Aᵀ and Aᴴ):
    ``(into, back, back's inverse, D_in, D_out)``, the scalings as columns in pivot
    order (None when A is not scaled). Made once per factorization.

    The row matching permutes the equations: it is read on the way in for A x = b, on
    the way out for Aᵀ x = b; the scalings likewise, D_r in and D_c out for A.
    """
    if prep.row_perm is None:
        matched, imatched = perm, iperm
    else:
        matched = prep.row_perm[perm]
        imatched = inverse_permutation(matched)
    dr = dc = None
    if prep.scaled:
        real = np.finfo(dtype).dtype  # keep single-precision solves single
        dr, dc = (d.astype(real)[perm][:, None] for d in (prep.dr, prep.dc))
    return {"N": (matched, perm, iperm, dr, dc), "T": (perm, matched, imatched, dc, dr)}


@dataclass(frozen=True)
class MatrixOperator:
    """op(A) for refinement: products, and the maxima a backward error needs.

    ``trans`` is "N", "T" or "H". C's columns are the rows of Cᵀ (conjugated: of Cᴴ),
    and of C itself for the symmetric and Hermitian kinds (``symmetric``; ``hermitian``
    for the conjugate ones): there the residual maxima come from one pass over C, x
    and b, with no n x k residual array. LU's C by rows is not at hand.
    """

    C: object
    trans: str
    hermitian: bool
    unsymmetric: bool

    def matvec(self, X):
        C = self.C
        if self.trans == "N":
            return C @ X
        if self.trans == "T":
            return C.T @ X
        return C.conj().T @ X

    def residual_maxima(self, x, b):
        """Column maxima of |b - op(A) x|, |x| and |b|: in one pass over C, x and b where
        C's rows are at hand, else from the residual formed by a product; None for
        dtypes the kernels do not take."""
        C = self.C
        if not (x.dtype == b.dtype == C.dtype and x.dtype in _KERNEL_DTYPES):
            return None
        if self.trans == "N" and self.unsymmetric:
            r = C @ x
            np.subtract(b, r, out=r)
            return tuple(_numeric.column_max_abs(np.ascontiguousarray(a)) for a in (r, x, b))
        conj = np.iscomplexobj(C.data) and (
            self.trans == "H" or (self.trans == "N" and self.hermitian)
        )
        return _numeric.residual_maxima(
            C.indptr, C.indices, C.data, conj, np.ascontiguousarray(x), np.ascontiguousarray(b)
        )


_KERNEL_DTYPES = (np.float32, np.float64, np.complex64, np.complex128)


def permuted_rows(a, index):
    """``a[index]`` of a 2-D array, as a new row-major array.

    One pass in the kernel module: numpy's take moves a row of k right-hand sides
    at a time, several times slower for k > 1. ``a`` has one of the factor dtypes.
    """
    a = np.ascontiguousarray(a)
    out = np.empty(a.shape, a.dtype)
    _numeric.gather_rows(a, np.ascontiguousarray(index, dtype=np.int64), out)
    return out


#: Un-permuting the solution gathers it into a new array when its rows take at most
#: this many bytes (one right-hand side): the gather's loads are independent, while
#: following the permutation's cycles in place waits on one load after another. Wider
#: rows go in place: the walk costs about the same per row, and a new array's fresh
#: pages would cost per byte.
GATHER_MAX_ROW_BYTES = 16


def unpermute_rows(a, index, inverse, out=None):
    """``a[index] = a`` for a row-major 2-D ``a``; ``inverse`` is ``index``'s inverse.

    Returns ``out`` when given (a row-major array like ``a``, gathered into), else
    a new array when ``a``'s rows are narrow (see :data:`GATHER_MAX_ROW_BYTES`),
    else ``a`` itself, un-permuted in place.
    """
    if out is not None and out.shape == a.shape and out.dtype == a.dtype:
        _numeric.gather_rows(a, np.ascontiguousarray(inverse, dtype=np.int64), out)
        return out
    if a.shape[1] * a.itemsize <= GATHER_MAX_ROW_BYTES:
        return permuted_rows(a, inverse)
    return unpermute_rows_inplace(a, index)


def unpermute_rows_inplace(a, index):
    """``a[index] = a`` in place, for a row-major 2-D ``a`` and a permutation ``index``
    (the inverse of :func:`permuted_rows`, without a second array)."""
    _numeric.scatter_rows_inplace(a, np.ascontiguousarray(index, dtype=np.int64))
    return a


# ---------------------------------------------------------------------- Schur complement:
# the partial solves of :class:`pastixpy.numeric.schur.SchurFactors` in the user's numbering
# and scaling (B = D_r A D_c, no row matching with schur=).


def _schur_factors(solver):
    F = solver.factors
    if not isinstance(F, SchurFactors):
        raise TypeError("not the factors of a Schur complement factorization")
    return F


def _by_parts(solver, run, *arrays):
    """``run(*arrays)``; where one of them is complex and the factors are real, run on
    their real parts and on their imaginary parts (two real systems), recombined."""
    if any(np.iscomplexobj(a) for a in arrays) and not np.iscomplexobj(
        np.empty(0, solver.factors.dtype)
    ):
        return run(*(np.real(a) for a in arrays)) + 1j * run(*(np.imag(a) for a in arrays))
    return run(*arrays)


def schur_complement(solver):
    """S = A₂₂ − A₂₁ A₁₁⁻¹ A₁₂ on the Schur unknowns, in their order, A's dtype: the
    factors' S of the scaled B unscaled (S_B = D_r₂ S D_c₂)."""
    F = _schur_factors(solver)
    S = F.schur.astype(solver.dtype)
    _, _, _, dr, dc = solver.gathers["N"]
    if dr is not None:
        S = S / dr[F.first :] / dc[F.first :].T
    return S


def schur_reduce(solver, b2):
    """The reduced right-hand side y = b₂ − A₂₁ A₁₁⁻¹ b₁ of a checked 2-D b2 (A's
    numbering), on the Schur unknowns in their order."""
    F = _schur_factors(solver)
    into, _, _, dr, _ = solver.gathers["N"]

    def run(R):
        X = np.ascontiguousarray(R[into], dtype=F.dtype)
        if dr is not None:
            X *= dr
        F.reduce(X)
        y = X[F.first :]
        if dr is not None:
            y /= dr[F.first :]
        return y.astype(np.promote_types(solver.dtype, R.dtype), copy=False)

    return _by_parts(solver, run, b2)


def schur_expand(solver, b2, x2):
    """x with x₂ on the Schur unknowns and x₁ = A₁₁⁻¹ (b₁ − A₁₂ x₂) on the others, for
    checked 2-D b2 (A's numbering) and x2 (the Schur unknowns' order)."""
    F = _schur_factors(solver)
    into, back, _, dr, dc = solver.gathers["N"]

    def run(R, Y):
        X = np.ascontiguousarray(R[into], dtype=F.dtype)
        if dr is not None:
            X *= dr
        F.reduce(X)
        X[F.first :] = Y / dc[F.first :] if dc is not None else Y
        F.expand(X)
        if dc is not None:
            X *= dc
        x = np.empty(X.shape, np.promote_types(solver.dtype, R.dtype))
        x[back] = X
        x[back[F.first :]] = Y  # as given, not through the scaling and back
        return x

    return _by_parts(solver, run, b2, x2)
