"""Build the Cython extension modules of pastixpy.

Kernels live in ``csrc/`` (numeric and symbolic; the numeric module's source is split
by concern into ``csrc/numeric/*.pxi``) and ``ordering/`` (ordering engine); each
``.pyx`` becomes ``pastixpy._<name>``. Release builds optimize and turn Cython's
bounds checks off; ``PASTIXPY_DEBUG=1`` turns them on.
"""

import os
import tempfile
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

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
        include_dirs=[np.get_include(), "csrc"],
        depends=[str(path) for path in [*Path("csrc").glob("*.h"), *Path("csrc").glob("*/*.pxi")]],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        extra_compile_args=(["-O0", "-g"] if DEBUG else ["-O3"])
        + (["-fopenmp"] if name in OPENMP else []),
        extra_link_args=["-fopenmp"] if name in OPENMP else [],
    )
    for name, src in SOURCES.items()
    if Path(src).exists()
]

#: Compiler flags used where the compiler takes them. ``-fcx-fortran-rules``: complex
#: products inline, by the textbook formula (as Fortran and LAPACK compute them),
#: instead of a libgcc call per product that recovers infinities from NaN parts, which
#: inputs checked finite never need; division keeps its range reduction (see
#: docs/design.md for what it gains).
OPTIONAL_FLAGS = [] if DEBUG else ["-fcx-fortran-rules"]


class BuildExt(build_ext):
    """build_ext adding the :data:`OPTIONAL_FLAGS` this compiler accepts."""

    def build_extensions(self):
        flags = [flag for flag in OPTIONAL_FLAGS if self._accepts(flag)]
        for ext in self.extensions:
            ext.extra_compile_args = list(ext.extra_compile_args) + flags
        super().build_extensions()

    def _accepts(self, flag):
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / "flag.c"
            src.write_text("int main(void) { return 0; }\n")
            try:
                self.compiler.compile([str(src)], output_dir=tmp, extra_postargs=[flag])
            except Exception:  # CompileError, or a compiler that rejects it otherwise
                return False
        return True


setup(
    cmdclass={"build_ext": BuildExt},
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
    ),
)
