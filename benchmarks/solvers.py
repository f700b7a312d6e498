"""The solvers the suite compares, each behind one small adapter with the same four phases.

An adapter is made in a fresh worker process (``worker.py``), then its phases
run and are timed there: ``analyze()`` (ordering and symbolic work, including
the conversion of A to the solver's input format), ``factor()`` (numeric
factorization), ``solve(B)`` and, after the memory high-water mark has been
read, ``info()`` (factor size, ordering used). The libraries are imported in
the constructor, so the worker's memory baseline includes them.

Which structure each solver can take, and how it factors it:

========  =========================  ===========  ==================  ==============
solver    spd                        sym          csym                unsym
========  =========================  ===========  ==================  ==============
pastixpy  LLᵀ                        LDLᵀ         LDLᵀ                LU
spsolve   pastixpy.spsolve, one call per solve (small problems: simplicial LU)
scipy     LU (splu, COLAMD)          LU           LU                  LU
cholmod   LLᵀ (supernodal, METIS)    —            —                   —
mumps     LDLᵀ (SYM=1)               LDLᵀ (2)     LDLᵀ (SYM=2)        LU (SYM=0)
pardiso   LLᵀ (mtype 2)              LDLᵀ (-2)    LDLᵀ (mtype 6)      LU (mtype 11)
rslab     its automatic path: KLU (sparse work), else LDLᵀ (symmetric values) or LU
========  =========================  ===========  ==================  ==============

``rslab-spsolve`` is ``rslab.spsolve``, one whole call per solve like ``spsolve``.
"""

import ctypes
import importlib.metadata
import importlib.util

import numpy as np
import scipy.sparse as sp

#: Solver name → (module that must be importable, distribution for the version, what it is).
SOLVERS = {
    "pastixpy": ("pastixpy", "pastixpy", "pastixpy.factorize"),
    "spsolve": ("pastixpy", "pastixpy", "pastixpy.spsolve, one call per solve"),
    "scipy": ("scipy.sparse.linalg", "scipy", "scipy.sparse.linalg.splu (SuperLU)"),
    "cholmod": ("sksparse.cholmod", "scikit-sparse", "CHOLMOD via scikit-sparse"),
    "mumps": ("mumps", "python-mumps", "MUMPS (sequential) via python-mumps"),
    "pardiso": ("pypardiso", "pypardiso", "MKL PARDISO via pypardiso"),
    "rslab": ("rslab", "rslab", "rslab (pure Rust): analyze, factor, solve"),
    "rslab-spsolve": ("rslab", "rslab", "rslab.spsolve, one call per solve"),
}


#: Solvers timed as one whole call per solve (no analysis or factorization apart).
ONE_CALL = ("spsolve", "rslab-spsolve")


#: Precisions pastixpy runs in besides double (run.py's --precision): a solver name
#: ``pastixpy:mixed`` is pastixpy with ``precision="mixed"``.
PRECISIONS = ("double", "mixed", "single")


def base_name(name):
    """The solver of a name: ``pastixpy`` for ``pastixpy:mixed`` or ``pastixpy+blr1e-8``."""
    return name.split("+", 1)[0].split(":", 1)[0]


def adapter(name, A, structure, threads):
    """The adapter running solver ``name``: pastixpy's names are
    ``pastixpy[:PRECISION][+blrTOL | +mmTOL | +pcTOL]``, ``+blrTOL`` compressing the
    factors at TOL just in time (solves refined by GMRES), ``+mmTOL`` the same with the
    minimal-memory strategy, ``+pcTOL`` using factors compressed at TOL as the
    preconditioner of scipy's GMRES to a relative residual of 1e-10."""
    head, _, compress = name.partition("+")
    base, _, precision = head.partition(":")
    if base == "pastixpy":
        return PastixSolver(A, structure, threads, precision or "double", compress or None)
    return ADAPTERS[base](A, structure, threads)


def availability(name):
    """``(installed, version_or_note)`` for a solver, without importing its library."""
    name = base_name(name)
    module, dist, _ = SOLVERS[name]
    try:
        found = importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        found = False
    if not found:
        return False, "not installed"
    try:
        return True, importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        if name == "pastixpy":
            import pastixpy

            return True, pastixpy.__version__
        return True, "version unknown"


def not_applicable(name, structure):
    """Why a solver cannot take a matrix of this structure, or None."""
    if base_name(name) == "cholmod" and structure != "spd":
        return "n/a: CHOLMOD factors SPD matrices only"
    return None


