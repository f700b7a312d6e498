"""Transfer operators: test vectors, least-squares interpolation, and its correction
towards the ideal interpolation of the reduction framework.

With a C/F splitting and A ordered as ``[[A_ff, A_fc], [A_cf, A_cc]]``, the *ideal*
interpolation is ``P = [W; I]`` with ``W = −A_ff⁻¹ A_fc`` and the ideal restriction
``R = [Z, I]`` with ``Z = −A_cf A_ff⁻¹``. Then ``R A P`` is the Schur complement and, with
either of them ideal, the two-level method's error is that of the F-relaxation alone. Ideal
W is dense, though, and truncating it to a sparse pattern loses what matters most for
Helmholtz: the oscillatory near-kernel (waves with |ξ| ≈ k), on which the coarse level
must act like the fine one.

The construction here (``"ideal-corrected"``, the default):

1. *Test vectors*: random vectors relaxed by the level's smoother on ``A x = 0``; what is
   left of them is the error the smoother cannot reduce, the near-kernel.
2. *Least squares*: for each F point i, the weights on its C neighbours (distance 1 in the
   graph of A, or 2) that best reproduce the test vectors' values at i from their values
   at the C points, ``min_w Σ_t |v_t(i) − Σ_j w_j v_t(j)|²`` (complex weights).
3. *Correction towards ideal*: the fit is pulled, with a strength ``mu``, towards a target
   ``T``: first one Jacobi step from zero, ``−D_ff⁻¹ A_fc``, then ``steps`` times a Jacobi
   step on ``A_ff W = −A_fc`` from the last fit, each followed by a new fit. A Jacobi
   step maps a W that reproduces a near-kernel vector to one that still reproduces it
   (up to the vector's residual), so the pull towards ideal and the fit agree on the
   near-kernel, and the pull decides the rest. (Jacobi steps alone, projected on the
   pattern, converge to the truncated ideal weights, which lose the near-kernel: on
   Helmholtz levels they do worse than least squares alone.) Rows of an F point with no
   F neighbour (A_ff diagonal there) get the ideal weights exactly: they fit in the
   pattern. When A_ff is diagonal altogether (a red-black splitting of a 5- or 7-point
   stencil), W is the exact ideal and no test vectors are made.

``"ls"`` is steps 1–2 alone, ``"ideal-exact"`` is W computed with this package's
factorization of A_ff (dense: small problems and references only). The restriction is
``Pᵀ`` for complex symmetric A (the ideal R is then ``P_idealᵀ``), ``Pᴴ`` for Hermitian A,
and otherwise the transpose of the same construction on Aᵀ.
"""

import numpy as np
import scipy.sparse as sp

from ..errors import InvalidInputError
from ..norms import column_norms
from .options import nonnegative_float, nonnegative_int, one_of, parse, positive_int

__all__ = [
    "TEST_VECTORS",
    "TRANSFERS",
    "RowFit",
    "fit_rows",
    "ideal_exact_weights",
    "interpolation",
    "interpolation_pattern",
    "local_ideal_weights",
    "prolongator",
    "relaxed_test_vectors",
]

#: Transfer options: name → {parameter: (default, check)}.
TRANSFERS = {
    "ideal-corrected": {
        "steps": (3, nonnegative_int),
        "mu": (1e-2, nonnegative_float),
        "distance": (2, one_of(1, 2)),
        "max_entries": (8, nonnegative_int),
    },
    "ls": {"distance": (1, one_of(1, 2)), "max_entries": (8, nonnegative_int)},
    "ideal-exact": {"drop": (0.0, nonnegative_float)},
}

#: Test-vector options.
TEST_VECTORS = {
    "relaxed": {
        "count": (48, positive_int),
        "steps": (6, positive_int),
        "coarse_steps": (2, nonnegative_int),
    }
}

#: Rows of test-vector blocks relaxed at once: bounds the temporaries of the relaxation.
RELAX_COLUMNS = 8

#: Entries of the (rows, pattern, vectors) arrays of one batch of least-squares fits.
FIT_BATCH = 2_000_000

#: Relative Tikhonov term of every fit: keeps the normal equations nonsingular when a
#: pattern has more entries than the test vectors can tell apart.
FIT_REGULARIZATION = 1e-10


