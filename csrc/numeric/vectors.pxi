# Row moves and column norms of row-major (n, k) blocks of right-hand sides, and the
# residual maxima of a solve: numpy's take / fancy assignment / max(axis=0) go a row of k
# entries at a time, several times slower than these single passes for k > 1.


def gather_rows(const scalar[:, ::1] src, const idx_t[::1] index, scalar[:, ::1] out):
    """``out[i] = src[index[i]]`` for every row i of ``out``."""
    cdef idx_t i, j, k = src.shape[1], r
    if index.shape[0] != out.shape[0] or out.shape[1] != k:
        raise ValueError("gather_rows: shapes do not match")
    with nogil:
        for i in range(out.shape[0]):
            r = index[i]
            if r < 0 or r >= src.shape[0]:
                with gil:
                    raise IndexError(f"gather_rows: row {r} out of range")
            for j in range(k):
                out[i, j] = src[r, j]


ctypedef fused other:
    float
    double
    cfloat
    cdouble


def gather_rows_converted(const scalar[:, ::1] src, const idx_t[::1] index, other[:, ::1] out):
    """``out[i] = src[index[i]]`` converted to ``out``'s precision (real to real, complex
    to complex): mixed precision's move between the solution's rows and the factors'
    pivot order, one pass each way with no intermediate array."""
    cdef idx_t i, j, k = src.shape[1], r
    if index.shape[0] != out.shape[0] or out.shape[1] != k:
        raise ValueError("gather_rows_converted: shapes do not match")
    if scalar is float or scalar is double:
        if other is float or other is double:
            with nogil:
                for i in range(out.shape[0]):
                    r = index[i]
                    if r < 0 or r >= src.shape[0]:
                        with gil:
                            raise IndexError(f"gather_rows_converted: row {r} out of range")
                    for j in range(k):
                        out[i, j] = <other>src[r, j]
        else:
            raise TypeError("gather_rows_converted: real rows into a complex array")
    else:
        if other is cfloat or other is cdouble:
            with nogil:
                for i in range(out.shape[0]):
                    r = index[i]
                    if r < 0 or r >= src.shape[0]:
                        with gil:
                            raise IndexError(f"gather_rows_converted: row {r} out of range")
                    for j in range(k):
                        out[i, j] = <other>src[r, j]
        else:
            raise TypeError("gather_rows_converted: complex rows into a real array")


def scatter_rows_inplace(scalar[:, ::1] X, const idx_t[::1] index):
    """In place: row i of X moves to row ``index[i]`` (``index`` a permutation), cycle by
    cycle, with one row in hand: no second n x k array."""
    cdef idx_t n = X.shape[0], k = X.shape[1], i, j, c
    cdef bint bad = False
    cdef scalar t
    if index.shape[0] != n:
        raise ValueError("scatter_rows_inplace: shapes do not match")
    cdef unsigned char* done = <unsigned char*>calloc(max(n, 1), 1)
    cdef scalar* carry = <scalar*>malloc(max(k, 1) * sizeof(scalar))
    if done == NULL or carry == NULL:
        free(done)
        free(carry)
        raise MemoryError("scatter_rows_inplace: cannot allocate its work arrays")
    with nogil:
        for i in range(n):
            if done[i]:
                continue
            done[i] = 1
            for c in range(k):
                carry[c] = X[i, c]
            j = index[i]
            while True:
                if j < 0 or j >= n or (done[j] and j != i):
                    bad = True
                    break
                for c in range(k):  # row j takes the row in hand, which takes j's
                    t = X[j, c]
                    X[j, c] = carry[c]
                    carry[c] = t
                if j == i:
                    break
                done[j] = 1
                j = index[j]
            if bad:
                break
    free(done)
    free(carry)
    if bad:
        raise ValueError("scatter_rows_inplace: index is not a permutation")


def column_max_abs(const scalar[:, ::1] a):
    """Largest magnitude in each column; NaN where the column holds a NaN."""
    cdef idx_t i, j, k = a.shape[1]
    cdef double v
    res = np.zeros(k)
    cdef double[::1] out = res
    with nogil:
        for i in range(a.shape[0]):
            for j in range(k):
                v = mag(a[i, j])
                if v > out[j] or v != v:  # a NaN, once in, stays (nothing compares above it)
                    out[j] = v
    return res


cdef inline void keep_max(double* out, double v) noexcept nogil:
    if v > out[0] or v != v:  # a NaN, once in, stays (nothing compares above it)
        out[0] = v


