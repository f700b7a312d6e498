"""Keeping a factorization or an analysis in a file: :func:`save` and :func:`load`.

A file is a fixed header, then the object's pickle:

- the 8 bytes ``b"PASTIXPY"``;
- the file format's version (:data:`FORMAT_VERSION`), 4 bytes little-endian;
- the length of a JSON record, 4 bytes, then the record: what the file holds
  (``"Factorization"`` or ``"Analysis"``), the pastixpy version that wrote it, the
  payload's length and SHA-256;
- the payload: the object pickled (its factors and compressed tiles, pivots, scaling,
  permutations, analysis, options: see docs/solve.md, "Pickling and copies").

:func:`load` checks all of it before it unpickles anything: a file of another format
version, of another kind than asked, truncated or changed is a :class:`PersistError`
naming what is wrong, never a factorization that solves wrongly. As with any pickle,
load only files you trust: unpickling runs code the file names.
"""

import hashlib
import json
import os
import pickle
import struct
from pathlib import Path

from .errors import PersistError
from .version import __version__

#: The file format this pastixpy writes and reads. It changes whenever what is
#: pickled changes shape (a factor's storage, the options' record...).
FORMAT_VERSION = 1

MAGIC = b"PASTIXPY"

#: What a file may hold: the class names :func:`load` accepts.
KINDS = ("Factorization", "Analysis")


def save(obj, path):
    """Write ``obj`` (a Factorization or an Analysis) to ``path``, in one piece: the file
    is written under another name beside it and renamed, so that a reader never sees
    half of it. Returns the path.

    Raises
    ------
    TypeError
        ``obj`` is neither (a distributed factorization raises it too: its factors are
        spread over the ranks), or it holds something that does not pickle (a
        ``progress=`` lambda, say).
    """
    what = type(obj).__name__
    if what not in KINDS:
        raise TypeError(f"pastixpy saves a Factorization or an Analysis, not a {what}")
    payload = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    record = json.dumps(
        {
            "holds": what,
            "pastixpy": __version__,
            "payload_bytes": len(payload),
            "sha256": hashlib.sha256(payload).hexdigest(),
        }
    ).encode()
    path = Path(path)
    part = path.with_name(path.name + ".part")
    with open(part, "wb") as fh:
        fh.write(MAGIC)
        fh.write(struct.pack("<II", FORMAT_VERSION, len(record)))
        fh.write(record)
        fh.write(payload)
    os.replace(part, path)
    return path


def load(path, expect=None):
    """Read a Factorization or an Analysis that :func:`save` wrote.

    Parameters
    ----------
    path : str or path-like
    expect : {"Factorization", "Analysis"}, optional
        Raise unless the file holds this.

    Returns
    -------
    Factorization or Analysis
        As saved: a factorization solves (and refactorizes) without factoring again;
        an analysis is reused with ``factorize(A, analysis=...)``.

    Raises
    ------
    PersistError
        Not a pastixpy file, another format version, another kind than ``expect``,
        or a truncated or corrupted file.
    """
    path = Path(path)
    with open(path, "rb") as fh:
        data = fh.read()
    head = len(MAGIC) + 8
    if data[: len(MAGIC)] != MAGIC or len(data) < head:
        raise PersistError(f"{path} is not a file pastixpy saved (no pastixpy header)")
    version, size = struct.unpack("<II", data[len(MAGIC) : head])
    if version != FORMAT_VERSION:
        raise PersistError(
            f"{path} is in pastixpy's file format {version}, and this pastixpy reads format "
            f"{FORMAT_VERSION}: factorize the matrix again (or load it with the pastixpy "
            "version that saved it)"
        )
    try:
        record = json.loads(data[head : head + size])
        what, length, digest = record["holds"], record["payload_bytes"], record["sha256"]
    except (ValueError, KeyError, TypeError):
        raise PersistError(f"{path} is corrupted: its header record cannot be read") from None
    payload = data[head + size :]
    if len(payload) != length:
        raise PersistError(
            f"{path} is truncated or corrupted: {len(payload)} bytes of payload, the header "
            f"says {length}"
        )
    if hashlib.sha256(payload).hexdigest() != digest:
        raise PersistError(f"{path} is corrupted: its payload does not match its checksum")
    if expect is not None and what != expect:
        raise PersistError(f"{path} holds a {what}, not a {expect}")
    obj = pickle.loads(payload)
    if type(obj).__name__ != what:
        raise PersistError(f"{path} says it holds a {what} but holds a {type(obj).__name__}")
    return obj
