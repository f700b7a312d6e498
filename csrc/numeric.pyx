# The numeric kernels of pastixpy (module pastixpy._numeric): supernodal factorization over
# the block structure, the triangular solves, the row helpers around them, and the
# low-rank compression of tiles.
# cython: language_level=3
#
# One extension module, its source split by concern under csrc/numeric/, read in this
# order (each file uses the ones above it):
#
#   scalars.pxi    scalar types (the four precisions as one fused type), magnitudes
#   blas.pxi       BLAS/LAPACK through scipy's Cython bindings, loops for tiny operands
#   lowrank.pxi    low-rank compression of a tile, A ≈ U Vᴴ at an absolute tolerance
#                  (pivoted QR, truncated SVD, randomized), recompression of a sum
#   structure.pxi  the block structure, the per-cblk storage descriptors (Storage) and
#                  what the factorization kind decides (Ops), as typed structs
#   diagonal.pxi   the factorization of one diagonal block: potrf, Bunch-Kaufman, LU
#   compress.pxi   just-in-time block low-rank: a factored panel replaced by tiles
#   lrupdates.pxi  a compressed cblk's updates, through the tiles' ranks
#   minmem.pxi     minimal memory: a cblk's panel made when it is factored, its updates
#                  gathered then (left-looking)
#   updates.pxi    a cblk's updates of the cblks it faces, dispatched on its storage
#   factorize.pxi  assembly of A, one cblk's factorization, progress, sequential driver
#   scheduler.pxi  the threaded driver: cblks factored as their updates arrive (OpenMP)
#   solve.pxi      forward, diagonal and backward sweeps over the panels
#   vectors.pxi    row gathers and scatters of right-hand sides, residual maxima
#
# All loops run without the GIL on raw pointers.

include "numeric/scalars.pxi"
include "numeric/blas.pxi"
include "numeric/lowrank.pxi"
include "numeric/structure.pxi"
include "numeric/diagonal.pxi"
include "numeric/compress.pxi"
include "numeric/lrupdates.pxi"
include "numeric/minmem.pxi"
include "numeric/updates.pxi"
include "numeric/factorize.pxi"
include "numeric/scheduler.pxi"
include "numeric/solve.pxi"
include "numeric/vectors.pxi"