class PastixSolver:
    """pastixpy.factorize with its defaults (kind and ordering "auto"), in a precision
    ("double", "mixed", "single"), with block low-rank compression or not (``compress``:
    ``"blrTOL"`` or ``"pcTOL"``, see :func:`adapter`); the analysis is timed inside it."""

    #: GMRES of the preconditioner mode: relative residual and restart.
    PC_RTOL, PC_RESTART = 1e-10, 100

    def __init__(self, A, structure, threads, precision="double", compress=None):
        import pastixpy

        self.pastixpy = pastixpy
        self.A, self.threads, self.precision = A, threads, precision
        self.mode, self.tol = None, None
        if compress is not None:
            self.mode = next(m for m in ("pc", "mm", "blr") if compress.startswith(m))
            self.tol = float(compress[len(self.mode) :])
        self.iterations = []

    def analyze(self):
        pass  # factorize() runs the whole pipeline; factor() splits its time below

    def factor(self):
        extra = {}
        if self.mode is not None:
            strategy = "minmem" if self.mode == "mm" else "jit"
            extra["compress"] = ("blr", {"tol": self.tol, "strategy": strategy})
        if self.mode == "pc":
            extra["refine"] = "none"
        if self.precision != "double":
            # Not passed for double: the default ("auto", double on these matrices) lets a
            # small matrix take factorize's small path, as a user's call does; naming a
            # precision asks for the pipeline.
            extra["precision"] = self.precision
        self.F = self.pastixpy.factorize(self.A, threads=self.threads, **extra)

    def split(self, seconds):
        """Everything factorize() did besides the numeric factorization and its check solve
        (mixed precision, perturbed pivots: ``verify``) goes to "analysis"."""
        sec = self.F.stats["seconds"]
        total = seconds["analysis"] + seconds["factor"]
        seconds["factor"] = sec["factorize"]
        seconds["verify"] = sec.get("verify", 0.0)
        seconds["analysis"] = total - seconds["factor"] - seconds["verify"]
        return seconds

    def solve(self, B):
        if self.mode != "pc":
            X = self.F.solve(B)
            self.iterations.append(self.F.stats["refinement_steps"])
            return X
        import scipy.sparse.linalg as sla

        M = self.F.aspreconditioner()
        cols = B.reshape(B.shape[0], -1)
        X = np.empty(cols.shape, dtype=np.result_type(self.A.dtype, B.dtype))
        for j in range(cols.shape[1]):
            count = [0]

            def tick(_, count=count):
                count[0] += 1

            X[:, j], _ = sla.gmres(
                self.A,
                cols[:, j],
                M=M,
                rtol=self.PC_RTOL,
                restart=self.PC_RESTART,
                maxiter=10,
                callback=tick,
                callback_type="pr_norm",
            )
            self.iterations.append(count[0])
        return X.reshape(B.shape)

    def info(self):
        s, n = self.F.stats, self.A.shape[0]
        c = s.get("compression") or {}
        nnz = s["nnz_L"] if s["kind"] != "lu" else 2 * s["nnz_L"] - n
        return {
            "nnz_factor": int(nnz),
            "factor_bytes": int(s["factor_bytes"]),
            "flops": float(s["flops"]),
            "kind": s["kind"],
            "ordering": self.F.analysis.ordering.method,
            "pastixpy_seconds": dict(s["seconds"]),
            "refinement_steps": s["refinement_steps"],
            "perturbed_pivots": s["perturbed_pivots"],
            "precision": s["precision"],
            "factor_dtype": s["factor_dtype"],
            "precision_fallback": s["precision_fallback"],
            "compression_ratio": c.get("ratio"),
            "full_rank_bytes": c.get("full_rank_bytes"),
            "mean_rank": c.get("mean_rank"),
            "compression_seconds": c.get("seconds"),
            "refinement": s["refinement"],
            "gmres_iterations": self.iterations[0] if self.iterations else None,
        }


class SpsolveSolver:
    """pastixpy.spsolve as a scipy user calls it: each solve is one whole call (analysis,
    factorization, solve: small problems take its simplicial path, see
    pastixpy/simplicial.py), so analysis and factorization read 0 and "solve s (1)" is the
    total. Threads: the BLAS limit only (spsolve's defaults)."""

    def __init__(self, A, structure, threads):
        import pastixpy

        self.spsolve, self.A = pastixpy.spsolve, A

    def analyze(self):
        pass

    def factor(self):
        pass

    def solve(self, B):
        return self.spsolve(self.A, B)

    def info(self):
        return {"nnz_factor": None, "factor_bytes": 0, "kind": "auto", "ordering": "auto"}


