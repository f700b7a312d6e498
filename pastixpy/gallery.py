"""Generated test problems: finite-difference Laplacians and multi-dof variants.

Used by the examples, the benchmarks, the tests and the CLI's ``--example``.
"""

import numpy as np
import scipy.sparse as sp


def laplacian(shape, dtype=np.float64):
    """Finite-difference Laplacian with Dirichlet boundaries on a regular grid.

    5-point in 2D, 7-point in 3D (and the 3-point stencil in 1D); symmetric
    positive definite, in CSC format.

    Parameters
    ----------
    shape : tuple of int
        Grid points per dimension, e.g. ``(60, 60, 60)``.

    Examples
    --------
    >>> laplacian((3, 3)).diagonal()
    array([4., 4., 4., 4., 4., 4., 4., 4., 4.])
    """
    shape = tuple(int(s) for s in shape)
    if not shape or min(shape) < 1:
        raise ValueError(f"grid shape must have positive sizes, got {shape}")
    ops = []
    for axis, m in enumerate(shape):
        t = sp.diags_array(
            [-np.ones(m - 1), 2 * np.ones(m), -np.ones(m - 1)], offsets=[-1, 0, 1], dtype=dtype
        )
        term = sp.eye_array(1, dtype=dtype)
        for other, s in enumerate(shape):
            term = sp.kron(term, t if other == axis else sp.eye_array(s, dtype=dtype))
        ops.append(term)
    return sp.csc_array(sum(ops[1:], ops[0]))


def vector_laplacian(shape, dofs=3, coupling=0.25, dtype=np.float64):
    """A multi-dof SPD operator: ``dofs`` unknowns per grid node, fully coupled.

    Kronecker product of the scalar :func:`laplacian` with a dense SPD
    ``dofs x dofs`` block (ones on the diagonal, ``coupling`` elsewhere), ordered
    node by node like the unknowns of a linear-elasticity FEM matrix: the
    graph has groups of ``dofs`` indistinguishable vertices.
    """
    block = np.full((dofs, dofs), coupling, dtype=dtype) + (1 - coupling) * np.eye(dofs)
    return sp.csc_array(sp.kron(laplacian(shape, dtype), sp.csr_array(block)))
