"""Reading matrices from files: Matrix Market (also gzipped) and Harwell-Boeing."""

from pathlib import Path

import scipy.io
import scipy.sparse as sp

from .errors import InvalidInputError


def read_matrix(path):
    """Read a sparse matrix from a Matrix Market or Harwell-Boeing file.

    Parameters
    ----------
    path : str or Path
        ``.mtx`` or ``.mtx.gz`` (Matrix Market, scipy.io.mmread), or ``.rua``,
        ``.rsa``, ``.hb`` (real Harwell-Boeing, scipy.io.hb_read).

    Returns
    -------
    scipy.sparse.csc_array
    """
    path = Path(path)
    if not path.is_file():
        raise InvalidInputError(f"no such file: {path}")
    name = path.name.lower()
    try:
        if name.endswith((".rua", ".rsa", ".hb", ".rb")):
            A = scipy.io.hb_read(str(path))
        else:
            A = scipy.io.mmread(str(path))
    except Exception as exc:
        raise InvalidInputError(f"cannot read {path}: {exc}") from exc
    if not sp.issparse(A):
        A = sp.csc_array(A)
    return sp.csc_array(A)
