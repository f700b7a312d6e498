"""Build the Cython extension modules of pastixpy.

Kernels live in ``csrc/`` (numeric and symbolic; the numeric module's source is split
by concern into ``csrc/numeric/*.pxi``) and ``ordering/`` (ordering engine); each
``.pyx`` becomes ``pastixpy._<name>``. Release builds optimize and turn Cython's
bounds checks off; ``PASTIXPY_DEBUG=1`` turns them on.

OpenMP is used where the compiler has it: gcc and clang take ``-fopenmp``, Apple's
clang ``-Xpreprocessor -fopenmp`` with libomp (Homebrew's, found through
``brew --prefix libomp``, ``LIBOMP_PREFIX`` or ``CPPFLAGS``/``LDFLAGS``), MSVC
``/openmp``. Each is tried by compiling and linking a small OpenMP program; where
none works the kernels build without it, one line says so, and the package runs them on one thread
(``pastixpy._numeric.OPENMP``, ``stats["openmp"]``). ``PASTIXPY_OPENMP=0`` builds without
OpenMP on purpose; ``PASTIXPY_OPENMP=1`` makes its absence an error.

A build is incremental and parallel: a module is translated again only when one of
*our* sources changed (Cython's own staleness check also looks at the ``.pxd`` files
of numpy, scipy and Cython, which pip installs afresh for every isolated build, so
``pip install .`` followed by ``pip install ".[test]"`` would translate and compile
everything twice), and the C files compile on every core (``PASTIXPY_JOBS`` to cap).
"""

import contextlib
import os
import shutil
import subprocess
import sys
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
    "pastixpy._simplicial_ldl": "csrc/simplicial_ldl.pyx",
    "pastixpy._selinv": "csrc/selinv.pyx",
    "pastixpy._graph": "ordering/graph.pyx",
    "pastixpy._amd": "ordering/amd.pyx",
    "pastixpy._matching": "ordering/matching.pyx",
    "pastixpy._colamd": "ordering/colamd.pyx",
}

#: Extensions whose kernels run on OpenMP threads.
OPENMP = {"pastixpy._numeric"}

BUILD_DIR = Path("build/cython-debug" if DEBUG else "build/cython")
JOBS = int(os.environ.get("PASTIXPY_JOBS", "0")) or os.cpu_count() or 1
#: Our own files every module may include: a change to one translates every module.
SHARED_DEPENDS = sorted(
    str(path) for path in [*Path("csrc").glob("*.h"), *Path("csrc").glob("*/*.pxi")]
)


#: Commands that read the metadata or pack the sources (pip asks for the metadata before
#: every build; ``python -m build --sdist``): they translate nothing, and the sdist
#: takes the .pyx sources (MANIFEST.in), never a C file of ours from ``build/``.
PACKING = {"egg_info", "dist_info", "sdist"}
BUILDING = {"build", "build_ext", "bdist_wheel", "install", "develop", "editable_wheel"}
packing = bool(PACKING & set(sys.argv[1:])) and not BUILDING & set(sys.argv[1:])


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
        [src if packing else translated(src) or src],
        include_dirs=[np.get_include(), "csrc"],
        depends=SHARED_DEPENDS,
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    )
    for name, src in SOURCES.items()
    if Path(src).exists()
]

#: ``PASTIXPY_OPENMP``: "auto" (OpenMP where the compiler has it), "0" or "1".
OPENMP_WANTED = os.environ.get("PASTIXPY_OPENMP", "auto").strip().lower() or "auto"

OPENMP_TEST = """
#include <omp.h>
int main(void) {
    int n = 0;
    omp_lock_t lock;
    omp_init_lock(&lock);
    #pragma omp parallel reduction(+:n)
    n += 1;
    omp_destroy_lock(&lock);
    return n > 0 ? 0 : 1;
}
"""

#: Compiler flags used where the compiler takes them. ``-fcx-fortran-rules``: complex
#: products inline, by the textbook formula (as Fortran and LAPACK compute them),
#: instead of a libgcc call per product that recovers infinities from NaN parts, which
#: inputs checked finite never need; division keeps its range reduction (see
#: docs/design.md for what it gains).
OPTIONAL_FLAGS = [] if DEBUG else ["-fcx-fortran-rules"]


