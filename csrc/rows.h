/* Solve kernels for narrow cblks and several right-hand sides, on row-major X.
 *
 * X holds nrhs entries per row, contiguous, so every loop below runs over one
 * row's right-hand sides and vectorizes. A cblk a few columns wide reads and
 * writes the rows it faces in place: no work product to scatter or gather, no
 * BLAS call, whose fixed cost and packing outweigh products this small.
 *
 * Where GCC >= 12 builds for x86-64, each kernel is also compiled for
 * x86-64-v3 (AVX2, FMA) and the loader picks the clone the CPU runs; without
 * FMA and 256-bit vectors these loops do a quarter of the work per instruction
 * and lose to OpenBLAS's kernels from about four columns on. Elsewhere they
 * are plain C for the baseline target.
 *
 * Panels are column-major: entry (i, j) of a panel a is a[i + j * lda]. The
 * conjugate ops never reach these kernels: solves with several right-hand
 * sides turn them into transposed ones on conj(X) first (numeric.pyx).
 */
#ifndef PASTIXPY_ROWS_H
#define PASTIXPY_ROWS_H

#include <stddef.h>

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12 && defined(__x86_64__) && \
    defined(__linux__)
#define PASTIXPY_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define PASTIXPY_CLONES
#endif

/* dst[i, :] -= sum_j a(i, j) x[j, :] for i < h, j < w: a blok's rows (h, stacked
 * in dst) get the panel's rows facing them times the cblk's solution x (w rows). */
#define PASTIXPY_ROWS_GEMM_N(T, S)                                                         \
    static PASTIXPY_CLONES void rows_gemm_n_##S(int h, int w, int nrhs, const T *a, int lda, \
                                                const T *restrict x, T *restrict dst)     \
    {                                                                                      \
        for (int i = 0; i < h; i++) {                                                      \
            T *restrict d = dst + (ptrdiff_t)i * nrhs;                                     \
            int j = 0;                                                                     \
            for (; j + 4 <= w; j += 4) {                                                   \
                const T *col = a + i + (ptrdiff_t)j * lda;                                 \
                const T a0 = col[0], a1 = col[lda], a2 = col[2 * lda], a3 = col[3 * lda];  \
                const T *x0 = x + (ptrdiff_t)j * nrhs, *x1 = x0 + nrhs;                    \
                const T *x2 = x1 + nrhs, *x3 = x2 + nrhs;                                  \
                for (int r = 0; r < nrhs; r++)                                             \
                    d[r] -= a0 * x0[r] + a1 * x1[r] + a2 * x2[r] + a3 * x3[r];             \
            }                                                                              \
            for (; j < w; j++) {                                                           \
                const T aj = a[i + (ptrdiff_t)j * lda];                                    \
                const T *xj = x + (ptrdiff_t)j * nrhs;                                     \
                for (int r = 0; r < nrhs; r++)                                             \
                    d[r] -= aj * xj[r];                                                    \
            }                                                                              \
        }                                                                                  \
    }

/* x[j, :] -= sum_i a(i, j) src[i, :] for j < w, i < h: the cblk's solution gets the
 * panel, transposed, times the rows of a blok it faces, four rows at a time. */
#define PASTIXPY_ROWS_GEMM_T(T, S)                                                         \
    static PASTIXPY_CLONES void rows_gemm_t_##S(int h, int w, int nrhs, const T *a, int lda, \
                                                const T *restrict src, T *restrict x)     \
    {                                                                                      \
        int i = 0;                                                                         \
        for (; i + 4 <= h; i += 4) {                                                       \
            const T *s0 = src + (ptrdiff_t)i * nrhs, *s1 = s0 + nrhs;                      \
            const T *s2 = s1 + nrhs, *s3 = s2 + nrhs;                                      \
            for (int j = 0; j < w; j++) {                                                  \
                const T *col = a + (ptrdiff_t)j * lda + i;                                 \
                const T a0 = col[0], a1 = col[1], a2 = col[2], a3 = col[3];                \
                T *restrict xj = x + (ptrdiff_t)j * nrhs;                                  \
                for (int r = 0; r < nrhs; r++)                                             \
                    xj[r] -= a0 * s0[r] + a1 * s1[r] + a2 * s2[r] + a3 * s3[r];            \
            }                                                                              \
        }                                                                                  \
        for (; i < h; i++) {                                                               \
            const T *si = src + (ptrdiff_t)i * nrhs;                                       \
            for (int j = 0; j < w; j++) {                                                  \
                const T ai = a[i + (ptrdiff_t)j * lda];                                    \
                T *restrict xj = x + (ptrdiff_t)j * nrhs;                                  \
                for (int r = 0; r < nrhs; r++)                                             \
                    xj[r] -= ai * si[r];                                                   \
            }                                                                              \
        }                                                                                  \
    }

