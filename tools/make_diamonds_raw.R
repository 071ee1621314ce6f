# tools/make_diamonds_raw.R -- ggplot2's `diamonds` (53,940 diamonds; Debian
# package r-cran-ggplot2) as a raw CSV for typed ingest: the factors cut,
# color and clarity as their labels, a few missing values, deterministically
# (same bytes on every run).
#
#   Rscript tools/make_diamonds_raw.R OUT.csv
#
# Columns: carat, cut, color, clarity, depth, table, x, y, z (as in
# ggplot2), then the target log_price = log(price), printed with %.6g (the
# other numbers as ggplot2 holds them, with R's 15 significant digits).
# Missing values, written NA: depth in rows 1, 1001, 2001, ... (54 rows) and
# color in rows 2, 1502, 3002, ... (36 rows), so that a formula using depth
# or color leaves rows out and one using neither keeps all.  Labels are
# written unquoted (none holds a comma or a quote).
args <- commandArgs(trailingOnly = TRUE)
if (length(args) < 1) stop("usage: Rscript tools/make_diamonds_raw.R OUT.csv")
e0 <- new.env()
data("diamonds", package = "ggplot2", envir = e0)
d <- as.data.frame(e0$diamonds)
out <- data.frame(carat = d$carat, cut = as.character(d$cut),
                  color = as.character(d$color), clarity = as.character(d$clarity),
                  depth = d$depth, table = d$table, x = d$x, y = d$y, z = d$z,
                  log_price = sprintf("%.6g", log(d$price)),
                  stringsAsFactors = FALSE)
i <- seq_len(nrow(out))
out$depth[(i - 1) %% 1000 == 0] <- NA
out$color[(i - 2) %% 1500 == 0] <- NA
write.csv(out, args[1], row.names = FALSE, quote = FALSE, na = "NA",
          fileEncoding = "UTF-8")