@contextlib.contextmanager
def _quiet():
    """Silence the compiler's own output (a probe that fails is an answer, not an
    error to show): file descriptors 1 and 2 point to the null device meanwhile."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 1)
        os.dup2(null.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)


class BuildExt(build_ext):
    """build_ext with this compiler's flags: optimization, the :data:`OPTIONAL_FLAGS`
    it accepts, and OpenMP's where it has it (:meth:`_openmp_flags`)."""

    def finalize_options(self):
        super().finalize_options()
        if not self.parallel:
            self.parallel = JOBS

    def build_extensions(self):
        msvc = self.compiler.compiler_type == "msvc"
        if msvc:
            base = ["/Od", "/Zi"] if DEBUG else ["/O2"]
        else:
            base = ["-O0", "-g"] if DEBUG else ["-O3"]
        base += [flag for flag in OPTIONAL_FLAGS if not msvc and self._accepts([flag])]
        openmp = self._openmp_flags(msvc)
        for ext in self.extensions:
            compile_args, link_args = openmp if ext.name in OPENMP else ([], [])
            ext.extra_compile_args = list(ext.extra_compile_args) + base + compile_args
            ext.extra_link_args = list(ext.extra_link_args) + link_args
        super().build_extensions()

    def _openmp_flags(self, msvc):
        """(compile, link) flags that build :data:`OPENMP_TEST` with this compiler, the
        first of the candidates that does; ([], []) with a notice where none does."""
        if OPENMP_WANTED in ("0", "no", "off", "false"):
            print("pastixpy: without OpenMP (PASTIXPY_OPENMP=0): kernels run on one thread")
            return [], []
        for compile_args, link_args in self._openmp_candidates(msvc):
            if self._accepts(compile_args, link_args, OPENMP_TEST):
                return compile_args, link_args
        compiler = (getattr(self.compiler, "compiler_so", None) or [self.compiler.compiler_type])[0]
        message = (
            f"no OpenMP found for {compiler}: "
            "pastixpy's kernels will run on one thread (install libomp, e.g. `brew install "
            "libomp`, for threads; PASTIXPY_OPENMP=0 silences this)"
        )
        if OPENMP_WANTED in ("1", "yes", "on", "true"):
            raise SystemExit(f"pastixpy: PASTIXPY_OPENMP=1 but {message}")
        print(f"pastixpy: {message}", file=sys.stderr)
        return [], []

    @staticmethod
    def _openmp_candidates(msvc):
        if msvc:
            yield ["/openmp"], []
            return
        yield ["-fopenmp"], ["-fopenmp"]
        # Apple's clang has no -fopenmp driver flag: the preprocessor takes it, and
        # libomp (Homebrew's: not on the default paths) provides omp.h and the runtime.
        prefixes = [os.environ.get("LIBOMP_PREFIX", "")]
        brew = shutil.which("brew")
        if brew:
            try:
                prefixes.append(
                    subprocess.run(
                        [brew, "--prefix", "libomp"], capture_output=True, text=True, check=True
                    ).stdout.strip()
                )
            except (OSError, subprocess.CalledProcessError):
                pass
        for prefix in [p for p in prefixes if p] + [""]:
            inc = [f"-I{prefix}/include"] if prefix else []
            lib = [f"-L{prefix}/lib", f"-Wl,-rpath,{prefix}/lib"] if prefix else []
            yield ["-Xpreprocessor", "-fopenmp", *inc], [*lib, "-lomp"]

    def _accepts(self, compile_args, link_args=None, program="int main(void) { return 0; }\n"):
        """Whether this compiler compiles ``program`` with ``compile_args`` (and links it
        with ``link_args`` when given)."""
        with tempfile.TemporaryDirectory() as tmp, _quiet():
            src = Path(tmp) / "probe.c"
            src.write_text(program)
            try:
                objects = self.compiler.compile(
                    [str(src)], output_dir=tmp, extra_postargs=compile_args
                )
                if link_args is not None:
                    self.compiler.link_executable(
                        objects, "probe", output_dir=tmp, extra_postargs=link_args
                    )
            except Exception:  # CompileError, LinkError, or a compiler that fails otherwise
                return False
        return True


to_translate = [ext for ext in extensions if ext.sources[0].endswith(".pyx")]
if to_translate and not packing:
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
