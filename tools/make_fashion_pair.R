#!/usr/bin/env Rscript
# make_fashion_pair.R -- regenerate flydb's bundled real data sets from the
# Debian package dataset-fashion-mnist (Fashion-MNIST, Zalando SE, MIT/Expat).
#
#   Rscript tools/make_fashion_pair.R [OUTDIR [SRCDIR]]
#
# OUTDIR defaults to datasets (run from the repository root), SRCDIR to
# /usr/share/datasets/fashion-mnist.  Writes
#   OUTDIR/fmnist-pair/fmnist_pair.csv    classes 7 Sneaker (y=0) vs 9 Ankle boot (y=1)
#   OUTDIR/fmnist-three/fmnist_three.csv  classes 5 Sandal (y=0), 7 Sneaker (y=1),
#                                         9 Ankle boot (y=2)
# from the 60,000-image *training* set, rows in the training set's order.
#
# Treatment (each file separately, on its own classes' images):
#   pixels / 255 -> [0,1]; PCA of the centred pixels (eigen-decomposition of
#   the sample covariance, divisor n-1); the first 50 components' scores,
#   each divided by its sd (sqrt of the eigenvalue), so every pc column has
#   mean 0 and variance 1 (to the printed precision).  Sign convention: each
#   eigenvector is flipped so that its largest-|loading| entry (the first
#   such pixel on a tie) is positive.  Columns pc1..pc50, then y.  No
#   intercept column: flydb adds the intercept itself.  Numbers are printed
#   with C's %.6g.
#
# Determinism: base R only.  The pixel cross-product is formed from integer
# pixel values, where every partial sum is an exact integer in double, so the
# covariance matrix does not depend on the BLAS's summation order.  The
# eigen-decomposition and the score product still go through LAPACK/BLAS, so
# the script re-executes itself with OPENBLAS_NUM_THREADS=1 (and
# OMP_NUM_THREADS=1): re-running on the same platform reproduces the files
# byte for byte.  A different BLAS or CPU may change a few last digits.

main <- function(args) {
  outdir <- if (length(args) >= 1) args[1] else "datasets"
  srcdir <- if (length(args) >= 2) args[2] else "/usr/share/datasets/fashion-mnist"

  labels <- read_idx_labels(file.path(srcdir, "train-labels-idx1-ubyte.gz"))
  images <- read_idx_images(file.path(srcdir, "train-images-idx3-ubyte.gz"))
  stopifnot(nrow(images) == length(labels))

  make_set(images, labels, classes = c(7L, 9L), n_pc = 50L,
           path = file.path(outdir, "fmnist-pair", "fmnist_pair.csv"))
  make_set(images, labels, classes = c(5L, 7L, 9L), n_pc = 50L,
           path = file.path(outdir, "fmnist-three", "fmnist_three.csv"))
  invisible(NULL)
}

# --- IDX reading (http://yann.lecun.com/exdb/mnist/ format, big-endian) ---

read_idx_header <- function(con, want_magic) {
  magic <- readBin(con, "integer", n = 1L, size = 4L, endian = "big")
  if (length(magic) != 1L || magic != want_magic)
    stop(sprintf("bad IDX magic %s (want %d)", format(magic), want_magic))
  ndim <- want_magic %% 256L
  readBin(con, "integer", n = ndim, size = 4L, endian = "big")
}

read_idx_labels <- function(path) {
  con <- gzfile(path, "rb")
  on.exit(close(con))
  dims <- read_idx_header(con, 2049L)               # 0x00000801: ubyte, 1 dim
  y <- as.integer(readBin(con, "raw", n = dims[1]))
  if (length(y) != dims[1]) stop(path, ": truncated")
  y
}

# Returns an n x (rows*cols) integer matrix, one image per row, pixels in
# row-major order (pixel (r, c) is column r*cols + c + 1).
read_idx_images <- function(path) {
  con <- gzfile(path, "rb")
  on.exit(close(con))
  dims <- read_idx_header(con, 2051L)               # 0x00000803: ubyte, 3 dims
  n <- dims[1]; p <- dims[2] * dims[3]
  px <- as.integer(readBin(con, "raw", n = n * p))
  if (length(px) != n * p) stop(path, ": truncated")
  matrix(px, nrow = n, ncol = p, byrow = TRUE)
}

# --- PCA and output ---

make_set <- function(images, labels, classes, n_pc, path) {
  keep <- labels %in% classes
  X <- images[keep, , drop = FALSE]                 # integers 0..255
  y <- match(labels[keep], classes) - 1L            # 0..K-1 in 'classes' order
  n <- nrow(X)

  # Covariance of X/255, exactly up to the final divisions: crossprod of
  # integers (all partial sums < 2^53 are exact whatever the order).
  Xd <- X * 1.0
  s <- colSums(Xd)                                  # exact integers
  G <- crossprod(Xd)                                # exact integers
  C <- (G - tcrossprod(s) / n) / ((n - 1) * 255^2)
  C <- (C + t(C)) / 2                               # bitwise symmetric

  ev <- eigen(C, symmetric = TRUE)
  V <- ev$vectors[, seq_len(n_pc), drop = FALSE]
  lambda <- ev$values[seq_len(n_pc)]
  if (any(lambda <= 0)) stop("non-positive eigenvalue among the first ", n_pc)
  for (k in seq_len(n_pc)) {                        # sign: largest |loading| > 0
    j <- which.max(abs(V[, k]))
    if (V[j, k] < 0) V[, k] <- -V[, k]
  }

  m <- s / n                                        # pixel means (0..255 scale)
  Xc <- sweep(Xd, 2L, m) / 255
  Z <- Xc %*% V
  Z <- sweep(Z, 2L, sqrt(lambda), "/")              # unit variance

  dir.create(dirname(path), recursive = TRUE, showWarnings = FALSE)
  cols <- c(sprintf("pc%d", seq_len(n_pc)), "y")
  txt <- matrix(sprintf("%.6g", Z), nrow = n)
  lines <- do.call(paste, c(split(txt, col(txt)), list(y, sep = ",")))
  con <- file(path, "wb")                           # LF line ends everywhere
  writeLines(paste(cols, collapse = ","), con)
  writeLines(lines, con)
  close(con)

  expl <- sum(lambda) / sum(ev$values)
  message(sprintf("%s: N=%d, classes %s -> y 0..%d (counts %s), %d PCs explain %.1f%% of pixel variance, %d bytes",
                  path, n, paste(classes, collapse = ","), length(classes) - 1L,
                  paste(tabulate(y + 1L, length(classes)), collapse = "/"),
                  n_pc, 100 * expl, file.size(path)))
}

# Re-execute single-threaded (see the header comment), then run.
if (Sys.getenv("OPENBLAS_NUM_THREADS") != "1" || Sys.getenv("OMP_NUM_THREADS") != "1") {
  all <- commandArgs(trailingOnly = FALSE)
  self <- sub("^--file=", "", all[grep("^--file=", all)][1])
  rc <- system2(file.path(R.home("bin"), "Rscript"),
                c(shQuote(self), shQuote(commandArgs(trailingOnly = TRUE))),
                env = c("OPENBLAS_NUM_THREADS=1", "OMP_NUM_THREADS=1"))
  quit(save = "no", status = rc)
} else {
  main(commandArgs(trailingOnly = TRUE))
}
