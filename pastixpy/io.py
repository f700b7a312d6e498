"""Reading and writing matrices: Matrix Market (also gzipped) and Harwell-Boeing.

Matrix Market goes through scipy.io. Harwell-Boeing is read here because
scipy's reader handles only real unsymmetric files; this one reads assembled
real, complex and pattern matrices, unsymmetric, symmetric, Hermitian and
skew-symmetric (``.rua``, ``.rsa``, ``.cua``, ``.csa``, ``.cha``, ``.psa``...).
"""

import gzip
import io
import os
import re
import stat
import tempfile
from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse as sp

from .errors import InvalidInputError, OutputError

HB_SUFFIXES = (
    ".rua",
    ".rsa",
    ".rss",
    ".rza",
    ".cua",
    ".csa",
    ".cha",
    ".cza",
    ".pua",
    ".psa",
    ".hb",
    ".rb",
)


def read_matrix(path):
    """Read a sparse matrix from a Matrix Market or Harwell-Boeing file.

    Parameters
    ----------
    path : str or Path
        ``.mtx`` or ``.mtx.gz`` (Matrix Market), or a Harwell-Boeing file
        (``.rua``, ``.rsa``, ``.cua``, ``.csa``, ``.cha``, ``.psa``, ``.hb``, ``.rb``).

    Returns
    -------
    scipy.sparse.csc_array

    Raises
    ------
    InvalidInputError
        The file is missing or cannot be parsed.
    """
    path = _input_file(path)
    try:
        if path.name.lower().endswith(HB_SUFFIXES):
            return read_harwell_boeing(path)
        A = scipy.io.mmread(str(path))
    except InvalidInputError:
        raise
    except Exception as exc:
        raise InvalidInputError(f"cannot read {path}: {exc}") from exc
    return sp.csc_array(A)


def read_dense(path):
    """Read right-hand sides (dense or sparse Matrix Market) as a 2-D ndarray."""
    path = _input_file(path, "a right-hand-side file")
    try:
        B = scipy.io.mmread(str(path))
    except Exception as exc:
        raise InvalidInputError(f"cannot read {path}: {exc}") from exc
    return B.toarray() if sp.issparse(B) else np.atleast_2d(np.asarray(B).T).T


def _input_file(path, what="a matrix file"):
    """``path`` as a Path, or an error saying why it cannot be read as a file."""
    path = Path(path)
    if path.is_dir():
        raise InvalidInputError(f"{path} is a directory, not {what}")
    if not path.exists():
        raise InvalidInputError(f"no such file: {path}")
    if not os.access(path, os.R_OK):
        raise InvalidInputError(f"cannot read {path}: permission denied")
    return path


def check_writable(path):
    """Raise :class:`OutputError` unless a file can be written at ``path``.

    Made before the work whose result goes there, so that a typo in an output path
    costs nothing. A path that does not exist is created and removed again; an
    existing file is opened for appending, which leaves it unchanged. What only a
    write can tell (a full disk, ``/dev/full``) is left to :func:`write_dense`.
    """
    path = Path(path)
    if path.is_dir():
        raise OutputError(f"cannot write {path}: it is a directory; give a file name in it")
    parent = path.parent
    if not parent.exists():
        raise OutputError(f"cannot write {path}: directory {parent} does not exist")
    if not parent.is_dir():
        raise OutputError(f"cannot write {path}: {parent} is not a directory")
    existed = path.exists()
    try:
        with open(path, "ab"):
            pass
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from exc
    if not existed:
        try:
            path.unlink()
        except OSError:
            pass


def write_dense(path, X):
    """Write an (n,) or (n, k) array as a dense Matrix Market file at exactly ``path``.

    Gzip-compressed when ``path`` ends in ``.gz``. A regular file is written to a
    temporary file beside it and renamed into place, so that a failed write leaves
    any earlier file whole; other paths (``/dev/stdout``, a pipe) are written
    directly.

    Raises
    ------
    OutputError
        The file could not be written completely (the reason is given). scipy's
        ``mmwrite`` is not used on the path itself: it appends ``.mtx`` to other
        names and, in scipy 1.17, returns without error when it cannot write.
    """
    X = np.asarray(X)
    buf = io.BytesIO()
    scipy.io.mmwrite(buf, X.reshape(X.shape[0], -1), precision=17)
    data = buf.getvalue()
    path = Path(path)
    if path.name.lower().endswith(".gz"):
        data = gzip.compress(data)
    try:
        regular = not path.exists() or stat.S_ISREG(path.stat().st_mode)
        if not regular:
            with open(path, "wb") as f:
                f.write(data)
            return
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            if path.exists():
                os.chmod(tmp, stat.S_IMODE(path.stat().st_mode))
            else:
                umask = os.umask(0)
                os.umask(umask)
                os.chmod(tmp, 0o666 & ~umask)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from exc