def residual_maxima(const idx_t[::1] indptr, const idx_t[::1] indices, const scalar[::1] data,
                    bint conj, const scalar[:, ::1] x, const scalar[:, ::1] b):
    """Column maxima of |b − M x|, |x| and |b| (rows 0, 1, 2 of a 3 x k array), M given
    by rows in compressed form (its values conjugated when ``conj``).

    One pass over M, x and b with no residual array: the backward error of a solve
    for the price of a product. NaN where a column holds one.
    """
    cdef idx_t n = x.shape[0], k = x.shape[1], i, p, j, r, bad = -1
    cdef scalar a
    cdef scalar* acc
    if b.shape[0] != n or b.shape[1] != k or indptr.shape[0] != n + 1:
        raise ValueError("residual_maxima: shapes do not match")
    if indptr[0] != 0 or indptr[n] > indices.shape[0] or indptr[n] > data.shape[0]:
        raise ValueError("residual_maxima: indptr does not fit indices and data")
    res = np.zeros((3, k))
    cdef double[:, ::1] out = res
    acc = <scalar*>malloc(max(k, 1) * sizeof(scalar))
    if acc == NULL:
        raise MemoryError("cannot allocate the residual work buffer")
    # Each row's product first, then b minus it: the order of a product and a
    # subtraction, so the figures match those of b - A @ x (C's rows are sorted).
    with nogil:
        if k == 1:  # one right-hand side: the sum in a register
            for i in range(n):
                a = 0
                for p in range(indptr[i], indptr[i + 1]):
                    j = indices[p]
                    if j < 0 or j >= n:
                        bad = i
                        break
                    a = a + cj(data[p], conj) * x[j, 0]
                if bad >= 0:
                    break
                keep_max(&out[0, 0], mag(b[i, 0] - a))
                keep_max(&out[1, 0], mag(x[i, 0]))
                keep_max(&out[2, 0], mag(b[i, 0]))
        else:
            for i in range(n):
                for r in range(k):
                    acc[r] = 0
                for p in range(indptr[i], indptr[i + 1]):
                    j = indices[p]
                    if j < 0 or j >= n:
                        bad = i
                        break
                    a = cj(data[p], conj)
                    for r in range(k):
                        acc[r] += a * x[j, r]
                if bad >= 0:
                    break
                for r in range(k):
                    keep_max(&out[0, r], mag(b[i, r] - acc[r]))
                    keep_max(&out[1, r], mag(x[i, r]))
                    keep_max(&out[2, r], mag(b[i, r]))
    free(acc)
    if bad >= 0:
        raise ValueError(f"residual_maxima: row {bad} has a column index out of range")
    return res


def scaled_values(const idx_t[::1] indptr, const idx_t[::1] rows, const scalar[::1] data,
                  const double[::1] dr, const double[::1] dc, scalar[::1] out):
    """``out[p] = (data[p] dr[rows[p]]) dc[j]`` for each entry p of CSC column j: the
    values of ``diag(dr) A diag(dc)`` (rows renumbered by ``rows``) in one pass with no
    temporary arrays. Computed in double precision (double complex) and rounded to
    ``out``'s type at the end, as numpy's ``(data * dr[rows]) * dc[cols]`` then
    ``astype`` computes them, to the bit: a complex value times a real factor by the
    complex product's formula, the factor's imaginary part zero."""
    cdef idx_t n = indptr.shape[0] - 1, j, p, r
    cdef idx_t nnz = indptr[n] if n >= 0 else 0
    cdef double s, t, xr, xi, yr, yi
    if n < 0 or dc.shape[0] < n or rows.shape[0] < nnz or data.shape[0] < nnz:
        raise ValueError("scaled_values: the arrays do not describe one CSC matrix")
    if out.shape[0] < nnz:
        raise ValueError("scaled_values: out is too short")
    with nogil:
        for j in range(n):
            t = dc[j]
            for p in range(indptr[j], indptr[j + 1]):
                r = rows[p]
                if r < 0 or r >= dr.shape[0]:
                    with gil:
                        raise IndexError(f"scaled_values: row {r} out of range")
                s = dr[r]
                if scalar is float or scalar is double:
                    out[p] = <scalar>((<double>data[p] * s) * t)
                else:
                    xr, xi = data[p].real, data[p].imag
                    yr = xr * s - xi * 0.0
                    yi = xr * 0.0 + xi * s
                    xr = yr * t - yi * 0.0
                    xi = yr * 0.0 + yi * t
                    # A complex is its two parts in a row (C99, numpy).
                    if scalar is cfloat:
                        (<float*>&out[p])[0] = <float>xr
                        (<float*>&out[p])[1] = <float>xi
                    else:
                        (<double*>&out[p])[0] = xr
                        (<double*>&out[p])[1] = xi