class ScipySolver:
    """scipy.sparse.linalg.splu with its defaults (COLAMD); no separate analysis phase."""

    def __init__(self, A, structure, threads):
        from scipy.sparse.linalg import splu

        self.splu, self.A = splu, A

    def analyze(self):
        pass

    def factor(self):
        self.lu = self.splu(sp.csc_matrix(self.A))

    def split(self, seconds):
        seconds["analysis"] = None  # ordering and symbolic work happen inside splu
        return seconds

    def solve(self, B):
        return self.lu.solve(B)

    def info(self):
        nnz = self.lu.L.nnz + self.lu.U.nnz - self.A.shape[0]
        return {
            "nnz_factor": int(nnz),
            "factor_bytes": int(nnz * self.A.dtype.itemsize),
            "kind": "lu",
            "ordering": "colamd",
        }


class CholmodSolver:
    """CHOLMOD supernodal LLᵀ: ``analyze(ordering_method="metis")``, then ``cholesky_inplace``."""

    def __init__(self, A, structure, threads):
        from sksparse import cholmod

        self.cholmod = cholmod
        self.A = A
        self.ordering = "metis"

    def analyze(self):
        A = sp.csc_matrix(self.A)
        try:
            self.f = self.cholmod.analyze(A, mode="supernodal", ordering_method="metis")
        except self.cholmod.CholmodError:
            self.ordering = "nesdis"  # a CHOLMOD built without METIS
            self.f = self.cholmod.analyze(A, mode="supernodal", ordering_method="default")
        self.Ac = A

    def factor(self):
        self.f.cholesky_inplace(self.Ac)

    def solve(self, B):
        return self.f(B)

    def info(self):
        nnz = self.f.L().nnz  # converts the factor (a copy): after the memory reading
        return {
            "nnz_factor": int(nnz),
            "factor_bytes": int(nnz * self.A.dtype.itemsize),
            "kind": "llt",
            "ordering": self.ordering,
        }


class MumpsSolver:
    """Sequential MUMPS through python-mumps: job 1 (analysis), 2 (factor), 3 (solve)."""

    SYM = {"spd": 1, "sym": 2, "csym": 2, "unsym": 0}

    def __init__(self, A, structure, threads):
        import mumps
        from mumps import _mumps

        self.mumps, self._mumps = mumps, _mumps
        self.A, self.sym = A, self.SYM[structure]
        # Debian's sequential MUMPS has no METIS; SCOTCH is its nested dissection then.
        have = mumps.possible_orderings()
        self.ordering = "metis" if "metis" in have else "scotch" if "scotch" in have else "auto"

    def analyze(self):
        from mumps.mumps import _make_assembled_from_coo

        A = sp.coo_array(sp.triu(self.A) if self.sym else self.A)
        ctx = self.mumps.Context()
        dtype, row, col, data = _make_assembled_from_coo(A, False)
        # Context.set_matrix always uses SYM=2 for symmetric input; SPD matrices want SYM=1.
        ctx.mumps_instance = getattr(self._mumps, dtype + "mumps")(False, self.sym)
        ctx.dtype, ctx.n = dtype, A.shape[0]
        ctx.row, ctx.col, ctx.data = row, col, data
        ctx.mumps_instance.set_assembled_matrix(A.shape[0], row, col, data)
        ctx.analyze(ordering=self.ordering)
        self.ctx = ctx

    def factor(self):
        self.ctx.factor(reuse_analysis=True)

    def solve(self, B):
        return self.ctx.solve(B)

    def info(self):
        st = self.ctx.factor_stats
        return {
            "nnz_factor": int(st.nonzeros),
            "factor_bytes": int(st.nonzeros * self.A.dtype.itemsize),
            "kind": {0: "lu", 1: "ldlt (spd)", 2: "ldlt"}[self.sym],
            "ordering": self.ctx.analysis_stats.ordering,
            "solver_flops": float(st.flops),
        }


