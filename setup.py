"""Build the Cython extension modules of pastixpy.

Kernels live in ``csrc/`` (numeric and symbolic) and ``ordering/`` (ordering
engine); each ``.pyx`` becomes ``pastixpy._<name>``. Release builds optimize
and turn Cython's bounds checks off; ``PASTIXPY_DEBUG=1`` turns them on.
"""

import os
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("PASTIXPY_DEBUG", "0") not in ("", "0")

SOURCES = {
    "pastixpy._symbolic": "csrc/symbolic.pyx",
    "pastixpy._numeric": "csrc/numeric.pyx",
    "pastixpy._graph": "ordering/graph.pyx",
    "pastixpy._amd": "ordering/amd.pyx",
    "pastixpy._matching": "ordering/matching.pyx",
}

#: Extensions whose kernels run on OpenMP threads.
OPENMP = {"pastixpy._numeric"}

extensions = [
    Extension(
        name,
        [src],
        include_dirs=[np.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        extra_compile_args=(["-O0", "-g"] if DEBUG else ["-O3"])
        + (["-fopenmp"] if name in OPENMP else []),
        extra_link_args=["-fopenmp"] if name in OPENMP else [],
    )
    for name, src in SOURCES.items()
    if Path(src).exists()
]

setup(
    ext_modules=cythonize(
        extensions,
        language_level=3,
        compiler_directives={
            "boundscheck": DEBUG,
            "wraparound": DEBUG,
            "initializedcheck": DEBUG,
            "cdivision": not DEBUG,
        },
        build_dir="build/cython-debug" if DEBUG else "build/cython",
    )
)
