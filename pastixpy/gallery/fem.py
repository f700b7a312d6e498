"""P1 and P2 triangular finite elements on a structured mesh of a square, assembled in a
few vectorized numpy operations (no Python loop over the elements), for the Helmholtz
problems of the gallery.

The mesh of ``cells × cells`` squares, each cut into two triangles by its diagonal from
lower left to upper right, has its nodes on the grid of spacing ``H / order`` (``H`` the
element size): for P2 the edge midpoints, the diagonals' included, are grid nodes too.
Nodes are numbered in C order of that ``(order·cells + 1)²`` grid (x slowest), so that a
nodal vector reshapes to the grid.
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

# Quadrature on the reference triangle {ξ, η >= 0, ξ + η <= 1} (area 1/2): the 3-point
# rule is exact for degree 2 (the P1 mass), the 6-point (Dunavant) rule for degree 4 (the
# P2 mass); both have interior points only, where the media are sampled.
_A, _B = 0.445948490915965, 0.091576213509771
_WA, _WB = 0.223381589678011 / 2, 0.109951743655322 / 2
_TRIANGLE_RULES = {
    1: (np.array([[1 / 6, 1 / 6], [2 / 3, 1 / 6], [1 / 6, 2 / 3]]), np.full(3, 1 / 6)),
    2: (
        np.array(
            [
                [_A, _A],
                [1 - 2 * _A, _A],
                [_A, 1 - 2 * _A],
                [_B, _B],
                [1 - 2 * _B, _B],
                [_B, 1 - 2 * _B],
            ]
        ),
        np.array([_WA] * 3 + [_WB] * 3),
    ),
}
# Gauss rules on [0, 1] for the boundary edges (exact for degrees 3 and 5).
_G2, _G3 = 0.5 / np.sqrt(3.0), 0.5 * np.sqrt(0.6)
_EDGE_RULES = {
    1: (np.array([0.5 - _G2, 0.5 + _G2]), np.array([0.5, 0.5])),
    2: (np.array([0.5 - _G3, 0.5, 0.5 + _G3]), np.array([5 / 18, 4 / 9, 5 / 18])),
}
# The two triangles of a cell, as node-grid offsets in units of the element size:
# vertices v0, v1, v2; P2 adds the midpoints of (v0, v1), (v1, v2), (v2, v0).
_VERTICES = (np.array([[0, 0], [1, 0], [1, 1]]), np.array([[0, 0], [1, 1], [0, 1]]))


def _shape_functions(order, points):
    """Values (q, nloc) and reference gradients (q, nloc, 2) of the P1/P2 basis."""
    xi, eta = points[:, 0], points[:, 1]
    lam = np.stack([1 - xi - eta, xi, eta], axis=1)  # barycentric coordinates
    dlam = np.array([[-1.0, -1.0], [1.0, 0.0], [0.0, 1.0]])
    if order == 1:
        return lam, np.broadcast_to(dlam, (len(points), 3, 2)).copy()
    pairs = [(0, 1), (1, 2), (2, 0)]
    phi = np.concatenate(
        [lam * (2 * lam - 1), np.stack([4 * lam[:, a] * lam[:, b] for a, b in pairs], axis=1)],
        axis=1,
    )
    dvert = (4 * lam - 1)[:, :, None] * dlam[None]
    dedge = np.stack(
        [4 * (lam[:, a, None] * dlam[b] + lam[:, b, None] * dlam[a]) for a, b in pairs], axis=1
    )
    return phi, np.concatenate([dvert, dedge], axis=1)


def _edge_functions(order, t):
    """Values (q, order + 1) of the 1D basis on an edge: end 0, end 1, (midpoint)."""
    if order == 1:
        return np.stack([1 - t, t], axis=1)
    return np.stack([(1 - t) * (1 - 2 * t), t * (2 * t - 1), 4 * t * (1 - t)], axis=1)


@dataclass(frozen=True)
class TriangleMesh:
    """A structured triangular mesh of the square ``[lo, hi]²`` made by :func:`triangle_mesh`.

    Attributes
    ----------
    order : int
        1 (P1) or 2 (P2).
    cells : int
        Squares per direction.
    lo, hi : float
        The square's corners' coordinates.
    grid : tuple of int
        The node grid's shape, ``(order·cells + 1,) * 2``.
    coordinates : ndarray, shape (nodes, 2)
        The nodes' coordinates, C order of the grid.
    elements : ndarray, shape (2 cells², 3 or 6)
        Each triangle's nodes: vertices, then (P2) the midpoints of (v0, v1), (v1, v2),
        (v2, v0); the two triangles of a cell alternate.
    boundary_edges : ndarray, shape (4 cells, 2 or 3)
        Each boundary edge's nodes: its two ends, then (P2) its midpoint.
    """

    order: int
    cells: int
    lo: float
    hi: float
    grid: tuple
    coordinates: np.ndarray
    elements: np.ndarray
    boundary_edges: np.ndarray

    @property
    def size(self):
        """The element size H (a leg of each right triangle)."""
        return (self.hi - self.lo) / self.cells

    @property
    def boundary_nodes(self):
        """Whether each node lies on the square's boundary."""
        i, j = np.indices(self.grid).reshape(2, -1)
        last = self.grid[0] - 1
        return (i == 0) | (j == 0) | (i == last) | (j == last)