/* X <- op(A)^-1 X for a small triangular w x w A (uplo 'L'/'U', ta 'N'/'T', diag
 * 'U' for a unit diagonal) and w rows of X: column by column for 'N' (row j is
 * final once divided, then leaves the rows it updates), by rows for 'T'. */
#define PASTIXPY_ROWS_TRSM(T, S)                                                           \
    static PASTIXPY_CLONES void rows_trsm_##S(char uplo, char ta, char diag, int w, int nrhs, \
                                              const T *a, int lda, T *x)                   \
    {                                                                                      \
        const int lower = uplo == 'L', unit = diag == 'U';                                 \
        for (int step = 0; step < w; step++) {                                             \
            /* 'N' on L and 'T' on U go down; the other two go up. */                      \
            const int k = (lower == (ta == 'N')) ? step : w - 1 - step;                    \
            T *restrict xk = x + (ptrdiff_t)k * nrhs;                                      \
            if (ta == 'N') {                                                               \
                const T *col = a + (ptrdiff_t)k * lda;                                     \
                if (!unit)                                                                 \
                    for (int r = 0; r < nrhs; r++)                                         \
                        xk[r] = xk[r] / col[k];                                            \
                for (int i = lower ? k + 1 : 0; i < (lower ? w : k); i++) {                \
                    T *restrict xi = x + (ptrdiff_t)i * nrhs;                              \
                    const T ai = col[i];                                                   \
                    for (int r = 0; r < nrhs; r++)                                         \
                        xi[r] -= ai * xk[r];                                               \
                }                                                                          \
            } else {                                                                       \
                const T *col = a + (ptrdiff_t)k * lda;                                     \
                for (int j = lower ? k + 1 : 0; j < (lower ? w : k); j++) {                \
                    const T *restrict xj = x + (ptrdiff_t)j * nrhs;                        \
                    const T aj = col[j];                                                   \
                    for (int r = 0; r < nrhs; r++)                                         \
                        xk[r] -= aj * xj[r];                                               \
                }                                                                          \
                if (!unit)                                                                 \
                    for (int r = 0; r < nrhs; r++)                                         \
                        xk[r] = xk[r] / col[k];                                            \
            }                                                                              \
        }                                                                                  \
    }

#define PASTIXPY_ROWS_KERNELS(T, S) PASTIXPY_ROWS_GEMM_N(T, S) PASTIXPY_ROWS_GEMM_T(T, S) \
    PASTIXPY_ROWS_TRSM(T, S)

PASTIXPY_ROWS_KERNELS(float, s)
PASTIXPY_ROWS_KERNELS(double, d)
PASTIXPY_ROWS_KERNELS(float _Complex, c)
PASTIXPY_ROWS_KERNELS(double _Complex, z)

/* The backward step's product for wide panels, X_k -= L21^T T (T: the rows the cblk
 * faces, gathered, h x nrhs), in double precision with AVX2 and FMA: four columns of
 * the panel times eight right-hand sides in registers while the rows stream by, each
 * column read down once per eight right-hand sides, nothing packed. OpenBLAS's gemm
 * packs the panel first, which for 16 right-hand sides costs about as much as the
 * arithmetic. pastixpy_panel_tdot_d returns 0 where the CPU or compiler lacks them
 * (the caller then calls gemm). */
#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>

