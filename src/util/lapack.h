/*
 * lapack.h -- the few LAPACK routines flydb calls, from OpenBLAS (which
 * exports the Fortran symbols; it is already linked through blas_dep).
 *
 * Fortran conventions: every argument by pointer, matrices column-major,
 * and each CHARACTER argument followed at the end of the list by a hidden
 * length (size_t with gfortran >= 8).  The lengths are declared and passed
 * (always 1) so the calls are correct whether a routine is Fortran or C.
 *
 * Row-major callers: a symmetric matrix is its own transpose, so the
 * column-major 'U' triangle is the row-major lower triangle.  dpotrf with
 * 'U' on a row-major array therefore leaves the lower Cholesky factor L
 * (A = L L') in the row-major lower triangle.
 */
#ifndef FLY_LAPACK_H
#define FLY_LAPACK_H

#include <stddef.h>

/* Cholesky factorisation of a symmetric positive-definite matrix.
 * info > 0: the leading minor of order info is not positive definite. */
void dpotrf_(const char *uplo, const int *n, double *a, const int *lda,
             int *info, size_t uplo_len);

/* Inverse from the dpotrf factor (same uplo); the other triangle is not
 * referenced.  info > 0: a zero diagonal element of the factor. */
void dpotri_(const char *uplo, const int *n, double *a, const int *lda,
             int *info, size_t uplo_len);

#endif
