/* What the numeric kernels take from the compiler and the platform, in one place.
 *
 * OpenMP where the compiler has it (gcc and clang with -fopenmp, Apple clang with
 * libomp, MSVC with /openmp). Where it does not, the kernels still build: this header
 * stands in for omp.h with a team of one thread (a lock nobody else can hold is always
 * free), Cython's parallel blocks then run once on the calling thread, and the package
 * reads PASTIXPY_OPENMP (pastixpy._numeric.OPENMP) to run and report one thread.
 *
 * Also a scheduler yield and a prefetch hint, which MSVC spells differently.
 */
#ifndef PASTIXPY_PLATFORM_H
#define PASTIXPY_PLATFORM_H

#if defined(_WIN32)
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>
#else
#include <sched.h>
#include <time.h>
#endif

#ifdef _OPENMP
#include <omp.h>
#define PASTIXPY_OPENMP 1
#else
#define PASTIXPY_OPENMP 0

typedef int omp_lock_t;
static inline void omp_init_lock(omp_lock_t *lock) { *lock = 0; }
static inline void omp_destroy_lock(omp_lock_t *lock) { (void)lock; }
static inline void omp_set_lock(omp_lock_t *lock) { *lock = 1; }
static inline void omp_unset_lock(omp_lock_t *lock) { *lock = 0; }
static inline int omp_test_lock(omp_lock_t *lock)
{
    if (*lock)
        return 0;
    *lock = 1;
    return 1;
}
static inline int omp_get_num_threads(void) { return 1; }

#if defined(_WIN32)
static inline double omp_get_wtime(void)
{
    LARGE_INTEGER freq, now;
    QueryPerformanceFrequency(&freq);
    QueryPerformanceCounter(&now);
    return (double)now.QuadPart / (double)freq.QuadPart;
}
#else
static inline double omp_get_wtime(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
}
#endif
#endif /* _OPENMP */

#if defined(_WIN32)
static inline int pastixpy_yield(void)
{
    SwitchToThread();
    return 0;
}
#else
static inline int pastixpy_yield(void) { return sched_yield(); }
#endif

#if defined(__GNUC__) || defined(__clang__)
#define pastixpy_prefetch(addr, rw, locality) __builtin_prefetch((addr), (rw), (locality))
#else
#define pastixpy_prefetch(addr, rw, locality) ((void)(addr))
#endif

#endif /* PASTIXPY_PLATFORM_H */
