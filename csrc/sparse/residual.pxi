# The residual and backward error of a solve with a CSC matrix, shared by the simplicial
# kernels (csrc/simplicial.pyx, csrc/simplicial_ldl.pyx): included, so that each module
# compiles them for its own fused ``scalar_t``. The includer defines ``idx_t`` (int64),
# ``scalar_t`` (double, double complex) and cimports fabs, isfinite and INFINITY.

cdef extern from "magnitude.h" nogil:
    double pastixpy_cabs(double re, double im)


cdef inline double magnitude(scalar_t v) noexcept nogil:
    if scalar_t is double:
        return fabs(v)
    else:
        return pastixpy_cabs(v.real, v.imag)  # range-safe, hypot only where needed


cdef double row_norm(idx_t n, const idx_t* Ap, const idx_t* Ai, const scalar_t* Ax,
                     double* rowsum) noexcept nogil:
    """‖A‖∞; rowsum: n of workspace."""
    cdef idx_t i, p
    cdef double norm_a = 0.0
    for i in range(n):
        rowsum[i] = 0.0
    for p in range(Ap[n]):
        rowsum[Ai[p]] += magnitude(Ax[p])
    for i in range(n):
        if rowsum[i] > norm_a:
            norm_a = rowsum[i]
    return norm_a


cdef double residual(idx_t n, const idx_t* Ap, const idx_t* Ai, const scalar_t* Ax,
                     double norm_a, const scalar_t* x, const scalar_t* b, scalar_t* r,
                     double* growth) noexcept nogil:
    """r = b − A x and its backward error ‖r‖∞ / (‖A‖∞ ‖x‖∞ + ‖b‖∞) (inf where anything
    is not finite, 0 where r = 0); ``growth``: ‖A‖∞ ‖x‖∞ / ‖b‖∞ (0 where x = 0)."""
    cdef idx_t i, j, p, p1
    cdef double xmax = 0.0, bmax = 0.0, rmax = 0.0, den, v, e
    cdef bint finite = True
    cdef scalar_t xj
    for i in range(n):
        r[i] = b[i]
        bmax = max(bmax, magnitude(b[i]))
    for j in range(n):
        xj = x[j]
        v = magnitude(xj)
        finite = finite and isfinite(v)
        xmax = max(xmax, v)
        p1 = Ap[j + 1]
        for p in range(Ap[j], p1):
            r[Ai[p]] -= Ax[p] * xj
    for i in range(n):
        v = magnitude(r[i])
        finite = finite and isfinite(v)
        rmax = max(rmax, v)
    if xmax == 0.0:
        growth[0] = 0.0
    elif bmax == 0.0:
        growth[0] = INFINITY
    else:
        growth[0] = norm_a * xmax / bmax
    den = norm_a * xmax + bmax
    if not finite:
        return INFINITY  # a NaN or Inf anywhere is no solution at all
    if rmax == 0.0:
        return 0.0
    if not isfinite(den) and xmax > 0.0:
        # ‖A‖‖x‖ beyond the largest float: x's norm divided out of both terms.
        e = (rmax / xmax) / (norm_a + bmax / xmax)
    else:
        e = rmax / den
    return e if isfinite(e) else INFINITY
