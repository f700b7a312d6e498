# Scalar types: the four precisions as one fused type, magnitudes and conjugation.

import numpy as np

cimport numpy as cnp
from cpython.exc cimport PyErr_CheckSignals
from cpython.ref cimport PyObject
from cython.parallel cimport parallel, prange, threadid
from libc.math cimport fabs, sqrt
from libc.stdint cimport INT64_MAX, int8_t, int32_t, int64_t
from libc.stdlib cimport calloc, free, malloc

cnp.import_array()

# OpenMP, or a team of one where the compiler has none (platform.h says why).
cdef extern from "platform.h" nogil:
    ctypedef struct omp_lock_t:
        pass
    void omp_init_lock(omp_lock_t*)
    void omp_destroy_lock(omp_lock_t*)
    void omp_set_lock(omp_lock_t*)
    void omp_unset_lock(omp_lock_t*)
    int omp_test_lock(omp_lock_t*)
    int omp_get_num_threads()
    double omp_get_wtime()
    int PASTIXPY_OPENMP
    int pastixpy_yield()
    void pastixpy_prefetch(const void* addr, int rw, int locality)

#: Whether the kernels were built with OpenMP: without it they run on one thread.
OPENMP = bool(PASTIXPY_OPENMP)

ctypedef int64_t idx_t
ctypedef float complex cfloat
ctypedef double complex cdouble

ctypedef fused scalar:
    float
    double
    cfloat
    cdouble

# Codes of the four scalar types (Storage.dtype_code), in the fused type's order.
cdef enum:
    FLOAT32 = 0
    FLOAT64 = 1
    COMPLEX64 = 2
    COMPLEX128 = 3

DTYPE_CODES = {
    np.dtype(np.float32): FLOAT32,
    np.dtype(np.float64): FLOAT64,
    np.dtype(np.complex64): COMPLEX64,
    np.dtype(np.complex128): COMPLEX128,
}


cdef inline int scalar_code(scalar* dummy) noexcept nogil:
    """The code of the fused type a specialization runs on (the argument is not read)."""
    if scalar is float:
        return FLOAT32
    elif scalar is double:
        return FLOAT64
    elif scalar is cfloat:
        return COMPLEX64
    else:
        return COMPLEX128


cdef extern from "magnitude.h" nogil:
    double pastixpy_cabs(double re, double im)
    double pastixpy_cabsf(float re, float im)


cdef inline double mag(scalar x) noexcept nogil:
    """|x|, range-safe (magnitude.h: sqrt(re² + im²) where the squares neither
    underflow nor overflow, hypot elsewhere)."""
    if scalar is float or scalar is double:
        return fabs(x)
    elif scalar is cfloat:
        return pastixpy_cabsf(x.real, x.imag)
    else:
        return pastixpy_cabs(x.real, x.imag)


cdef inline scalar cj(scalar x, bint conj) noexcept nogil:
    """x, conjugated when ``conj`` (Hermitian kinds)."""
    if scalar is cfloat or scalar is cdouble:
        if conj:
            return x.conjugate()
    return x


cdef inline void swap(scalar* x, scalar* y) noexcept nogil:
    cdef scalar t = x[0]
    x[0] = y[0]
    y[0] = t