def _fortran_format(fmt):
    """(count per line, field width) of a Fortran edit descriptor such as ``(1P,4E20.12)``."""
    m = re.search(r"(\d*)\s*[IEDFG]\s*(\d+)", fmt.upper().replace("1P,", "").replace("1P", ""))
    if m is None:
        raise InvalidInputError(f"unsupported Fortran format {fmt.strip()!r}")
    return int(m.group(1) or 1), int(m.group(2))


def _fields(lines, fmt, count, kind):
    """The first ``count`` fields of ``lines``, parsed as int or float.

    A line holding exactly the values it should (``per_line``, or what is left), each
    separated by blanks, is split at the blanks: some writers use narrower fields than
    their format says (scipy's ``hb_write`` writes 24 characters under ``E25.16``), and
    a number never holds a blank. Other lines are cut into fixed-width fields, as
    Fortran reads them: packed fields (``-1.0E+00-2.0E+00``) have no blank between them.
    """
    per_line, width = _fortran_format(fmt)
    out = []
    for line in lines:
        line = line.rstrip("\n")
        tokens = line.split()
        if len(tokens) == min(per_line, count - len(out)):
            out.extend(tokens)
        else:
            for k in range(per_line):
                field = line[k * width : (k + 1) * width].strip()
                if field:
                    out.append(field)
        if len(out) >= count:
            break
    if len(out) < count:
        raise InvalidInputError(f"Harwell-Boeing file ends early: {len(out)} of {count} values")
    out = out[:count]
    if kind == "int":
        return np.array(out, dtype=np.int64)
    # Fortran writes D exponents, and may drop the letter before a signed exponent.
    fixed = [re.sub(r"(?<=\d)([+-]\d+)$", r"E\1", f.upper().replace("D", "E")) for f in out]
    return np.array(fixed, dtype=np.float64)


def read_harwell_boeing(path):
    """Read an assembled Harwell-Boeing matrix (any value type and symmetry).

    Symmetric, Hermitian and skew-symmetric files store one triangle; the
    other is filled in. Pattern-only files get values of one.
    """
    with open(path) as f:
        lines = f.readlines()
    if len(lines) < 4:
        raise InvalidInputError(f"{path} is too short for a Harwell-Boeing header")
    counts = [int(x) for x in lines[1].split()]
    ptrcrd, indcrd, valcrd = counts[1], counts[2], counts[3]
    rhscrd = counts[4] if len(counts) > 4 else 0
    mxtype = lines[2][:3].upper()
    nrow, ncol, nnz = (int(x) for x in lines[2][3:].split()[:3])
    if len(mxtype) != 3 or mxtype[0] not in "RCP" or mxtype[1] not in "USHZR" or mxtype[2] != "A":
        raise InvalidInputError(
            f"{path}: matrix type {mxtype!r} is not an assembled Harwell-Boeing matrix "
            "(R/C/P, U/S/H/Z, A)"
        )
    fmt = lines[3]
    ptrfmt, indfmt, valfmt = fmt[0:16], fmt[16:32], fmt[32:52]
    start = 5 if rhscrd > 0 else 4
    ptr_lines = lines[start : start + ptrcrd]
    ind_lines = lines[start + ptrcrd : start + ptrcrd + indcrd]
    val_lines = lines[start + ptrcrd + indcrd : start + ptrcrd + indcrd + valcrd]
    indptr = _fields(ptr_lines, ptrfmt, ncol + 1, "int") - 1
    indices = _fields(ind_lines, indfmt, nnz, "int") - 1
    if mxtype[0] == "P":
        data = np.ones(nnz)
    elif mxtype[0] == "C":
        v = _fields(val_lines, valfmt, 2 * nnz, "float")
        data = v[0::2] + 1j * v[1::2]
    else:
        data = _fields(val_lines, valfmt, nnz, "float")
    if indptr[0] != 0 or indptr[-1] != nnz or (np.diff(indptr) < 0).any():
        raise InvalidInputError(f"{path}: inconsistent column pointers")
    if nnz and (indices.min() < 0 or indices.max() >= nrow):
        raise InvalidInputError(f"{path}: a row index is out of range 1..{nrow}")
    A = sp.csc_array((data, indices, indptr), shape=(nrow, ncol))
    if mxtype[1] in "SHZ":
        strict = sp.tril(A, k=-1) + sp.triu(A, k=1)
        other = {"S": strict.T, "H": strict.conj().T, "Z": -strict.T}[mxtype[1]]
        A = A + other
    return sp.csc_array(A)
