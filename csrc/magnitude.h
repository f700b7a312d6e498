/* The magnitude of a complex number, for every kernel that measures one (pivot
 * searches, norms, residuals, symmetry checks).
 *
 * libm's hypot guards against the squares' overflow and underflow at every call,
 * which costs several times a square root; a complex matrix's pivot search and
 * backward error take one magnitude per entry, and hypot was most of their time.
 * Here the squares are summed first and hypot is called only where that sum left
 * the range in which it is exact to rounding: above 2^-960 the larger part's
 * square is a normal number and the smaller part's lost bits are below 2^-114 of
 * the sum; below 2^1000 nothing overflowed. NaN and infinities fail both tests
 * and take hypot, which gives inf for an infinite part even beside a NaN.
 * In single precision the squares are summed in double, where no float can
 * overflow or underflow them.
 */
#ifndef PASTIXPY_MAGNITUDE_H
#define PASTIXPY_MAGNITUDE_H

#include <math.h>

static inline double pastixpy_cabs(double re, double im)
{
    double s = re * re + im * im;
    if (s > 0x1p-960 && s < 0x1p+1000)
        return sqrt(s);
    return hypot(re, im);
}

static inline double pastixpy_cabsf(float re, float im)
{
    double r = re, i = im;
    double s = r * r + i * i;
    if (isfinite(s))
        return sqrt(s);
    return hypot(r, i);
}

#endif