class PardisoSolver:
    """MKL PARDISO through pypardiso's library handle: phases 11, 22, 33, default iparm (METIS).

    pypardiso's own ``solve`` accepts float64 only; calling its ``pardiso`` symbol
    directly also lets the complex symmetric matrices (mtype 6) through.
    """

    MTYPE = {"spd": 2, "sym": -2, "csym": 6, "unsym": 11}

    def __init__(self, A, structure, threads):
        from pypardiso import PyPardisoSolver

        self.mtype = self.MTYPE[structure]
        self.s = PyPardisoSolver(mtype=self.mtype)
        self.A = A

    def _call(self, phase, B):
        s = self.s
        X = np.zeros_like(B)
        err = ctypes.c_int32(0)
        i32 = ctypes.POINTER(ctypes.c_int32)

        def ref(v):
            return ctypes.byref(ctypes.c_int32(v))

        nrhs = 1 if B.ndim == 1 else B.shape[1]
        s._mkl_pardiso(
            s.pt.ctypes.data_as(ctypes.POINTER(s._pt_type[0])),
            ref(1),
            ref(1),
            ref(self.mtype),
            ref(phase),
            ref(self.U.shape[0]),
            self.U.data.ctypes.data_as(ctypes.c_void_p),
            self.ia.ctypes.data_as(i32),
            self.ja.ctypes.data_as(i32),
            s.perm.ctypes.data_as(i32),
            ref(nrhs),
            s.iparm.ctypes.data_as(i32),
            ref(0),
            B.ctypes.data_as(ctypes.c_void_p),
            X.ctypes.data_as(ctypes.c_void_p),
            ctypes.byref(err),
        )
        if err.value != 0:
            raise RuntimeError(f"PARDISO phase {phase} failed with error {err.value}")
        return X

    def analyze(self):
        A = self.A
        U = sp.triu(A, format="csr") if self.mtype != 11 else sp.csr_array(A)
        U.sort_indices()
        self.U = U
        self.ia = (U.indptr + 1).astype(np.int32)
        self.ja = (U.indices + 1).astype(np.int32)
        self.dummy = np.zeros((A.shape[0], 1), dtype=A.dtype, order="F")
        self._call(11, self.dummy)

    def factor(self):
        self._call(22, self.dummy)

    def solve(self, B):
        B = np.asfortranarray(B, dtype=self.A.dtype)
        return self._call(33, B)

    def info(self):
        iparm = self.s.iparm  # 0-based: [17] factor entries, [18] MFLOP of the factorization
        return {
            "nnz_factor": int(iparm[17]),
            "factor_bytes": int(iparm[17]) * self.A.dtype.itemsize,
            "kind": {2: "llt", -2: "ldlt", 6: "ldlt", 11: "lu"}[self.mtype],
            "ordering": {0: "mindegree", 2: "metis", 3: "metis (parallel)"}.get(
                int(iparm[1]), f"iparm[2]={iparm[1]}"
            ),
            "solver_flops": float(iparm[18]) * 1e6,
            "refinement_steps": int(iparm[6]),
        }


class RslabSolver:
    """rslab's automatic path: ``rslab.analyze(A)`` (its ordering race and symbolic
    analysis), ``factor(A.data)``, ``solve``; ``threads=t`` pins its worker pool (its
    default is a predictor of its own, which does not read ``OMP_NUM_THREADS``). The
    note says which path (KLU, LDLᵀ, LU) and ordering it took."""

    def __init__(self, A, structure, threads):
        import rslab

        self.rslab, self.threads = rslab, threads
        self.A = sp.csc_matrix(A)  # its input format: conversion outside the timing

    def analyze(self):
        self.sym = self.rslab.analyze(self.A, threads=self.threads)

    def factor(self):
        self.f = self.sym.factor(self.A.data)

    def solve(self, B):
        return self.f.solve_many(B) if B.ndim == 2 else self.f.solve(B)

    def info(self):
        d = self.f.diagnostics()
        # Keys may be present with None (its KLU path has no supernodal estimate).
        decisions = d.get("decisions") or {}
        ordering = decisions.get("ordering_used", "?")
        return {
            "nnz_factor": int(self.f.factor_nnz),
            "factor_bytes": int(self.f.factor_nnz) * self.A.dtype.itemsize,
            "kind": f"{self.f.backend} (rslab path)",
            "ordering": ordering,
            "solver_flops": float((d.get("estimate") or {}).get("factor_flops") or 0) or None,
        }


class RslabSpsolveSolver:
    """``rslab.spsolve(A, b)``, one whole call per solve (its automatic path; threads as
    :class:`RslabSolver` pins them); analysis and factorization read 0 as for
    :class:`SpsolveSolver`."""

    def __init__(self, A, structure, threads):
        import rslab

        self.spsolve, self.threads = rslab.spsolve, threads
        self.A = sp.csc_matrix(A)

    def analyze(self):
        pass

    def factor(self):
        pass

    def solve(self, B):
        return self.spsolve(self.A, B, threads=self.threads)

    def info(self):
        return {"nnz_factor": None, "factor_bytes": 0, "kind": "auto", "ordering": "auto"}


ADAPTERS = {
    "pastixpy": PastixSolver,
    "spsolve": SpsolveSolver,
    "scipy": ScipySolver,
    "cholmod": CholmodSolver,
    "mumps": MumpsSolver,
    "pardiso": PardisoSolver,
    "rslab": RslabSolver,
    "rslab-spsolve": RslabSpsolveSolver,
}
