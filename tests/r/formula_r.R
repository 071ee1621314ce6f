# formula_r.R DRIVER WORKDIR -- flydb's model matrices against R's.
#
# Writes two CSVs with numeric and categorical columns and missing values,
# then for each formula below (32 written out, 150 drawn at random from a
# small grammar) compares R's
#   model.matrix(formula, read.csv(f, stringsAsFactors = TRUE))
# (after relevel() for the reference choices; na.action na.omit, so rows
# with NA in a column the formula names are dropped) with the output of
# the C driver formula_mm (tests/r/formula_mm.c) on the same file: the
# column names exactly, the kept rows exactly, every value to 1e-12
# relative.  Run with LC_COLLATE=C (R's factor levels then sort in byte
# order, as flydb sorts them).  Prints TAP; exits 1 on any difference.
args <- commandArgs(trailingOnly = TRUE)
driver <- args[1]
work <- args[2]
stopifnot(Sys.getlocale("LC_COLLATE") == "C")
set.seed(20261127)

n <- 300
cuts <- c("Fair", "Good", "Very Good", "Premium", "Ideal")
d1 <- data.frame(
  y = rnorm(n),
  x1 = rnorm(n),
  x2 = rexp(n) + 0.01,
  x3 = rnorm(n, 10),
  cut = sample(cuts, n, replace = TRUE),
  color = sample(c("D", "E", "F", "G", "H", "I", "J"), n, replace = TRUE),
  g = sample(c("a", "B", "c"), n, replace = TRUE),     # byte order: B a c
  code = sample(c("10", "9", "x1", "100"), n, replace = TRUE),
  `odd name` = runif(n),
  check.names = FALSE)
d1$y[c(3, 50)] <- NA
d1$x3[c(7, 8, 120)] <- NA
d1$color[c(9, 200, 201)] <- NA
d1$code[c(17)] <- NA
f1 <- file.path(work, "d1.csv")
write.csv(d1, f1, row.names = FALSE, quote = FALSE, na = "NA")

# A second file: a column of '.' with few columns, a two-level factor and
# NA only in a column that dropped terms name.
d2 <- data.frame(
  w = rnorm(n),
  a = sample(c("lo", "hi"), n, replace = TRUE),
  z = rnorm(n),
  b = sample(c("p", "q", "r"), n, replace = TRUE))
d2$z[c(5, 6)] <- NA
f2 <- file.path(work, "d2.csv")
write.csv(d2, f2, row.names = FALSE, quote = FALSE, na = "NA")

cases <- list(
  list(f1, "y ~ x1 + x2"),
  list(f1, "y ~ cut"),
  list(f1, "y ~ x1 + cut + color"),
  list(f1, "y ~ cut:color"),
  list(f1, "y ~ x1 + x1:cut"),
  list(f1, "y ~ x1:cut"),
  list(f1, "y ~ cut*color"),
  list(f1, "y ~ log(x2) + sqrt(x2) + exp(x1) + I(x1^2) + I(x1*x2) + I(x1+x2) + I(x1-x2) + I(x1/x2)"),
  list(f1, "y ~ cut - 1"),
  list(f1, "y ~ 0 + cut + color"),
  list(f1, "y ~ ."),
  list(f1, "y ~ . - x3 - color"),
  list(f1, "y ~ (x1 + cut + g)^2"),
  list(f1, "y ~ x1*cut + I(x2^3) - x1"),
  list(f1, "y ~ cut + color", c(cut = "Premium", color = "G")),
  list(f1, "y ~ `odd name` + `odd name`:g"),
  list(f1, "y ~ g:code + x3"),
  list(f1, "y ~ cut/x1"),
  list(f1, "y ~ x1 + cut:g - 1"),
  list(f1, "y ~ log(x2 + 1) + I((x1 + 1)^2) + I(-x1) + I(2^x1) + I(x1 * 1e5)"),
  list(f1, "y ~ g*cut*x1", c(g = "c")),
  list(f1, "y ~ x1 + 1 - 1"),
  list(f1, "y ~ -1 + x1:color + cut"),
  list(f1, "y ~ x1:color - 1"),
  list(f1, "y ~ color:cut:g + x1"),
  list(f1, "y ~ (cut + g + color)^3 - cut:g:color - cut"),
  list(f1, "y ~ I(x3 - 10) + g + x1:g + x1 + g:color", c(g = "a")),
  list(f2, "w ~ ."),
  list(f2, "w ~ a*b - 1"),
  list(f2, "w ~ a + z - z"),
  list(f2, "w ~ b:a", c(a = "lo")),
  list(f2, "w ~ .^2")
)

