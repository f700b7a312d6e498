"""Build the Cython extension modules of pastixpy.

Kernels live in ``csrc/`` (numeric and symbolic; the numeric module's source is split
by concern into ``csrc/numeric/*.pxi``) and ``ordering/`` (ordering engine); each
``.pyx`` becomes ``pastixpy._<name>``. Release builds optimize and turn Cython's
bounds checks off; ``PASTIXPY_DEBUG=1`` turns them on.

A build is incremental and parallel: a module is translated again only when one of
*our* sources changed (Cython's own staleness check also looks at the ``.pxd`` files
of numpy, scipy and Cython, which pip installs afresh for every isolated build, so
``pip install .`` followed by ``pip install ".[test]"`` would translate and compile
everything twice), and the C files compile on every core (``PASTIXPY_JOBS`` to cap).
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
    "pastixpy._simplicial": "csrc/simplicial.pyx",
    "pastixpy._selinv": "csrc/selinv.pyx",
    "pastixpy._graph": "ordering/graph.pyx",
    "pastixpy._amd": "ordering/amd.pyx",
    "pastixpy._matching": "ordering/matching.pyx",
}

#: Extensions whose kernels run on OpenMP threads.
OPENMP = {"pastixpy._numeric"}

BUILD_DIR = Path("build/cython-debug" if DEBUG else "build/cython")
JOBS = int(os.environ.get("PASTIXPY_JOBS", "0")) or os.cpu_count() or 1
#: Our own files every module may include: a change to one translates every module.
SHARED_DEPENDS = sorted(
    str(path) for path in [*Path("csrc").glob("*.h"), *Path("csrc").glob("*/*.pxi")]
)


def translated(src):
    """The C file Cython made of ``src``, if it is newer than every source of ours."""
    c_file = BUILD_DIR / Path(src).with_suffix(".c")
    if DEBUG or not c_file.exists():
        return None
    ours = [src, *SHARED_DEPENDS, __file__]
    if max(os.path.getmtime(path) for path in ours) >= os.path.getmtime(c_file):
        return None
    return str(c_file)


extensions = [
    Extension(
        name,
        [translated(src) or src],
        include_dirs=[np.get_include(), "csrc"],
        depends=SHARED_DEPENDS,
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

    def finalize_options(self):
        super().finalize_options()
        if not self.parallel:
            self.parallel = JOBS

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


to_translate = [ext for ext in extensions if ext.sources[0].endswith(".pyx")]
if to_translate:
    fresh = cythonize(
        to_translate,
        language_level=3,
        compiler_directives={
            "boundscheck": DEBUG,
            "wraparound": DEBUG,
            "initializedcheck": DEBUG,
            "cdivision": not DEBUG,
        },
        build_dir=str(BUILD_DIR),
        nthreads=JOBS if len(to_translate) > 1 else 0,
    )
    by_name = {ext.name: ext for ext in fresh}
    extensions = [by_name.get(ext.name, ext) for ext in extensions]

setup(cmdclass={"build_ext": BuildExt}, ext_modules=extensions)
