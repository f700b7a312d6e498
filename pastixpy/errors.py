"""The exception tree of pastixpy: every error the package raises on purpose."""

__all__ = [
    "PastixError",
    "InvalidInputError",
    "OptionError",
    "SingularMatrixError",
    "NotPositiveDefiniteError",
    "PatternMismatchError",
    "OutputError",
    "PersistError",
    "OutOfMemoryError",
    "MixedPrecisionError",
    "PastixWarning",
    "StagnationWarning",
    "MemoryBudgetWarning",
]


class PastixError(Exception):
    """Root of every error pastixpy raises on purpose."""


class PastixWarning(UserWarning):
    """Results that hold but deserve attention (perturbed pivots, unreliable inertia, a
    kind forced on a matrix it does not fit, mixed precision falling back to double)."""


class StagnationWarning(PastixWarning):
    """An iterative solve stopped short of its tolerance (``info > 0``): its convergence
    stagnated (at the recent reduction per iteration the tolerance was out of reach within
    ``maxiter`` iterations), it ran out of iterations or of time (``max_seconds``), or it
    broke down. The message says what it saw (iterations, residual, recent reduction per
    iteration), what that rate projects, and what to try; the solver's
    ``stats["solve"]["stop"]`` says which."""


class MemoryBudgetWarning(PastixWarning):
    """``factorize(A, memory_limit=...)`` chose another configuration than the one asked
    for (mixed precision, block low-rank compression or its minimal-memory strategy),
    because the one asked for does not fit: the message says which was chosen and
    what each needs; ``stats["memory_budget"]`` holds the figures."""


class InvalidInputError(PastixError, ValueError):
    """An argument is malformed: wrong shape, dtype, values, or not a permutation."""


class OptionError(PastixError, ValueError):
    """An option name or its parameters are not recognized."""


class OutputError(PastixError, OSError):
    """A result could not be written where it was asked for (the reason is given)."""


class PersistError(PastixError, ValueError):
    """A file :func:`pastixpy.load` cannot give back as it was saved: not a pastixpy
    file, another file format version, another kind than asked, truncated or
    corrupted."""


class OutOfMemoryError(PastixError, MemoryError):
    """A factorization or a solve needs more memory than this process may take.

    Raised before anything is allocated for the factors, from the forecast of the
    strategy used (:mod:`pastixpy.numeric.forecast`), or where an allocation still
    fails during a factorization or a solve (numpy's or the kernels'); the message
    says what is needed, what is available under which limit, and what to try.

    Attributes
    ----------
    needed, available : int
        Bytes the allocation needs, and bytes the process may still take.
    """

    def __init__(self, message, needed, available):
        super().__init__(message)
        self.needed = int(needed)
        self.available = int(available)

    def __reduce__(self):  # pickled whole (a distributed run raises it on every rank)
        return type(self), (str(self), self.needed, self.available)


class MixedPrecisionError(PastixError):
    """Single-precision factors could not reach the accuracy asked for, and
    ``precision=("mixed", {"fallback": False})`` refused to refactor in double."""


class PatternMismatchError(InvalidInputError):
    """A matrix does not have the sparsity pattern an analysis was made for."""


class SingularMatrixError(PastixError, RuntimeError):
    """The matrix is structurally or numerically singular.

    Also a ``RuntimeError``, which scipy's ``splu`` and ``factorized`` raise for a
    singular matrix: code written for them catches it unchanged.

    Attributes
    ----------
    columns : list of int
        Columns (original numbering) found to be dependent, when known.
    """

    def __init__(self, message, columns=()):
        super().__init__(message)
        self.columns = list(columns)

    def __reduce__(self):
        return type(self), (str(self), self.columns)


class NotPositiveDefiniteError(PastixError):
    """A Cholesky (LLᵀ) factorization met a pivot that is not positive.

    Attributes
    ----------
    column : int
        The column, in the original numbering, whose pivot failed.
    """

    def __init__(self, message, column):
        super().__init__(message)
        self.column = int(column)

    def __reduce__(self):
        return type(self), (str(self), self.column)
