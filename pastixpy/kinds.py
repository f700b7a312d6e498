"""The factorization kinds (LLᵀ, LDLᵀ, LDLᴴ, LU) and everything that follows from one, in
one place: which matrices admit it, what it stores, how its sweeps run.

The kernels never see a kind's name: its code selects their parameters once
(``kind_ops`` in ``csrc/numeric/structure.pxi``), and :meth:`Kind.sweeps` says which
panels and ops the triangular solves use. Everywhere else, code asks a :class:`Kind`
for a property (``definite``, ``two_factors``...) rather than comparing names.
"""

import warnings
from dataclasses import dataclass

import numpy as np

from .errors import PastixWarning

__all__ = ["KINDS", "Kind", "Sweep", "admissible", "auto_kind", "check_kind", "indefinite_kind"]


@dataclass(frozen=True)
class Sweep:
    """One triangular sweep: the factor holding the diagonal blocks (``diag``) and the one
    holding the off-diagonal parts (``off``), "L" or "U" (Uᵀ's panels); the diagonal
    block's ``uplo``, ``trans`` and ``unit`` as for BLAS's trsm; the off-diagonal part's
    op in the backward sweep (``offtrans``, 'T' or 'C'); the local pivots to apply
    (``lperm``, empty for none)."""

    diag: str
    off: str
    uplo: str
    trans: str
    unit: bool
    offtrans: str
    lperm: np.ndarray


@dataclass(frozen=True)
class Kind:
    """A factorization kind.

    Attributes
    ----------
    name : str
        ``"llt"``, ``"ldlt"``, ``"ldlh"`` or ``"lu"``.
    formula : str
        What it computes, for messages and docs.
    symmetric : bool
        It factors a symmetric (or Hermitian) matrix from its lower triangle.
    definite : bool
        It exists only for (Hermitian) positive definite matrices: LLᵀ.
    hermitian : bool
        Its transposes are conjugate on complex matrices (LLᴴ, LDLᴴ).
    two_factors : bool
        U is stored beside L (Uᵀ's panels): LU.
    block_diagonal : bool
        A block diagonal D of 1x1 and 2x2 pivots sits between L and Lᵀ (LDLᵀ, LDLᴴ).
    local_pivots : bool
        Rows (LU) or rows and columns (LDLᵀ) are interchanged inside diagonal blocks.
    split : (int, int)
        Panel widths (min, max) the analysis cuts wide supernodes into. LLᵀ and LU gain
        from wide panels: gemm packs its operands on every call, so a wider target packs
        less per flop. Bunch-Kaufman factors a panel column by column, which narrower
        panels keep cheaper.
    """

    name: str
    formula: str
    symmetric: bool
    definite: bool
    hermitian: bool
    two_factors: bool
    block_diagonal: bool
    local_pivots: bool
    split: tuple

    def conj(self, dtype):
        """Whether transposes are conjugate for factors of this dtype."""
        return self.hermitian and np.dtype(dtype).kind == "c"

    def sweeps(self, dtype, lperm, trans="N"):
        """The forward and backward :class:`Sweep` solving op(P B Pᵀ) X = R.

        ``trans`` is "N", or "T" for LU's transposed solve (the symmetric kinds solve
        Aᵀ and Aᴴ through A, see :class:`pastixpy.solve.Solver`).
        """
        tr = "C" if self.conj(dtype) else "T"
        none = np.empty(0, dtype=np.int64)
        pivots = lperm if self.local_pivots else none
        if self.symmetric:
            unit = self.block_diagonal  # LDLᵀ's L has a unit diagonal, LLᵀ's does not
            forward = Sweep("L", "L", "L", "N", unit, "T", pivots)
            return forward, Sweep("L", "L", "L", tr, unit, tr, pivots)
        # LU: L unit lower, then U (its panels hold Uᵀ; U's diagonal is in L's panels).
        lower = Sweep("L", "L", "L", trans, True, "T", pivots)
        upper = Sweep("L", "U", "U", trans, False, "T", none)
        return (lower, upper) if trans == "N" else (upper, lower)


KINDS = {
    "llt": Kind("llt", "A = L Lᵀ (L Lᴴ)", True, True, True, False, False, False, (256, 512)),
    "ldlt": Kind("ldlt", "A = L D Lᵀ", True, False, False, False, True, True, (128, 256)),
    "ldlh": Kind("ldlh", "A = L D Lᴴ", True, False, True, False, True, True, (128, 256)),
    "lu": Kind("lu", "A = L U", False, False, False, True, False, True, (256, 512)),
}

#: Which kinds each value symmetry admits, by (symmetry, complex values). Real
#: "symmetric" is also Hermitian; a complex Hermitian matrix whose values are all real
#: is also complex symmetric (see :func:`admissible`).
ADMISSIBLE = {
    ("symmetric", False): {"llt", "ldlt", "ldlh", "lu"},
    ("symmetric", True): {"ldlt", "lu"},
    ("hermitian", True): {"llt", "ldlh", "lu"},
    ("general", False): {"lu"},
    ("general", True): {"lu"},
}


def admissible(C, symmetry):
    """The kind names that fit canonical C, whose value symmetry is ``symmetry``."""
    complex_ = np.iscomplexobj(C.data)
    allowed = ADMISSIBLE[(symmetry, complex_)]
    if complex_ and symmetry == "hermitian" and not C.data.imag.any():
        # Real values in a complex array: Hermitian and complex symmetric at once.
        allowed = allowed | ADMISSIBLE[("symmetric", True)]
    return allowed


def check_kind(kind, C, symmetry, where, stacklevel=3):
    """Whether ``kind`` (a :class:`Kind`) fits canonical C exactly, given C's :class:`Symmetry`.

    LU fits every matrix. A symmetric kind fits a matrix symmetric (Hermitian) as it
    asks, exactly or up to rounding (then its lower triangle is factored and the
    solves refine against A itself: not exact). Forced on a matrix that is not, it is
    accepted with a warning: the matrix its lower triangle defines is factored and
    refinement against A must make up the difference (CHOLMOD and MUMPS also read one
    triangle when told a matrix is symmetric). Returns whether the factored matrix is
    A itself.
    """
    allowed = admissible(C, symmetry.kind)
    if kind.name in allowed:
        return symmetry.exact or kind.two_factors
    what = "Hermitian" if kind.hermitian and np.iscomplexobj(C.data) else "symmetric"
    warnings.warn(
        f"{where}: kind={kind.name!r} on a matrix that is not {what} ("
        + (
            f"relative asymmetry {symmetry.asymmetry:.1e}"
            if symmetry.asymmetry
            else f"it is {symmetry.kind}"
        )
        + f"): the {what} matrix of its lower triangle is factored, and refinement against "
        "A itself must make up the difference; where it cannot, solves raise "
        "SingularMatrixError. kind='lu' factors A itself",
        PastixWarning,
        stacklevel=stacklevel,
    )
    return False


def auto_kind(symmetry, complex_):
    """``kind="auto"``'s first choice: LLᵀ for symmetric or Hermitian matrices (it falls
    back to :func:`indefinite_kind` on a pivot that is not positive), LDLᵀ for complex
    symmetric ones, LU otherwise: a :class:`Kind`."""
    return KINDS[{"hermitian": "llt", "general": "lu"}.get(symmetry, "ldlt" if complex_ else "llt")]


def indefinite_kind(C):
    """The :class:`Kind` ``"auto"`` falls back to when a symmetric matrix is not positive
    definite."""
    return KINDS["ldlh" if np.iscomplexobj(C.data) else "ldlt"]
