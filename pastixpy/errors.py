"""The exception tree of pastixpy: every error the package raises on purpose."""

__all__ = [
    "PastixError",
    "InvalidInputError",
    "OptionError",
    "SingularMatrixError",
    "NotPositiveDefiniteError",
    "PatternMismatchError",
]


class PastixError(Exception):
    """Root of every error pastixpy raises on purpose."""


class InvalidInputError(PastixError, ValueError):
    """An argument is malformed: wrong shape, dtype, values, or not a permutation."""


class OptionError(PastixError, ValueError):
    """An option name or its parameters are not recognized."""


class PatternMismatchError(InvalidInputError):
    """A matrix does not have the sparsity pattern an analysis was made for."""


class SingularMatrixError(PastixError):
    """The matrix is structurally or numerically singular.

    Attributes
    ----------
    columns : list of int
        Columns (original numbering) found to be dependent, when known.
    """

    def __init__(self, message, columns=()):
        super().__init__(message)
        self.columns = list(columns)


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