def triangle_mesh(cells, order=1, lo=0.0, hi=1.0):
    """The structured P1 or P2 triangular mesh of ``[lo, hi]²`` with ``cells²`` squares.

    Examples
    --------
    >>> m = triangle_mesh(2, order=2)
    >>> m.grid, m.elements.shape, m.boundary_edges.shape
    ((5, 5), (8, 6), (8, 3))
    >>> m.coordinates[m.elements[0]].tolist()
    [[0.0, 0.0], [0.5, 0.0], [0.5, 0.5], [0.25, 0.0], [0.5, 0.25], [0.25, 0.25]]
    """
    if order not in (1, 2):
        raise ValueError(f"order must be 1 or 2, got {order!r}")
    if int(cells) != cells or cells < 1:
        raise ValueError(f"cells must be a positive integer, got {cells!r}")
    cells, p = int(cells), order
    size = p * cells + 1
    step = (hi - lo) / (p * cells)
    ids = np.arange(size * size).reshape(size, size)
    axis = lo + step * np.arange(size)
    coords = np.stack(np.meshgrid(axis, axis, indexing="ij"), axis=-1).reshape(-1, 2)
    ci, cj = (p * g.ravel() for g in np.indices((cells, cells)))
    elements = []
    for verts in _VERTICES:
        local = p * verts
        if p == 2:
            local = np.concatenate([local, (local + np.roll(local, -1, axis=0)) // 2])
        elements.append(ids[ci[:, None] + local[:, 0], cj[:, None] + local[:, 1]])
    # Alternate the two triangles of each cell: elements[2e], elements[2e + 1].
    elements = np.stack(elements, axis=1).reshape(-1, 3 if p == 1 else 6)
    start = p * np.arange(cells)
    ends = [start, start + p] + ([start + 1] if p == 2 else [])
    last = np.full(cells, p * cells)
    zero = np.zeros(cells, dtype=int)
    sides = [(e, zero) for e in ends], [(e, last) for e in ends]  # y = lo, y = hi
    sides += [(zero, e) for e in ends], [(last, e) for e in ends]  # x = lo, x = hi
    edges = np.concatenate(
        [np.stack([ids[i, j] for i, j in side], axis=1) for side in sides], axis=0
    )
    return TriangleMesh(p, cells, float(lo), float(hi), (size, size), coords, elements, edges)


def _coo(rows_cols, vals, n):
    rows = np.repeat(rows_cols, rows_cols.shape[1], axis=1).ravel()
    cols = np.tile(rows_cols, (1, rows_cols.shape[1])).ravel()
    A = sp.coo_array((vals.ravel(), (rows, cols)), shape=(n, n)).tocsc()
    return _symmetric(A)


def _symmetric(A):
    """A made exactly symmetric: COO duplicates are summed in an unspecified order, so A
    and Aᵀ may differ by rounding; their average is bitwise symmetric (a + b == b + a)."""
    A = sp.csc_array((A + A.T) * 0.5)
    A.sum_duplicates()
    A.eliminate_zeros()  # couplings that vanish on right triangles (P1: the diagonals)
    A.sort_indices()
    return A


def _lump(vals, weights, order):
    """Diagonal lumping of element mass matrices ``vals`` (E, nloc, nloc): row sums for
    P1; for P2 (whose row sums vanish at the vertices) HRZ: the diagonal scaled to the
    element's total mass ``weights`` (E,)."""
    if order == 1:
        return vals.sum(axis=2)
    diag = np.diagonal(vals, axis1=1, axis2=2)
    return diag * (weights / diag.sum(axis=1))[:, None]


def assemble(mesh, *, ax=None, ay=None, weight=None, lumped=False):
    """Stiffness ``∫ ax ∂x u ∂x v + ay ∂y u ∂y v`` and mass ``∫ weight u v`` on a mesh.

    The coefficients are functions of ``(x, y)`` arrays (None stands for 1), sampled at
    the quadrature points (3 per triangle for P1, 6 for P2: exact for constant
    coefficients); they may be complex. Both matrices are complex symmetric CSC of the
    order of the mesh's nodes, without boundary conditions.

    Parameters
    ----------
    mesh : TriangleMesh
    ax, ay, weight : callable or None
    lumped : bool
        Diagonal mass: row sums (P1) or HRZ (P2, the diagonal scaled to each element's
        total ``∫ weight``).

    Returns
    -------
    K, M : scipy.sparse.csc_array

    Examples
    --------
    >>> K, M = assemble(triangle_mesh(3, order=2))
    >>> round(float(M.sum().real), 12), round(float(abs(K.sum())), 12)
    (1.0, 0.0)
    """
    p, H = mesh.order, mesh.size
    points, wq = _TRIANGLE_RULES[p]
    phi, dref = _shape_functions(p, points)
    nloc = phi.shape[1]
    n = mesh.coordinates.shape[0]
    detJ = H * H
    K_vals, M_vals, M_total = [], [], []
    for t, verts in enumerate(_VERTICES):
        elems = mesh.elements[t::2]
        J = H * np.stack([verts[1] - verts[0], verts[2] - verts[0]], axis=1)
        grad = dref @ np.linalg.inv(J)  # (q, nloc, 2): ∇x φ = J⁻ᵀ ∇ξ φ, as rows
        xq = mesh.coordinates[elems[:, 0]][:, None, :] + (points @ J.T)[None]  # (E, q, 2)
        x, y = xq[..., 0], xq[..., 1]
        dx = wq * detJ  # quadrature weights times |det J|
        coef = {}
        for name, f in (("ax", ax), ("ay", ay), ("w", weight)):
            coef[name] = (np.ones_like(x) if f is None else np.asarray(f(x, y))) * dx
        Bx = np.einsum("qi,qj->qij", grad[..., 0], grad[..., 0]).reshape(len(wq), -1)
        By = np.einsum("qi,qj->qij", grad[..., 1], grad[..., 1]).reshape(len(wq), -1)
        Bm = np.einsum("qi,qj->qij", phi, phi).reshape(len(wq), -1)
        K_vals.append(coef["ax"] @ Bx + coef["ay"] @ By)
        M_vals.append((coef["w"] @ Bm).reshape(-1, nloc, nloc))
        M_total.append(coef["w"].sum(axis=1))
    elements = np.concatenate([mesh.elements[0::2], mesh.elements[1::2]])
    M_vals = np.concatenate(M_vals)
    K = _coo(elements, np.concatenate(K_vals), n)
    if lumped:
        d = _lump(M_vals, np.concatenate(M_total), p)
        M = _symmetric(sp.coo_array((d.ravel(), (elements.ravel(),) * 2), shape=(n, n)).tocsc())
    else:
        M = _coo(elements, M_vals, n)
    return K, M


def boundary_mass(mesh, *, weight=None, lumped=False):
    """The 1D mass ``∫_Γ weight u v`` on the mesh's boundary edges (a sparse matrix of the
    order of the mesh's nodes); weight sampled at Gauss points (2 per edge for P1, 3 for
    P2); lumped: row sums (P1) or HRZ (P2, i.e. Simpson's weights h/6, h/6, 2h/3 for a
    constant weight).

    Examples
    --------
    >>> m = triangle_mesh(4)
    >>> float(boundary_mass(m).sum().real)  # the perimeter
    4.0
    """
    p, H = mesh.order, mesh.size
    t, wq = _EDGE_RULES[p]
    phi = _edge_functions(p, t)
    edges = mesh.boundary_edges
    a = mesh.coordinates[edges[:, 0]]
    b = mesh.coordinates[edges[:, 1]]
    xq = a[:, None, :] + t[None, :, None] * (b - a)[:, None, :]
    w = np.ones(xq.shape[:2]) if weight is None else np.asarray(weight(xq[..., 0], xq[..., 1]))
    coef = w * wq * H
    vals = (coef @ np.einsum("qi,qj->qij", phi, phi).reshape(len(wq), -1)).reshape(-1, p + 1, p + 1)
    n = mesh.coordinates.shape[0]
    if lumped:
        d = _lump(vals, coef.sum(axis=1), p)
        return _symmetric(sp.coo_array((d.ravel(), (edges.ravel(),) * 2), shape=(n, n)).tocsc())
    return _coo(edges, vals, n)