def parse_test_vectors(option):
    """Validate the test_vectors option; an int is the shorthand for the count."""
    if isinstance(option, (int, np.integer)) and not isinstance(option, bool):
        option = ("relaxed", {"count": int(option)})
    return parse(option, TEST_VECTORS, "test_vectors")[1]


def relaxed_test_vectors(A, smoother, count, steps, rng, start=None):
    """``count`` random vectors relaxed ``steps`` times by ``smoother`` on A x = 0, each
    scaled to unit norm; complex for complex A. Shape (n, count).

    ``start`` (n, count), when given, replaces the random vectors: the C values of the
    level above's test vectors are near-kernel vectors of the Galerkin operator already
    (P is the identity on C and reproduces them), so a coarse level relaxes those.
    """
    n = A.shape[0]
    complex_ = np.iscomplexobj(A.data) or (start is not None and np.iscomplexobj(start))
    if start is not None:
        count = start.shape[1]
    # Stored in single precision: they only shape the least-squares fits (which form their
    # normal equations in double), and they are the setup's largest arrays.
    V = np.empty((n, count), np.complex64 if complex_ else np.float32)
    for lo in range(0, count, RELAX_COLUMNS):
        hi = min(count, lo + RELAX_COLUMNS)
        if start is not None:
            X = start[:, lo:hi].copy()
        else:
            X = rng.standard_normal((n, hi - lo))
            if complex_:
                X = X + 1j * rng.standard_normal((n, hi - lo))
        for _ in range(steps):
            X = smoother.apply(A, 0.0, X)
        V[:, lo:hi] = X
    norms = column_norms(V)
    norms[norms == 0] = 1.0
    V /= norms.astype(V.dtype)
    return V


def interpolation_pattern(A, fpoints, cpoints, distance=1):
    """For each F point, its C neighbours in the graph of A (distance 1), or the C points
    within two steps (distance 2). F points without a C neighbour at distance 1 get
    those at distance 2. Returns a CSR pattern (nf × nc) of ones, sorted."""
    G = sp.csr_array((np.ones(A.nnz), A.indices, A.indptr), shape=A.shape)
    Gf = G[fpoints]
    Gfc = Gf[:, cpoints]
    if distance == 2 or np.any(np.diff(Gfc.indptr) == 0):
        Gff = Gf[:, fpoints]
        G2 = Gfc + Gff @ Gfc
        if distance == 2:
            Gfc = G2
        else:
            lonely = np.diff(Gfc.indptr) == 0
            Gfc = Gfc + sp.diags_array(lonely.astype(float)) @ G2
    pattern = sp.csr_array((np.ones(Gfc.nnz), Gfc.indices, Gfc.indptr), shape=Gfc.shape)
    pattern.sum_duplicates()
    pattern.data[:] = 1.0
    pattern.sort_indices()
    return pattern


