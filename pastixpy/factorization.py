"""The handle a user holds: :class:`Factorization`, made by :func:`pastixpy.factorize`.

A thin handle over the pipeline's :class:`~pastixpy.pipeline.State`: solves go to its
:class:`~pastixpy.solve.Solver` (the mechanism; the policy of refinement and the
verdicts are :mod:`pastixpy.solve_policy`'s), refactorizations to the pipeline,
determinants and inertia to :mod:`pastixpy.determinants`, the entries of A⁻¹ to
:mod:`pastixpy.selected_inverse`. The statistics are the pipeline's; the handle adds
the calling thread's last solve.
"""

import threading
import warnings

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as sla

from . import determinants, persist, pipeline, selected_inverse, solve, solve_policy
from .errors import InvalidInputError, PastixError, PastixWarning, PatternMismatchError
from .matrix import canonical_csc
from .numeric import ONE_PROCESS
from .runtime import blas_threads

__all__ = ["Factorization", "check_rhs"]


class Factorization:
    """A numeric factorization of a square sparse matrix, ready to solve with.

    Made by :func:`pastixpy.factorize` (:meth:`from_matrix`). Solves are ``F.solve(b)``
    (or ``F(b)``); the analysis and preprocessing are reused by :meth:`refactorize`.
    Any number of threads may solve with one factorization at once: a solve never
    changes it.

    It pickles (and ``copy.deepcopy`` copies it): the copy holds the same factors
    bit for bit, in memory of its own, solves exactly as the original and can be
    refactorized without touching it, so it can be sent to a ``multiprocessing``
    worker or saved. The options go with it, a ``progress`` callable included (a
    lambda does not pickle); its ``stats`` start without a last solve (those are
    per thread). A distributed factorization (``comm=``) raises TypeError.

    Attributes
    ----------
    kind : str
    analysis : Analysis
    stats : dict
    """

    def __init__(self, C, state, options):
        """The handle on ``state``, the pipeline's for canonical C under ``options``."""
        self.shape = C.shape
        self.dtype = state.solver.dtype
        self._options = options
        self._pattern = (C.indptr, C.indices)
        self._state = state
        self._last_solve = threading.local()
        self._lock = threading.Lock()
        # The small path's supernodal factors, made on first need (:meth:`_supernodal`).
        self._companion = None
        # Why no solver is held, read only when none is: "running" is set before a
        # refactorize frees the factors and "failed" after it raises, so a solve that
        # finds no factors reads the reason that held when it looked.
        self._no_factors = "failed"

    @classmethod
    def from_matrix(cls, C, options, analysis=None, backend=ONE_PROCESS, t0=None, small=True):
        """Run the pipeline (:func:`pastixpy.pipeline.run_factorization`) on canonical C
        with validated Options, its numeric phase ``backend``; ``t0``: when the user's
        call began; ``small=False`` when the small path is known not to hold (spsolve
        tried it). The one way a Factorization is made."""
        state = pipeline.run_factorization(C, options, analysis, backend, t0, small)
        return cls(C, state, options)

    def __getstate__(self):
        """Pickling and ``copy.deepcopy``: everything but the per-thread record of
        the last solve."""
        if self._options.comm is not None:
            raise TypeError(
                "a distributed factorization (comm=) cannot be pickled or copied: its "
                "factors are spread over the ranks of its communicator; factorize without "
                "comm= for a factorization that pickles"
            )
        state = dict(self.__dict__)
        del state["_last_solve"], state["_lock"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._last_solve = threading.local()
        self._lock = threading.Lock()

    @property
    def kind(self):
        """The kind's name, as factored: ``"llt"``, ``"ldlt"``, ``"ldlh"`` or ``"lu"``."""
        return self._state.kind.name

    @property
    def analysis(self):
        """The :class:`~pastixpy.Analysis` it was factored with (reused by :meth:`refactorize`).

        A small unsymmetric matrix factored on the small path (``stats["path"] ==
        "simplicial"``) has none: asking for it factors the matrix by the supernodal
        pipeline, once, beside the small path's factors, which go on solving
        (:meth:`_supernodal`)."""
        if self._state.analysis is None:
            self._supernodal()
            return self._companion.analysis
        return self._state.analysis

    @property
    def stats(self):
        """The factorization's statistics and the calling thread's last solve (a copy).

        The analysis statistics plus ``seconds`` per phase, ``factor_entries``,
        ``factor_bytes``, ``precision``, ``factor_dtype``, ``perturbed_pivots``,
        ``threads`` (of the numeric factorization), ``retries``, and ``refinement``,
        ``refinement_steps``, ``backward_error`` and ``seconds["solve"]`` of the last
        solve made by the calling thread (each thread sees its own).
        """
        info = getattr(self._last_solve, "info", None)
        stats = dict(self._state.stats, seconds=dict(self._state.stats["seconds"]))
        if info is not None:
            stats.update(
                refinement_steps=info.refinement_steps,
                refinement=info.refinement,
                backward_error=info.backward_error,
            )
            stats["seconds"]["solve"] = info.seconds
        return stats

    @property
    def _solver(self):
        return self._state.solver

    @_solver.setter
    def _solver(self, solver):
        self._state.solver = solver

    @property
    def _live_solver(self):
        """The solver, or an error when the last refactorization failed and left none."""
        solver = self._state.solver
        if solver is None:
            if self._no_factors == "running":
                raise PastixError(
                    "this factorization holds no factors while refactorize() runs (the "
                    "previous factors were freed first, to hold one factor at a time): "
                    "solve once refactorize() has returned"
                )
            raise PastixError(
                "this factorization holds no factors: its last refactorize() failed (the "
                "previous factors were freed first). Call refactorize() with a matrix that "
                "factors, or pastixpy.factorize() anew"
            )
        return solver

    @property
    def _factors(self):
        return self._supernodal().factors

    def _supernodal(self):
        """The solver of supernodal factors, with an analysis behind them.

        The small path (:func:`pastixpy.pipeline.run_factorization`) keeps a small
        unsymmetric matrix's simplicial LU, which solves (refined, transposed, checked) as
        any factors do. What reads the supernodal structure (the analysis, determinants,
        inertia, the selected inverse, drawing) calls this, which factors the
        matrix by the pipeline on first use and keeps that beside it: solves keep the
        simplicial factors, so that they give the same bits whatever was asked before,
        and the statistics stay theirs.
        """
        solver = self._live_solver
        if self._state.analysis is not None:
            return solver
        with self._lock:
            if self._companion is None:
                self._companion = pipeline.run_factorization(solver.C, self._options, small=False)
        return self._companion.solver

    def refactorize(self, A):
        """Factor a new matrix with the same pattern, reusing the analysis and row matching.

        With ``kind="auto"``, a matrix that is no longer positive definite is
        refactored as LDLᵀ (LDLᴴ), with a new analysis when 2x2 pivots need one.

        The previous factors are freed before the new ones are made, so that one
        factor is in memory at a time (solves already running in other threads
        finish on the previous factors, which are freed after them). If the
        factorization fails (an error is raised), none is left: solves raise until a
        refactorize succeeds. Solves that start while a refactorize runs raise too.

        Returns
        -------
        self

        Raises
        ------
        PatternMismatchError
            A's pattern (stored entries, explicit zeros included) differs.
        """
        C = canonical_csc(A)
        if C.shape != self.shape or not (
            np.array_equal(C.indptr, self._pattern[0])
            and np.array_equal(C.indices, self._pattern[1])
        ):
            raise PatternMismatchError(
                "the new matrix does not have the sparsity pattern this factorization was "
                "analysed for; call pastixpy.factorize(A) for a new pattern"
            )
        if C.dtype != self.dtype:
            if np.promote_types(C.dtype, self.dtype) != self.dtype:
                raise InvalidInputError(
                    f"the new matrix has dtype {C.dtype}, this factorization {self.dtype}: "
                    "factorize it anew"
                )
            C = C.astype(self.dtype)
        # The pipeline frees the previous factors first: one factor in memory at a time.
        self._no_factors = "running"
        try:
            if self._state.analysis is None:  # the small path's: it factors anew
                self._state.solver, self._companion = None, None  # as the pipeline frees
                checked = pipeline.recheck(self._state, C)  # the kind kept
                self._state = pipeline.run_factorization(C, self._options, checked=checked)
            else:
                self._state = pipeline.run_refactorization(self._state, C, self._options)
        except BaseException:
            self._no_factors = "failed"
            raise
        self._last_solve = threading.local()
        return self

    # ------------------------------------------------------------------ solves

    def solve(self, b, trans="N"):
        """Solve A x = b (``trans="N"``), Aᵀ x = b (``"T"``) or Aᴴ x = b (``"H"``).

        Parameters
        ----------
        b : array_like, shape (n,) or (n, k)
            Right-hand side(s); sparse b is densified.
        trans : {"N", "T", "H"}

        Returns
        -------
        x : ndarray, same shape as b, dtype promoted from the factorization's and b's

        Raises
        ------
        SingularMatrixError
            Refinement could not reach the requested backward error: the message
            says whether the matrix is singular (perturbed pivots), too
            ill-conditioned for its precision (with a condition number estimate),
            or neither.
        """
        if trans not in ("N", "T", "H"):
            raise InvalidInputError(f"trans must be 'N', 'T' or 'H', got {trans!r}")
        b2, vector = self._rhs(b)
        solver = self._live_solver
        if b2.shape[1] == 0:
            return np.empty(b2.shape, dtype=np.promote_types(self.dtype, b2.dtype))
        x, info = solver.solve(b2, trans)
        self._last_solve.info = info
        return x[:, 0] if vector else x

    __call__ = solve

    def _rhs(self, b):
        n = self.shape[0]
        if sp.issparse(b):
            b = b.toarray()
        b = np.asarray(b)
        check_rhs(b, n)
        vector = b.ndim == 1
        b2 = b.reshape(n, -1)
        if b2.dtype.kind in "biu":
            b2 = b2.astype(np.float64)
        return b2, vector

    # ------------------------------------------------------------------ views and by-products

    @property
    def perm(self):
        """Pivot order: ``perm[k]`` is the column of A eliminated k-th (by the factors
        that solve: the small path's own column order where it holds them)."""
        return self._live_solver.gathers["N"][1]

    # ------------------------------------------------------------------ Schur complement

    def _schur_solver(self, what):
        solver = self._supernodal()
        if self.analysis.schur is None:
            raise PastixError(
                f"{what} needs a Schur complement factorization: "
                "pastixpy.factorize(A, schur=indices)"
            )
        return solver

    def schur(self):
        """The dense Schur complement S = A₂₂ − A₂₁ A₁₁⁻¹ A₁₂ of ``factorize(A, schur=idx)``.

        Index 2 is ``idx`` (rows and columns of S in the order given), index 1 every
        other unknown. S comes out of the factorization (the Schur unknowns are its
        last block, updated by the others but not factored), not from ``len(idx)``
        solves, as PaStiX's ``pastix_getSchur`` and MUMPS's ``ICNTL(19)`` give it.

        Returns
        -------
        S : ndarray, shape (len(idx), len(idx)), A's dtype
            A new array each call. Symmetric (Hermitian) when A is.

        Warns
        -----
        PastixWarning
            Static pivoting perturbed pivots of A₁₁: S is that of a nearby matrix.

        Examples
        --------
        >>> import numpy as np
        >>> from pastixpy import factorize
        >>> from pastixpy.gallery import laplacian
        >>> A = laplacian((6, 6))
        >>> F = factorize(A, schur=[0, 35])
        >>> S = F.schur()
        >>> D = A.toarray(); i = np.arange(1, 35)
        >>> ref = D[np.ix_([0, 35], [0, 35])] - D[np.ix_([0, 35], i)] @ np.linalg.solve(
        ...     D[np.ix_(i, i)], D[np.ix_(i, [0, 35])])
        >>> bool(np.allclose(S, ref))
        True
        """
        solver = self._schur_solver("schur()")
        if solver.factors.perturbed.any():
            warnings.warn(
                "the Schur complement is that of a nearby matrix: "
                + solve_policy.perturbed_message(solver),
                PastixWarning,
                stacklevel=2,
            )
        return solve.schur_complement(solver)

    def schur_reduce(self, b):
        """The reduced right-hand side y = b₂ − A₂₁ A₁₁⁻¹ b₁ of a Schur complement
        factorization: the forward elimination (MUMPS's condensation phase) that
        leaves S x₂ = y for the Schur unknowns.

        Parameters
        ----------
        b : array_like, shape (n,) or (n, k)

        Returns
        -------
        y : ndarray, shape (len(idx),) or (len(idx), k), in the Schur unknowns' order

        Examples
        --------
        >>> import numpy as np
        >>> from pastixpy import factorize
        >>> from pastixpy.gallery import laplacian
        >>> A = laplacian((6, 6)); b = np.ones(36)
        >>> F = factorize(A, schur=[0, 35])
        >>> x2 = np.linalg.solve(F.schur(), F.schur_reduce(b))
        >>> x = F.schur_expand(b, x2)
        >>> bool(np.allclose(A @ x, b))
        True
        """
        solver = self._schur_solver("schur_reduce()")
        b2, vector = self._rhs(b)
        y = solve.schur_reduce(solver, b2)
        return y[:, 0] if vector else y

    def schur_expand(self, b, x_schur):
        """The solution from the Schur unknowns' values: x₂ = ``x_schur`` and
        x₁ = A₁₁⁻¹ (b₁ − A₁₂ x₂), the back substitution (MUMPS's expansion phase).

        Parameters
        ----------
        b : array_like, shape (n,) or (n, k)
            The right-hand side given to :meth:`schur_reduce`.
        x_schur : array_like, shape (len(idx),) or (len(idx), k)
            The Schur unknowns' values (a solution of S x₂ = y for A x = b).

        Returns
        -------
        x : ndarray, shape of b
        """
        solver = self._schur_solver("schur_expand()")
        b2, vector = self._rhs(b)
        size = self.analysis.schur.size
        x2 = np.asarray(x_schur)
        if (
            x2.ndim not in (1, 2)
            or x2.shape[0] != size
            or (x2.ndim == 1) != vector
            or (x2.ndim == 2 and x2.shape[1] != b2.shape[1])
        ):
            raise InvalidInputError(
                f"x_schur must have shape ({size},)"
                + ("" if vector else f" or ({size}, {b2.shape[1]})")
                + f" for this b: one value per Schur unknown and right-hand "
                f"side, got {x2.shape}"
            )
        x = solve.schur_expand(solver, b2, x2.reshape(size, -1))
        return x[:, 0] if vector else x

    # ------------------------------------------------------------------ as an operator:
    # F applies A⁻¹, so that scipy takes it where it takes a LinearOperator (M=F in gmres)

    def matvec(self, x):
        """A⁻¹ x (a solve), as a scipy LinearOperator's ``matvec``."""
        return self.solve(x)

    def rmatvec(self, x):
        """A⁻ᴴ x, as a LinearOperator's ``rmatvec``."""
        return self.solve(x, trans="H")

    def matmat(self, X):
        """A⁻¹ X for the columns of X."""
        return self.solve(X)

    def rmatmat(self, X):
        """A⁻ᴴ X for the columns of X."""
        return self.solve(X, trans="H")

    def aspreconditioner(self):
        """A scipy LinearOperator applying the factors' inverse without refinement, for
        ``M=`` in scipy's Krylov solvers (as PyAMG's ``aspreconditioner``).

        That is A⁻¹ to the factors' accuracy: about the compression tolerance for
        compressed factors, single precision for mixed precision's. A loose ``compress``
        tolerance makes a cheap preconditioner; ``F`` itself (refined solves) is
        accepted as ``M=`` too.
        """
        n = self.shape[0]
        solver = self._live_solver
        dtype = solver.dtype
        real_factors = not np.iscomplexobj(np.empty(0, dtype))

        def part(R, trans):
            return solver.apply_inverse(np.ascontiguousarray(R, dtype=dtype), trans)

        def apply(V, trans="N"):
            V = np.asarray(V)
            R = V.reshape(n, -1)
            with blas_threads(solver.threads):
                if np.iscomplexobj(R) and real_factors:
                    X = part(R.real, trans) + 1j * part(R.imag, trans)
                else:
                    X = part(R, trans)
            return X.reshape(V.shape)

        return sla.LinearOperator(
            (n, n),
            matvec=apply,
            rmatvec=lambda v: apply(v, "H"),
            matmat=apply,
            dtype=dtype,
        )

    def aslinearoperator(self):
        """A scipy LinearOperator applying A⁻¹ (``rmatvec`` applies A⁻ᴴ)."""
        n = self.shape[0]
        return sla.LinearOperator(
            (n, n),
            matvec=lambda v: self.solve(v),
            rmatvec=lambda v: self.solve(v, trans="H"),
            matmat=lambda V: self.solve(V),
            dtype=self.dtype,
        )

    def draw(self, ax=None, cmap="viridis"):
        """Draw the factor's block structure with matplotlib, compressed tiles coloured by
        rank (see :func:`pastixpy.compression.draw_blocks`); returns the Axes."""
        from .compression import draw_blocks

        return draw_blocks(self._factors, ax=ax, cmap=cmap)

    def slogdet(self):
        """Sign and natural log of ``|det(A)|``, like ``numpy.linalg.slogdet``.

        With perturbed pivots this is the determinant of the perturbed matrix
        (a warning says so). See :func:`pastixpy.determinants.slogdet`.
        """
        return determinants.slogdet(self._supernodal())

    def logdet(self):
        """log(det(A)) of a positive definite matrix.

        Raises
        ------
        PastixError
            The matrix is not (Hermitian) positive definite.
        """
        return determinants.logdet(self._supernodal())

    def inertia(self):
        """Numbers of positive, negative and zero eigenvalues (Sylvester's law on D).

        Defined for real symmetric and Hermitian factorizations. Without perturbed
        pivots it is exact. With perturbed pivots, D is that of a nearby matrix M;
        when iterative refinement shrinks the error of a solve with a known answer
        by at least :data:`~pastixpy.determinants.INERTIA_CONTRACTION` per step, A
        and M provably have the same inertia and the perturbed pivots count with
        their signs. Otherwise (A singular, or too ill-conditioned for the
        perturbation) they count as zero eigenvalues, and a warning says that the
        split is unreliable. See :func:`pastixpy.determinants.inertia`.
        """
        return determinants.inertia(self._supernodal())

    def inv_diag(self):
        """The diagonal of A⁻¹, from the factors by selected inversion.

        The Takahashi (Erisman-Tinney) recurrence on the factor's supernodal blocks
        computes the entries of A⁻¹ on the factor's pattern, from the last column
        block to the first, with dense products of the sizes the factorization itself
        used: it costs a small multiple of the factorization (docs/solve.md, "Selected
        inverse", has the measured ratios), not n solves. See :meth:`inv_selected` for
        what it computes and supports, and :mod:`pastixpy.selected_inverse`.

        Returns
        -------
        ndarray, shape (n,), of the factorization's dtype
            ``A⁻¹[i, i]`` in A's numbering (real values in a complex array for a
            Hermitian A).

        Raises
        ------
        PastixError
            The factorization is distributed (``comm=``), or leaves a Schur complement
            unfactored (``schur=``).

        Warns
        -----
        PastixWarning
            Pivots were perturbed, the factors are compressed or in single precision
            (``precision="mixed"``), or a symmetric kind factored a matrix that is not:
            the entries are those of a nearby matrix's inverse (the message says which).

        Examples
        --------
        >>> import numpy as np
        >>> from pastixpy import factorize
        >>> from pastixpy.gallery import laplacian
        >>> A = laplacian((20, 20))
        >>> d = factorize(A).inv_diag()
        >>> bool(np.allclose(d, np.diag(np.linalg.inv(A.toarray()))))
        True
        """
        return selected_inverse.inv_diag(self._supernodal())

    def inv_selected(self):
        """The entries of A⁻¹ on the pattern of the factor (selected inversion).

        Named after what it returns, a *selected* part of the *inverse* ("selected
        inversion" for PARDISO and Lin et al.'s SelInv, "entries of A⁻¹" for MUMPS),
        beside :meth:`inv_diag`; not ``inv()``, which would promise all n² entries.

        The pattern is the factor's block pattern (that of L + Lᵀ, L + U for LU, as
        stored: its supernodes make it a little larger) mapped back to A's numbering;
        it holds A's own pattern (Aᵀ's for LU with a row matching): what the gradient
        of log det A (A⁻ᵀ on A's pattern), the diagonal and nearest-neighbour
        covariances of a Gaussian field, or a Green's function's entries need. LLᵀ
        (LLᴴ), LDLᵀ and LDLᴴ (with their 2x2 pivots) and LU, in each dtype the kind
        exists in. The preprocessing is undone: A⁻¹ = D_c Pᵀ (P B Pᵀ)⁻¹ P D_r R,
        with P the ordering, D_r and D_c the scalings, R LU's row matching.

        The entries are those of the factored matrix's inverse, without the
        refinement solves get: to the working precision times A's condition number.
        Perturbed pivots (static pivoting), compressed factors and single-precision
        factors (``precision="mixed"``) make them those of a nearby matrix, and a
        PastixWarning says so.

        Returns
        -------
        scipy.sparse.csc_array, shape (n, n), of the factorization's dtype

        Raises
        ------
        PastixError
            The factorization is distributed (``comm=``), or leaves a Schur complement
            unfactored (``schur=``).

        Warns
        -----
        PastixWarning
            As for :meth:`inv_diag`.

        Examples
        --------
        >>> import numpy as np
        >>> from pastixpy import factorize
        >>> from pastixpy.gallery import laplacian
        >>> A = laplacian((6, 6))
        >>> Z = factorize(A).inv_selected()
        >>> i, j = A.nonzero()
        >>> bool(np.allclose(Z[i, j], np.linalg.inv(A.toarray())[i, j]))
        True
        """
        return selected_inverse.inv_selected(self._supernodal())

    def save(self, path):
        """Write this factorization to ``path`` (:func:`pastixpy.persist.save`): a
        versioned file that :func:`pastixpy.load` reads in a later process, which then
        solves and refactorizes without factoring again. Returns the path.

        Raises
        ------
        TypeError
            Something it holds does not pickle (a ``progress=`` lambda).
        """
        return persist.save(self, path)

    def condest(self):
        """Estimate of the 1-norm condition number κ₁(A) = ‖A‖₁ ‖A⁻¹‖₁.

        Hager and Higham's block estimator (scipy's ``onenormest``) on refined solves
        with these factors: a few solves with A and Aᴴ, no inverse formed. Refinement
        (as ``refine`` says) makes each solve apply A⁻¹ itself, also where pivots were
        perturbed or the factors are compressed or in single precision. See
        :func:`pastixpy.solve_policy.condest`.

        Returns
        -------
        float
            A lower bound of κ₁(A), in practice within a factor of 3 of it and most
            often equal; ``inf`` where a solve overflows (A singular).

        Examples
        --------
        >>> import scipy.sparse as sp
        >>> from pastixpy import factorize
        >>> F = factorize(sp.diags([1.0, 2.0, 4.0, 8.0, 16.0, 32.0]))
        >>> F.condest()
        32.0
        """
        return solve_policy.condest(self._live_solver)

    def __repr__(self):
        s = self._state.stats
        return (
            f"<Factorization {self.shape[0]}x{self.shape[1]} {self.dtype} kind={self.kind} "
            f"entries={s['factor_entries']} perturbed={s['perturbed_pivots']}>"
        )


def check_rhs(b, n):
    """The checks a solve makes on b, made before a factorization."""
    if b.dtype.kind not in "biufc":
        raise InvalidInputError(f"b has dtype {b.dtype}; it must be numeric")
    if b.ndim not in (1, 2) or b.shape[0] != n:
        raise InvalidInputError(
            f"b has shape {b.shape}; expected ({n},) or ({n}, k) for a {n}x{n} matrix"
        )
    if not np.isfinite(b).all():
        col = np.argwhere(~np.isfinite(b))[0]
        raise InvalidInputError(f"b has a NaN or Inf value at index {tuple(col.tolist())}")
