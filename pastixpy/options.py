"""One grammar for options: ``'name'`` or ``('name', {kwargs})``, parsed in one place;
factorize's options as one validated record."""

import functools
import inspect
from dataclasses import MISSING, dataclass, field, fields
from numbers import Integral, Real

import numpy as np

from .compression import parse_compress
from .errors import InvalidInputError, OptionError
from .kinds import KINDS
from .memory import parse_bytes
from .schur import check_schur


def parse_option(value, choices, argname):
    """Split an option into its name and keyword arguments, and validate both.

    Parameters
    ----------
    value : str or tuple of (str, dict)
        ``'name'`` or ``('name', {kwargs})``.
    choices : dict
        Maps each accepted name to the set of keyword arguments it accepts.
    argname : str
        Name of the argument, used in error messages.

    Returns
    -------
    name : str
    kwargs : dict

    Examples
    --------
    >>> parse_option(("metis", {"seed": 3}), {"metis": {"seed"}}, "ordering")
    ('metis', {'seed': 3})
    """
    if isinstance(value, str):
        name, kwargs = value, {}
    elif (
        isinstance(value, tuple)
        and len(value) == 2
        and isinstance(value[0], str)
        and isinstance(value[1], dict)
    ):
        name, kwargs = value[0], dict(value[1])
    else:
        raise OptionError(
            f"{argname}={value!r} is not understood: give a name or a (name, {{kwargs}}) pair, "
            f"with name one of {sorted(choices)}"
        )
    if name not in choices:
        raise OptionError(f"unknown {argname} {name!r}: choose one of {sorted(choices)}")
    unknown = set(kwargs) - set(choices[name])
    if unknown:
        allowed = sorted(choices[name]) or "none"
        raise OptionError(
            f"{argname} {name!r} got unknown parameter(s) {sorted(unknown)}; accepted: {allowed}"
        )
    return name, kwargs


# ---------------------------------------------------------------------------- factorize's options


#: The options' names and the parameters each name takes.
KIND_CHOICES = {"auto": set(), "llt": set(), "ldlt": set(), "ldlh": set(), "lu": set()}
REFINE_CHOICES = {
    "auto": {"tol", "maxiter"},
    "ir": {"tol", "maxiter"},
    "gmres": {"tol", "maxiter"},
    "cg": {"tol", "maxiter"},
    "none": set(),
}
SWITCH_CHOICES = {"auto": set(), "on": set(), "off": set()}
PRECISION_CHOICES = {
    "auto": set(),
    "double": set(),
    "single": set(),
    "mixed": {"fallback"},
}


