"""Fill of the METIS path against METIS's own nested dissection on a 3D Laplacian."""

import warnings

import numpy as np
import pymetis
import pytest

import pastixpy
from pastixpy.gallery import laplacian


@pytest.mark.parametrize("size", [30, 60])
def test_metis_fill_matches_pymetis_nested_dissection(size):
    A = laplacian((size, size, size))
    an = pastixpy.analyze(A, ordering="metis")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        perm, _ = pymetis.nested_dissection(pymetis.CSRAdjacency(an.xadj, an.adjncy))
    reference = pastixpy.analyze(A, ordering=np.asarray(perm)).stats["nnz_L"]
    assert an.stats["nnz_L"] <= 1.05 * reference
    assert an.stats["nnz_L_stored"] / an.stats["nnz_L"] <= 1.3
    an.check()
