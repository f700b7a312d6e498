/* Is gemm's operand packing worth removing from the LLT updates?
 *
 * One cblk's updates, as numeric.pyx issues them: a panel of R + w rows and w
 * columns (column-major), bloks of h rows below its diagonal block, and for each
 * blok b at row cb the product C_b -= P[cb:, :] P[cb:cb+h, :]^T ((R + w - cb) x h).
 * Timed two ways, same flops, same results:
 *   openblas  one dgemm per blok (scipy's OpenBLAS, which pastixpy calls): every
 *             call packs the rows from cb down again;
 *   packed    the panel packed once for the whole cblk into 8-row slivers, each
 *             blok's h rows into 6-column slivers, and an 8 x 6 AVX2/FMA kernel
 *             (12 accumulators, broadcasts from the L2-resident blok, the sliver
 *             in L1; k blocked by 256).
 * Prints GFLOP/s of both and their ratio, medians over the repetitions.
 *
 * Build and run (x86-64 with AVX2 and FMA, the scipy wheel's OpenBLAS):
 *   LIB=$(python -c "import glob,os,scipy;print(glob.glob(os.path.join(os.path.dirname(scipy.__file__),'..','scipy.libs','libscipy_openblas*.so'))[0])")
 *   gcc -O2 -o /tmp/packed_gemm benchmarks/packed_gemm.c "$LIB" -Wl,-rpath,$(dirname "$LIB")
 *   env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 /tmp/packed_gemm 9
 */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern void scipy_dgemm_(const char*, const char*, const int*, const int*, const int*,
                         const double*, const double*, const int*, const double*, const int*,
                         const double*, double*, const int*);

