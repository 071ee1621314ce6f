# tools/make_diamonds.R -- the robust-regression benchmark data set: ggplot2's
# `diamonds` (53,940 diamonds; Debian package r-cran-ggplot2), written as a
# flydb CSV, deterministically (same bytes on every run).
#
#   Rscript tools/make_diamonds.R OUT.csv [ROWS]
#
# Target y: log(price).  Features: log(carat), depth, table, x, y, z and the
# ordered factors cut (5 levels), color (7) and clarity (8) dummy-coded
# against their first level (treatment contrasts: 4 + 6 + 7 columns), 23
# features in all; flydb adds the intercept.  Every feature column and the
# target are standardised (mean 0, sd 1 over the rows written), so the
# default N(0, 1) prior is weakly informative on every coefficient.
# ROWS (default: all) keeps the first ROWS diamonds, for smoke runs.
#
# The robust (Student-t) scale: an ordinary least-squares fit of the
# standardised target on the features (with intercept) gives residuals e;
# their scaled median absolute deviation, 1.4826 median |e - median e|, is a
# robust estimate of the residual sd that heavy tails do not inflate.  It is
# printed to stdout as "scale S" (%.4g), and tools/bench passes it as
# `--scale S` with `--nu 4`.
args <- commandArgs(trailingOnly = TRUE)
if (length(args) < 1) stop("usage: Rscript tools/make_diamonds.R OUT.csv [ROWS]")
out <- args[1]
e0 <- new.env()
data("diamonds", package = "ggplot2", envir = e0)
d <- as.data.frame(e0$diamonds)
if (length(args) >= 2) d <- d[seq_len(min(nrow(d), as.integer(args[2]))), ]

dummies <- function(f, prefix) {
  f <- factor(as.character(f), levels = levels(f))     # unordered, same levels
  m <- sapply(levels(f)[-1], function(l) as.numeric(f == l))
  colnames(m) <- paste0(prefix, "_", make.names(levels(f)[-1]))
  m
}
X <- cbind(log_carat = log(d$carat), depth = d$depth, table = d$table,
           x = d$x, y_mm = d$y, z = d$z,
           dummies(d$cut, "cut"), dummies(d$color, "color"),
           dummies(d$clarity, "clarity"))
y <- log(d$price)
std <- function(v) { s <- sd(v); if (!(s > 0)) s <- 1; (v - mean(v)) / s }
X <- apply(X, 2, std)
y <- std(y)

e <- residuals(lm.fit(cbind(1, X), y))
cat(sprintf("scale %.4g\n", 1.4826 * median(abs(e - median(e)))))

cols <- lapply(as.data.frame(cbind(X, y = y)), function(v) sprintf("%.6g", v))
con <- file(out, "wb")
writeLines(paste(c(colnames(X), "y"), collapse = ","), con)
writeLines(do.call(paste, c(cols, sep = ",")), con)
close(con)