# Random formulas: terms, operators and transforms drawn from a small
# grammar (seeded), some with -1 / + 0 and references.  Where R refuses a
# formula or gives no column, the driver must fail too.
atoms <- c(rep(c("cut", "color", "g", "code"), 3), "x1", "x2", "`odd name`", "x3",
           "log(x2)", "I(x1^2)", "sqrt(x2)", "I(x1 * x2)", "exp(x1/4)")
gen <- function(depth) {
  if (depth == 0 || runif(1) < 0.3) return(sample(atoms, 1))
  op <- sample(c("+", "*", ":", "-", "/", "^", "()"), 1, prob = c(4, 2, 3, 1, 1, 1, 1))
  a <- gen(depth - 1)
  switch(op,
         "^" = paste0("(", a, " + ", gen(depth - 1), ")^", sample(2:3, 1)),
         "()" = paste0("(", a, ")"),
         paste(a, op, gen(depth - 1)))
}
n_random <- 150
for (i in seq_len(n_random)) {
  rhs <- gen(3)
  rhs <- switch(sample(4, 1), rhs, paste(rhs, "- 1"), paste("0 +", rhs), paste(rhs, "+ 1"))
  refs <- switch(sample(4, 1), character(0), c(cut = "Premium"), c(g = "c", color = "J"),
                 character(0))
  cases[[length(cases) + 1]] <- list(f1, paste("y ~", rhs), refs, TRUE)
}

tap <- 0
bad <- 0
check <- function(ok, what) {
  tap <<- tap + 1
  if (!isTRUE(ok)) bad <<- bad + 1
  cat(if (isTRUE(ok)) "ok" else "not ok", tap, "-", what, "\n")
}

for (cs in cases) {
  file <- cs[[1]]
  form <- cs[[2]]
  refs <- if (length(cs) >= 3) cs[[3]] else character(0)
  d <- read.csv(file, stringsAsFactors = TRUE, na.strings = c("NA", ""),
                check.names = FALSE)
  for (col in names(refs)) d[[col]] <- relevel(d[[col]], ref = refs[[col]])
  mm <- tryCatch(suppressWarnings(model.matrix(as.formula(form), d)),
                 error = function(e) NULL)
  what <- paste0(basename(file), ": ", form,
                 if (length(refs)) paste0(" [ref ", paste(names(refs), refs, sep = "=", collapse = ","), "]") else "")
  out <- file.path(work, "mm.csv")
  st <- system2(driver, c(shQuote(file), shQuote(form),
                          if (length(refs)) shQuote(paste(names(refs), refs, sep = "=")) else NULL),
                stdout = out, stderr = file.path(work, "driver.err"))
  if (is.null(mm) || ncol(mm) == 0) {
    check(st != 0, paste(what, "(refused by R and by flydb:",
                         paste(readLines(file.path(work, "driver.err")), collapse = " "), ")"))
    next
  }
  if (st != 0) {
    check(FALSE, paste(what, "(driver failed:", paste(readLines(file.path(work, "driver.err")), collapse = " "), ")"))
    next
  }
  fm <- read.csv(out, check.names = FALSE, colClasses = "numeric")
  names_ok <- identical(names(fm)[-1], colnames(mm))
  rows_ok <- identical(as.integer(fm$row), as.integer(rownames(mm)))
  vals_ok <- FALSE
  if (names_ok && rows_ok) {
    a <- as.matrix(fm[, -1, drop = FALSE])
    b <- unname(mm[, , drop = FALSE])
    dimnames(a) <- NULL
    attributes(b) <- list(dim = dim(b))
    vals_ok <- all(abs(a - b) <= 1e-12 * pmax(abs(a), abs(b)))
  }
  if (!names_ok) {
    cat("#   R:     ", paste(colnames(mm), collapse = " | "), "\n")
    cat("#   flydb: ", paste(names(fm)[-1], collapse = " | "), "\n")
  }
  if (names_ok && !rows_ok)
    cat("#   rows: R", nrow(mm), "flydb", nrow(fm), "\n")
  check(names_ok && rows_ok && vals_ok,
        sprintf("%s (%d x %d)", what, nrow(mm), ncol(mm)))
}
cat(sprintf("1..%d\n", tap))
quit(status = if (bad == 0) 0 else 1)