__attribute__((target("avx2,fma"))) static void pastixpy_panel_tdot_d_avx2(
    int h, int w, int nrhs, const double *a, int lda, const double *src, double *x)
{
    int j = 0;
    for (; j + 4 <= w; j += 4) {
        const double *c0 = a + (ptrdiff_t)j * lda, *c1 = c0 + lda, *c2 = c1 + lda, *c3 = c2 + lda;
        int r = 0;
        for (; r + 8 <= nrhs; r += 8) {
            __m256d s00 = _mm256_setzero_pd(), s01 = s00, s10 = s00, s11 = s00;
            __m256d s20 = s00, s21 = s00, s30 = s00, s31 = s00;
            const double *si = src + r;
            for (int i = 0; i < h; i++, si += nrhs) {
                const __m256d v0 = _mm256_loadu_pd(si), v1 = _mm256_loadu_pd(si + 4);
                __m256d b = _mm256_broadcast_sd(c0 + i);
                s00 = _mm256_fmadd_pd(b, v0, s00);
                s01 = _mm256_fmadd_pd(b, v1, s01);
                b = _mm256_broadcast_sd(c1 + i);
                s10 = _mm256_fmadd_pd(b, v0, s10);
                s11 = _mm256_fmadd_pd(b, v1, s11);
                b = _mm256_broadcast_sd(c2 + i);
                s20 = _mm256_fmadd_pd(b, v0, s20);
                s21 = _mm256_fmadd_pd(b, v1, s21);
                b = _mm256_broadcast_sd(c3 + i);
                s30 = _mm256_fmadd_pd(b, v0, s30);
                s31 = _mm256_fmadd_pd(b, v1, s31);
            }
            double *x0 = x + (ptrdiff_t)j * nrhs + r, *x1 = x0 + nrhs, *x2 = x1 + nrhs;
            double *x3 = x2 + nrhs;
            _mm256_storeu_pd(x0, _mm256_sub_pd(_mm256_loadu_pd(x0), s00));
            _mm256_storeu_pd(x0 + 4, _mm256_sub_pd(_mm256_loadu_pd(x0 + 4), s01));
            _mm256_storeu_pd(x1, _mm256_sub_pd(_mm256_loadu_pd(x1), s10));
            _mm256_storeu_pd(x1 + 4, _mm256_sub_pd(_mm256_loadu_pd(x1 + 4), s11));
            _mm256_storeu_pd(x2, _mm256_sub_pd(_mm256_loadu_pd(x2), s20));
            _mm256_storeu_pd(x2 + 4, _mm256_sub_pd(_mm256_loadu_pd(x2 + 4), s21));
            _mm256_storeu_pd(x3, _mm256_sub_pd(_mm256_loadu_pd(x3), s30));
            _mm256_storeu_pd(x3 + 4, _mm256_sub_pd(_mm256_loadu_pd(x3 + 4), s31));
        }
        if (r + 4 <= nrhs) {
            __m256d s0 = _mm256_setzero_pd(), s1 = s0, s2 = s0, s3 = s0;
            const double *si = src + r;
            for (int i = 0; i < h; i++, si += nrhs) {
                const __m256d v = _mm256_loadu_pd(si);
                s0 = _mm256_fmadd_pd(_mm256_broadcast_sd(c0 + i), v, s0);
                s1 = _mm256_fmadd_pd(_mm256_broadcast_sd(c1 + i), v, s1);
                s2 = _mm256_fmadd_pd(_mm256_broadcast_sd(c2 + i), v, s2);
                s3 = _mm256_fmadd_pd(_mm256_broadcast_sd(c3 + i), v, s3);
            }
            double *x0 = x + (ptrdiff_t)j * nrhs + r, *x1 = x0 + nrhs, *x2 = x1 + nrhs;
            double *x3 = x2 + nrhs;
            _mm256_storeu_pd(x0, _mm256_sub_pd(_mm256_loadu_pd(x0), s0));
            _mm256_storeu_pd(x1, _mm256_sub_pd(_mm256_loadu_pd(x1), s1));
            _mm256_storeu_pd(x2, _mm256_sub_pd(_mm256_loadu_pd(x2), s2));
            _mm256_storeu_pd(x3, _mm256_sub_pd(_mm256_loadu_pd(x3), s3));
            r += 4;
        }
        for (; r < nrhs; r++)
            for (int jj = 0; jj < 4; jj++) {
                const double *col = c0 + (ptrdiff_t)jj * lda;
                double sum = 0;
                for (int i = 0; i < h; i++)
                    sum += col[i] * src[(ptrdiff_t)i * nrhs + r];
                x[(ptrdiff_t)(j + jj) * nrhs + r] -= sum;
            }
    }
    if (j < w)
        rows_gemm_t_d(h, w - j, nrhs, a + (ptrdiff_t)j * lda, lda, src, x + (ptrdiff_t)j * nrhs);
}

/* Set once, when the module is imported, by pastixpy_detect_cpu. */
static int pastixpy_avx2_fma = 0;

static void pastixpy_detect_cpu(void)
{
    __builtin_cpu_init();
    pastixpy_avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

/* Rows summed in registers before x takes their sum: as gemm's blocking of its inner
 * dimension does, this keeps the rounding of sums over thousands of rows (several times
 * the backward error when summed whole) to that of sums of a few hundred, and the
 * block of T in cache while all of the panel's columns pass over it. */
#define PASTIXPY_TDOT_ROWS 256

static int pastixpy_panel_tdot_d(int h, int w, int nrhs, const double *a, int lda,
                                 const double *src, double *x)
{
    if (!pastixpy_avx2_fma || nrhs < 4)
        return 0;
    for (int i0 = 0; i0 < h; i0 += PASTIXPY_TDOT_ROWS) {
        const int rows = h - i0 < PASTIXPY_TDOT_ROWS ? h - i0 : PASTIXPY_TDOT_ROWS;
        pastixpy_panel_tdot_d_avx2(rows, w, nrhs, a + i0, lda, src + (ptrdiff_t)i0 * nrhs, x);
    }
    return 1;
}
#else
static void pastixpy_detect_cpu(void) {}

static int pastixpy_panel_tdot_d(int h, int w, int nrhs, const double *a, int lda,
                                 const double *src, double *x)
{
    return 0;
}
#endif

#endif