class RowFit:
    """Row-wise least squares on a pattern, with an optional pull towards a prior.

    For each row i with pattern entries J_i, the weights w minimizing
    ``Σ_t |targets[i, t] − Σ_{j∈J_i} w_j samples[j, t]|² + mu s_i ‖w − prior_i‖²``, where
    ``s_i`` is the mean squared size of the samples on J_i (so that ``mu`` is relative).
    The normal equations' matrices do not depend on the prior: they are formed and
    inverted once, and each :meth:`weights` with a new prior is a batch of small products.

    Parameters
    ----------
    pattern : csr_array (nf × nc), sorted indices
    targets : ndarray (nf, m)
    samples : ndarray (nc, m)
    mu : float
    """

    def __init__(self, pattern, targets, samples, mu=0.0):
        self.nnz = pattern.nnz
        self.mu = mu
        self.dtype = np.result_type(targets.dtype, samples.dtype, np.float64)
        self.groups = []
        counts = np.diff(pattern.indptr)
        m = samples.shape[1]
        for p in np.unique(counts):
            if p == 0:
                continue
            rows_all = np.flatnonzero(counts == p)
            batch = max(1, FIT_BATCH // (int(p) * m))
            for lo in range(0, rows_all.size, batch):
                rows = rows_all[lo : lo + batch]
                where = pattern.indptr[rows][:, None] + np.arange(p)
                X = samples[pattern.indices[where]].astype(self.dtype)  # (r, p, m)
                Xc = X.conj()
                G = Xc @ X.transpose(0, 2, 1)
                rhs = np.einsum("rpm,rm->rp", Xc, targets[rows].astype(self.dtype))
                scale = np.einsum("rpp->r", G).real / p
                scale[scale == 0] = 1.0
                G += ((FIT_REGULARIZATION + mu) * scale)[:, None, None] * np.eye(p)
                # The inverses are kept in single precision: the weights need no more,
                # and these are nf p² numbers.
                inverse = np.linalg.inv(G).astype(
                    np.complex64 if G.dtype.kind == "c" else np.float32
                )
                self.groups.append((where.astype(np.int32), inverse, rhs, mu * scale))

    def weights(self, prior=None):
        """The weights, aligned with the pattern's entries; ``prior`` likewise."""
        out = np.zeros(self.nnz, self.dtype)
        for where, Ginv, rhs, pull in self.groups:
            if prior is not None and self.mu > 0:
                rhs = rhs + pull[:, None] * prior[where]
            out[where] = np.einsum("rpq,rq->rp", Ginv.astype(rhs.dtype), rhs)
        return out


def fit_rows(pattern, targets, samples, prior=None, mu=0.0):
    """One row-wise least-squares fit (see :class:`RowFit`).

    Returns
    -------
    ndarray (pattern.nnz,)
        The weights, aligned with the pattern's entries.
    """
    return RowFit(pattern, targets, samples, mu).weights(prior)


def cap_pattern(pattern, scores, max_entries):
    """Keep, in each row of the pattern, the ``max_entries`` entries of largest |score|
    (scores aligned with the pattern's entries); 0 keeps everything."""
    counts = np.diff(pattern.indptr)
    if max_entries <= 0 or counts.max(initial=0) <= max_entries:
        return pattern
    rows = np.repeat(np.arange(pattern.shape[0]), counts)
    order = np.lexsort((-np.abs(scores), rows))
    rank = np.empty(pattern.nnz, np.int64)
    rank[order] = np.arange(pattern.nnz) - pattern.indptr[rows[order]]
    keep = rank < max_entries
    capped = sp.csr_array(
        (np.ones(int(keep.sum())), (rows[keep], pattern.indices[keep])), shape=pattern.shape
    )
    capped.sort_indices()
    return capped


def values_on_pattern(M, pattern):
    """The entries of the sparse M at the pattern's positions, aligned with them (zero
    where M has none)."""
    M = sp.csr_array(M)
    M.sum_duplicates()  # sorts the indices too: the keys below are sorted, row by row
    ncols = pattern.shape[1]
    keys_m = np.repeat(np.arange(M.shape[0], dtype=np.int64), np.diff(M.indptr))
    keys_m *= ncols
    keys_m += M.indices
    data_m = M.data
    rows_p = np.repeat(np.arange(pattern.shape[0], dtype=np.int64), np.diff(pattern.indptr))
    keys_p = rows_p * ncols + pattern.indices
    out = np.zeros(pattern.nnz, np.result_type(M.dtype, np.float64))
    if len(keys_m) == 0:
        return out
    pos = np.minimum(np.searchsorted(keys_m, keys_p), len(keys_m) - 1)
    found = keys_m[pos] == keys_p
    out[found] = data_m[pos[found]]
    return out


def interpolation(A, splitting, V, name, params):
    """The interpolation weights W (nf × nc, CSR) of a named construction.

    Parameters
    ----------
    A : csr_array
    splitting : Splitting
    V : ndarray (n, m) or None
        Test vectors (not needed by ``"ideal-exact"``).
    name : {"ideal-corrected", "ls", "ideal-exact"}
    params : dict
    """
    F, C = splitting.fpoints, splitting.cpoints
    if name == "ideal-exact":
        return ideal_exact_weights(A, F, C, params["drop"])
    pattern = interpolation_pattern(A, F, C, params["distance"])
    Vf, Vc = V[F], V[C]
    AF = A[F]
    Aff, Afc = sp.csr_array(AF[:, F]), sp.csr_array(AF[:, C])
    del AF
    d = Aff.diagonal()
    if np.any(d == 0):
        raise InvalidInputError(
            "an F point has a zero diagonal entry, so the F-relaxation and the ideal "
            "correction cannot use it; try coarsening='cr' (which keeps such points C)"
        )
    dinv = sp.diags_array(1.0 / d)
    if params.get("max_entries"):
        # Rank the pattern's entries by two Jacobi steps towards the ideal weights.
        W1 = -(dinv @ Afc)
        W2 = W1 - dinv @ (Afc + Aff @ W1)
        pattern = cap_pattern(pattern, values_on_pattern(W2, pattern), params["max_entries"])
        del W1, W2  # products of distance-2 reach: the setup's largest temporaries
    if name == "ls":
        data = fit_rows(pattern, Vf, Vc)
    else:
        fit = RowFit(pattern, Vf, Vc, params["mu"])
        # The first prior is one Jacobi step from zero, −D_ff⁻¹ A_fc; each further step
        # is a Jacobi step on A_ff W = −A_fc from the last fit.
        data = fit.weights(values_on_pattern(-(dinv @ Afc), pattern))
        for _ in range(params["steps"]):
            W = sp.csr_array((data, pattern.indices, pattern.indptr), shape=pattern.shape)
            target = W - dinv @ (Afc + Aff @ W)
            data = fit.weights(values_on_pattern(target, pattern))
            del W, target
        # Where A_ff has no off-diagonal entry in a row, the ideal row is -a_fc / a_ii,
        # inside the distance-1 pattern: take it exactly.
        alone = np.diff(Aff.indptr) == 1
        if alone.any():
            exact = values_on_pattern(-(dinv @ Afc), pattern)
            rows = np.repeat(alone, np.diff(pattern.indptr))
            data = np.where(rows, exact, data)
    return sp.csr_array((data, pattern.indices, pattern.indptr), shape=pattern.shape)


def local_ideal_weights(A, splitting):
    """The ideal weights ``−D_ff⁻¹ A_fc`` when A_ff is diagonal (no two F points coupled,
    as in a red-black splitting of a 5- or 7-point stencil), else None. Then no test
    vectors are needed: the ideal interpolation is exact, sparse and local."""
    F, C = splitting.fpoints, splitting.cpoints
    AF = A[F]
    Aff = sp.csr_array(AF[:, F])
    if Aff.nnz != len(F) or np.any(np.diff(Aff.indptr) != 1):
        return None
    d = Aff.diagonal()
    if np.any(d == 0):
        return None
    W = sp.csr_array(-(sp.diags_array(1.0 / d) @ sp.csr_array(AF[:, C])))
    W.sort_indices()
    return W


#: ideal-exact forms a dense nf × nc block: refused above this many entries.
IDEAL_EXACT_LIMIT = 5e7


def ideal_exact_weights(A, F, C, drop=0.0, threads=1):
    """W = −A_ff⁻¹ A_fc computed with this package's factorization of A_ff, entries
    below ``drop`` times their row's largest removed."""
    from ..api import factorize

    if len(F) * len(C) > IDEAL_EXACT_LIMIT:
        raise InvalidInputError(
            f"transfer='ideal-exact' forms a dense {len(F)} x {len(C)} block, too large; "
            "use transfer='ideal-corrected' (sparse) for a problem of this size"
        )
    AF = A[F]
    Aff, Afc = sp.csc_array(AF[:, F]), AF[:, C].toarray()
    W = -factorize(Aff, threads=threads).solve(Afc)
    if drop > 0:
        rowmax = abs(W).max(axis=1, keepdims=True)
        W[abs(W) < drop * rowmax] = 0
    W = sp.csr_array(W)
    W.eliminate_zeros()
    return W


def prolongator(W, splitting):
    """P (n × nc) from the weights: row F[i] is W's row i, row C[j] is the unit vector j."""
    F, C = splitting.fpoints, splitting.cpoints
    W = sp.csr_array(W)
    n, nc = len(F) + len(C), len(C)
    wrows = np.repeat(F, np.diff(W.indptr))
    rows = np.concatenate([wrows, C])
    cols = np.concatenate([W.indices, np.arange(nc)])
    data = np.concatenate([W.data, np.ones(nc, W.dtype)])
    P = sp.csr_array((data, (rows, cols)), shape=(n, nc))
    P.sum_duplicates()
    P.sort_indices()
    return P