@dataclass(frozen=True)
class Options:
    """The options of one factorization, validated once (see :func:`pastixpy.factorize`).

    Attributes
    ----------
    kind : Kind or None
        As asked; None for ``"auto"``.
    ordering : str, tuple or array
        Passed to the analysis, which validates it.
    refine : (str, dict)
    matching, scaling : bool
    pivot_tol : float or None
    threads : int or None
    progress : callable or None
    precision : str
        ``"auto"`` (the matrix's own), ``"double"``, ``"single"`` or ``"mixed"``.
    fallback : bool
        Mixed precision: refactor in double when single-precision factors cannot reach
        the requested accuracy (else raise).
    compress : Compression or None
        Block low-rank compression of the factors (see :mod:`pastixpy.compression`).
    comm : communicator or None
        The ranks a distributed factorization spreads over (:mod:`pastixpy.distributed`).
    condest : bool
        Put the condition number estimate in the statistics (``stats["condest"]``).
    schur : ndarray of int64 or None
        The unknowns whose Schur complement the factorization leaves (checked against
        the matrix's size by the pipeline; see :mod:`pastixpy.schur`).
    memory_limit : int, "auto" or None
        The memory budget in bytes (``"auto"``: what the process may take), or None (no
        budget): see :mod:`pastixpy.budget`.
    fixed : frozenset
        With a memory budget, what the user fixed that it may not change:
        ``"compress"`` (``compress=`` given, ``False`` included: never compress) and
        ``"strategy"`` (compression's strategy named). A precision other than
        ``"auto"`` is fixed too.
    preprocess_asked : bool
        ``matching="on"`` or ``scaling="on"`` was given (not left to ``"auto"``): the
        supernodal pipeline, whose preprocessing that is, factors even a small
        unsymmetric matrix (see :func:`pastixpy.pipeline.run_factorization`).
    """

    kind: object = None
    ordering: object = "auto"
    refine: tuple = ("auto", {})
    matching: bool = True
    scaling: bool = True
    pivot_tol: float | None = None
    threads: int | None = None
    progress: object = None
    precision: str = "auto"
    fallback: bool = True
    compress: object = None
    comm: object = None
    condest: bool = False
    schur: np.ndarray | None = field(default=None, compare=False)
    memory_limit: object = None
    fixed: frozenset = frozenset()
    preprocess_asked: bool = False

    @classmethod
    def parse(
        cls,
        kind="auto",
        ordering="auto",
        refine="auto",
        matching="auto",
        scaling="auto",
        pivot_tol=None,
        threads=None,
        progress=None,
        precision="auto",
        compress=None,
        comm=None,
        condest=False,
        schur=None,
        memory_limit=None,
    ):
        """Validate :func:`pastixpy.factorize`'s keyword arguments into Options."""
        kind, _ = parse_option(kind, KIND_CHOICES, "kind")
        kind = None if kind == "auto" else KINDS[kind]
        if pivot_tol is not None and not (isinstance(pivot_tol, Real) and pivot_tol > 0):
            raise InvalidInputError(f"pivot_tol must be positive, got {pivot_tol!r}")
        if threads is not None and (
            isinstance(threads, bool) or not isinstance(threads, Integral) or threads < 1
        ):
            raise InvalidInputError(f"threads must be a positive integer, got {threads!r}")
        if progress is not None and not callable(progress):
            raise InvalidInputError(f"progress must be callable, got {progress!r}")
        method, kw = parse_option(refine, REFINE_CHOICES, "refine")
        if "tol" in kw and not (isinstance(kw["tol"], Real) and kw["tol"] > 0):
            raise OptionError(f"refine's tol must be a positive number, got {kw['tol']!r}")
        if "maxiter" in kw and not (
            isinstance(kw["maxiter"], Integral)
            and not isinstance(kw["maxiter"], bool)
            and kw["maxiter"] >= 1
        ):
            # 0 would leave the Krylov method no iteration at all: that is refine="none".
            raise OptionError(
                f"refine's maxiter must be an integer >= 1, got {kw['maxiter']!r} "
                "(refine='none' for no refinement)"
            )
        name, pkw = parse_option(precision, PRECISION_CHOICES, "precision")
        fallback = pkw.get("fallback", True)
        if not isinstance(fallback, bool):
            raise OptionError(f"precision 'mixed' takes fallback=True or False, got {fallback!r}")
        fixed = frozenset()
        if memory_limit is not None:
            if not (isinstance(memory_limit, str) and memory_limit == "auto"):
                memory_limit = parse_bytes(memory_limit, "memory_limit")
            parse_compress(compress)  # valid before it is read
            fixed = _fixed_by_user(compress)
        compress = parse_compress(compress)
        if comm is not None:
            if not all(hasattr(comm, a) for a in ("Get_rank", "Get_size", "bcast", "Recv")):
                raise InvalidInputError(
                    f"comm must be an MPI communicator (mpi4py's MPI.COMM_WORLD), got {comm!r}"
                )
            if comm.Get_size() == 1:
                comm = None  # one rank: the one-process factorization
            elif compress is not None and compress.strategy == "minmem":
                raise OptionError(
                    "compress strategy 'minmem' gathers a cblk's updates from every cblk "
                    "facing it and cannot take them from other ranks: use 'jit' with comm="
                )
            elif memory_limit is not None:
                raise OptionError(
                    "memory_limit= chooses the configuration of one process's "
                    "factorization and cannot be used with comm=: each rank checks its own "
                    "share against what it may take (leave memory_limit out)"
                )
        matching = parse_option(matching, SWITCH_CHOICES, "matching")[0]
        scaling = parse_option(scaling, SWITCH_CHOICES, "scaling")[0]
        return cls(
            kind=kind,
            ordering=ordering,
            refine=(method, kw),
            matching=matching != "off",
            scaling=scaling != "off",
            pivot_tol=None if pivot_tol is None else float(pivot_tol),
            threads=None if threads is None else int(threads),
            progress=progress,
            precision=name,
            fallback=fallback,
            compress=compress,
            comm=comm,
            condest=_switch(condest, "condest"),
            schur=check_schur(schur),
            memory_limit=memory_limit,
            fixed=fixed,
            preprocess_asked="on" in (matching, scaling),
        )

    @classmethod
    def from_keywords(cls, caller, options):
        """:meth:`parse` of a ``**options`` dict a function passes on to
        :func:`pastixpy.factorize`: an unknown keyword is a ``TypeError`` naming
        ``caller`` (the user's function, not this method) and the keywords it takes.
        Parsed once per distinct call, as :meth:`of_call` keeps them (spsolve's usual
        call, with no options, gets the same instance every time)."""
        known = _keywords()
        unknown = sorted(set(options) - set(known))
        if unknown:
            raise TypeError(
                f"{caller}() got an unexpected keyword argument {unknown[0]!r}; "
                f"factorize's options are: {', '.join(known)}"
            )
        return cls.of_call(**options)

    @property
    def auto_kind(self):
        return self.kind is None

    @functools.cached_property
    def changed(self):
        """The names of the fields that differ from their defaults (``Options()``'s),
        found once per instance (Options are frozen): what a path that holds only for
        the defaults, but for some options, asks (:func:`pastixpy.simplicial.applies`)."""
        out = []
        for f in fields(self):
            value = getattr(self, f.name)
            default = f.default if f.default is not MISSING else f.default_factory()
            if value is not default and (type(value) is not type(default) or value != default):
                out.append(f.name)
        return frozenset(out)

    @classmethod
    def of_call(cls, **arguments):
        """:meth:`parse` of a call's keyword arguments, the same instance for the same
        arguments where all of them are hashable and none is a callback or a
        communicator (a handle on outside state): a handle made in a loop pays for the
        validation once."""
        if arguments.get("progress") is not None or arguments.get("comm") is not None:
            return cls.parse(**arguments)
        # Each value's type in the key: 1, 1.0 and True are equal and hash alike, and
        # threads=True is refused where threads=1 is not.
        key = tuple((name, type(value), value) for name, value in arguments.items())
        try:
            hash(key)
        except TypeError:  # an array (ordering, schur) or a dict of parameters
            return cls.parse(**arguments)
        return _parsed(key)

    def factor_dtype(self, dtype):
        """The factors' dtype for a matrix of ``dtype`` under :attr:`precision`."""
        dtype = np.dtype(dtype)
        complex_ = dtype.kind == "c"
        if self.precision in ("single", "mixed"):
            return np.dtype(np.complex64 if complex_ else np.float32)
        if self.precision == "double":
            return np.dtype(np.complex128 if complex_ else np.float64)
        return dtype

    def working_dtype(self, dtype):
        """The dtype of the matrix, residuals and solutions: double for "double" and
        "mixed", the matrix's own otherwise."""
        dtype = np.dtype(dtype)
        if self.precision in ("double", "mixed"):
            return np.dtype(np.complex128 if dtype.kind == "c" else np.float64)
        return dtype


def _fixed_by_user(compress):
    """What a ``compress=`` argument fixes for the memory budget (:attr:`Options.fixed`):
    nothing for None, ``"compress"`` for anything else (``False``: no compression), and
    ``"strategy"`` where it names the strategy."""
    if compress is None:
        return frozenset()
    named = isinstance(compress, tuple) and len(compress) == 2 and "strategy" in compress[1]
    return frozenset({"compress", "strategy"} if named else {"compress"})


def _switch(value, argname):
    """A bool option, checked (numpy's bools too; not 0/1 nor strings)."""
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidInputError(f"{argname} must be True or False, got {value!r}")
    return bool(value)


@functools.cache
def _keywords():
    """:meth:`Options.parse`'s keyword names, in order (read once: ``inspect`` is slow)."""
    return tuple(inspect.signature(Options.parse).parameters)


@functools.lru_cache(maxsize=64)
def _parsed(key):
    """:meth:`Options.parse` of ``key``'s (name, type, value) triples, kept
    (:meth:`Options.of_call`). A parse that raises is not kept."""
    return Options.parse(**{name: value for name, _, value in key})