enum { MR = 8, NR = 6, KC = 256 };

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* c (8 x 6, column-major, ldc) -= a b^T over k: a packed 8 per k, b 6 per k. */
__attribute__((target("avx2,fma"))) static void kernel(int k, const double* restrict a,
                                                      const double* restrict b, double* c,
                                                      long ldc) {
    __m256d c0 = _mm256_setzero_pd(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0;
    __m256d d0 = c0, d1 = c0, d2 = c0, d3 = c0, d4 = c0, d5 = c0, x;
    for (int p = 0; p < k; p++, a += MR, b += NR) {
        __m256d lo = _mm256_load_pd(a), hi = _mm256_load_pd(a + 4);
        x = _mm256_broadcast_sd(b + 0); c0 = _mm256_fmadd_pd(lo, x, c0); d0 = _mm256_fmadd_pd(hi, x, d0);
        x = _mm256_broadcast_sd(b + 1); c1 = _mm256_fmadd_pd(lo, x, c1); d1 = _mm256_fmadd_pd(hi, x, d1);
        x = _mm256_broadcast_sd(b + 2); c2 = _mm256_fmadd_pd(lo, x, c2); d2 = _mm256_fmadd_pd(hi, x, d2);
        x = _mm256_broadcast_sd(b + 3); c3 = _mm256_fmadd_pd(lo, x, c3); d3 = _mm256_fmadd_pd(hi, x, d3);
        x = _mm256_broadcast_sd(b + 4); c4 = _mm256_fmadd_pd(lo, x, c4); d4 = _mm256_fmadd_pd(hi, x, d4);
        x = _mm256_broadcast_sd(b + 5); c5 = _mm256_fmadd_pd(lo, x, c5); d5 = _mm256_fmadd_pd(hi, x, d5);
    }
    __m256d cs[6] = {c0, c1, c2, c3, c4, c5}, ds[6] = {d0, d1, d2, d3, d4, d5};
    for (int j = 0; j < NR; j++) {
        double* q = c + j * ldc;
        _mm256_storeu_pd(q, _mm256_sub_pd(_mm256_loadu_pd(q), cs[j]));
        _mm256_storeu_pd(q + 4, _mm256_sub_pd(_mm256_loadu_pd(q + 4), ds[j]));
    }
}

/* Rows [r0, r1) and columns [k0, k0 + k) of p (ld m) into slivers of s rows, k-major. */
static void pack(const double* p, int m, int r0, int r1, int k0, int k, int s, double* out) {
    for (int r = r0; r < r1; r += s)
        for (int q = 0; q < k; q++, out += s) {
            const double* col = p + (long)(k0 + q) * m + r;
            for (int i = 0; i < s; i++) out[i] = r + i < r1 ? col[i] : 0.0;
        }
}

static int by_value(const void* x, const void* y) {
    double a = *(const double*)x, b = *(const double*)y;
    return (a > b) - (a < b);
}

static void run(int below, int w, int h, int reps) {
    int m = below + w, nb = below / h;
    long csize = (long)m * h * nb;
    double *P = aligned_alloc(64, sizeof(double) * (long)m * w);
    double *C1 = aligned_alloc(64, sizeof(double) * csize), *C2 = aligned_alloc(64, sizeof(double) * csize);
    double *Ap = aligned_alloc(64, sizeof(double) * (long)below * w);
    double *Bp = aligned_alloc(64, sizeof(double) * (long)h * KC);
    double mone = -1, one = 1, flops = 0, t_blas[64], t_packed[64], worst = 0;
    for (long i = 0; i < (long)m * w; i++) P[i] = (double)rand() / RAND_MAX - 0.5;
    memset(C1, 0, sizeof(double) * csize);
    memset(C2, 0, sizeof(double) * csize);
    for (int b = 0; b < nb; b++) flops += 2.0 * (below - b * h) * h * w;
    for (int rep = 0; rep < reps; rep++) {
        double t0 = now();
        for (int b = 0; b < nb; b++) {
            int cb = w + b * h, M = m - cb;
            scipy_dgemm_("N", "T", &M, &h, &w, &mone, P + cb, &m, P + cb, &m, &one,
                         C1 + (long)b * m * h, &m);
        }
        double t1 = now();
        /* The panel below the diagonal block packed once, chunk by chunk of KC columns. */
        for (int k0 = 0; k0 < w; k0 += KC) {
            int k = w - k0 < KC ? w - k0 : KC;
            pack(P, m, w, m, k0, k, MR, Ap + (long)k0 * below);
        }
        for (int b = 0; b < nb; b++) {
            int cb = w + b * h, M = m - cb;
            double* c = C2 + (long)b * m * h;
            for (int k0 = 0; k0 < w; k0 += KC) {
                int k = w - k0 < KC ? w - k0 : KC;
                const double* a = Ap + (long)k0 * below + (long)(cb - w) * k;
                pack(P, m, cb, cb + h, k0, k, NR, Bp);
                for (int i = 0; i < M; i += MR)
                    for (int j = 0; j < h; j += NR)
                        kernel(k, a + (long)i * k, Bp + (long)j * k, c + i + (long)j * m, m);
            }
        }
        double t2 = now();
        t_blas[rep] = t1 - t0;
        t_packed[rep] = t2 - t1;
    }
    for (long i = 0; i < csize; i++) {
        double d = C1[i] > C2[i] ? C1[i] - C2[i] : C2[i] - C1[i];
        worst = d > worst ? d : worst;
    }
    double ratio[64];
    for (int r = 0; r < reps; r++) ratio[r] = t_packed[r] / t_blas[r];
    qsort(t_blas, reps, sizeof(double), by_value);
    qsort(t_packed, reps, sizeof(double), by_value);
    qsort(ratio, reps, sizeof(double), by_value);
    printf("rows below %5d, w %3d, bloks of %3d rows: openblas %5.1f GFLOP/s, packed %5.1f; "
           "packed/openblas time %.2f (max |difference| %.1e)\n",
           below, w, h, flops / t_blas[reps / 2] / 1e9, flops / t_packed[reps / 2] / 1e9,
           ratio[reps / 2], worst);
    free(P); free(C1); free(C2); free(Ap); free(Bp);
}

int main(int argc, char** argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 5;
    if (reps < 1 || reps > 64) reps = 5;
    /* h a multiple of 24 and the rows below a multiple of h: whole 8 x 6 tiles, no edges. */
    int shapes[][3] = {{1728, 256, 72}, {1728, 512, 72}, {3744, 256, 144}, {768, 256, 48},
                       {3744, 512, 144}};
    for (unsigned s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        run(shapes[s][0], shapes[s][1], shapes[s][2], reps);
    return 0;
}
