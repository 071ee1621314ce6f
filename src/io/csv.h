/*
 * csv.h -- streaming RFC 4180 reader with exact error positions.
 *
 * Reads a header row, then one record at a time, from a file path or "-"
 * (stdin), through a fixed buffer: memory is bounded by the longest record,
 * whatever the file size.  Handles quoted fields (with "" escapes and
 * embedded commas/newlines), CRLF and LF line ends, a UTF-8 byte-order mark,
 * and a missing newline at end of file.  Positions are 1-based: line is the
 * physical line where the field starts, column is the 1-based field index.
 *
 * Includes only err.h and mem.h.
 */
#ifndef FLY_CSV_H
#define FLY_CSV_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "util/err.h"

typedef struct fly_csv fly_csv;

/* Bytes a read buffer holds past its sentinel, so that numbers are
 * scanned 8 bytes at a time without a bounds check. */
#define FLY_CSV_PAD 8

/* Open path ("-" = stdin) and read the header row.  FLY_IO if it cannot be
 * opened, FLY_PARSE if the file is empty, the header is malformed, a header
 * name is empty or two names are equal ("file:1:5: duplicate column name
 * 'x' (columns 2 and 5)").  Blank lines before the header are skipped.
 * *pc NULL on failure. */
fly_rc fly_csv_open(const char *path, fly_csv **pc, fly_err *err);
/* As fly_csv_open, with the initial read-buffer size in bytes (0: the
 * default, 1 MiB).  The buffer still grows to hold the longest record; tiny
 * sizes exercise the refill path in tests and the fuzz harness. */
fly_rc fly_csv_open_buf(const char *path, size_t bufsize, fly_csv **pc,
                        fly_err *err);
/* As fly_csv_open, reading the stream f (borrowed: read from its current
 * position, never closed) and naming it name in messages. */
fly_rc fly_csv_open_stream(FILE *f, const char *name, fly_csv **pc,
                           fly_err *err);
void   fly_csv_close(fly_csv *c);                     /* NULL: no-op */

size_t      fly_csv_ncols(const fly_csv *c);          /* header width */
const char *fly_csv_colname(const fly_csv *c, size_t j); /* 0-based, valid until close */
const char *fly_csv_path(const fly_csv *c);           /* "<stdin>" for "-" */

/* Read the next record as numbers into vals[0..ncols).  Returns FLY_ROW with
 * a record, FLY_DONE at end of file, or FLY_PARSE naming file:line:column and
 * what was expected: a ragged row ("3 fields, header has 5"), an empty cell,
 * a non-numeric cell ("'abc' is not a number"), NaN or Inf, an unterminated
 * quote.  Blank lines (only a line end) are skipped.  Numbers are parsed with
 * strtod in the C locale semantics (leading/trailing spaces allowed), and
 * the results are bit-identical to strtod's.  FLY_IO on a read error,
 * FLY_NOMEM if a record outgrows memory.  After FLY_DONE, FLY_DONE
 * again; after an error, the same error again (the record is not skipped). */
fly_rc fly_csv_next(fly_csv *c, double *vals, fly_err *err);

/* One cell as text, for typed ingest (fly_csv_next_cells). */
typedef struct fly_csv_cell {
  const char *s;        /* the text: quotes undone, an unquoted cell trimmed
                           of blanks; not NUL-terminated; valid until the
                           next call on the reader */
  size_t      n;        /* bytes of text (0: an empty cell) */
  double      v;        /* num: the value, as fly_csv_next gives it */
  int         num;      /* 1: the text is a finite number; 0: not (v NaN) */
  int         quoted;   /* 1: the cell was quoted */
} fly_csv_cell;

/* Read the next record as cells[0..ncols): each cell's text, and its value
 * where it is a finite number (strtod semantics, blanks trimmed even inside
 * quotes, the same bits as fly_csv_next).  Nothing is an error for not
 * being a number: empty cells, "NA", labels and "Inf" come back as text.
 * The same statuses and syntax errors as fly_csv_next, and FLY_PARSE for a
 * NUL byte in a cell.  Memory: one more buffer the size of the read
 * buffer, for quoted cells with "" escapes. */
fly_rc fly_csv_next_cells(fly_csv *c, fly_csv_cell *cells, fly_err *err);

int64_t fly_csv_line(const fly_csv *c);     /* line where the last record started */
int64_t fly_csv_records(const fly_csv *c);  /* data records read so far */
uint64_t fly_csv_bytes(const fly_csv *c);   /* bytes consumed so far (progress) */


/* ---- chunks, for a parallel reader (io/chunks.h) ---------------------- */

/* The physical line of the next unread byte. */
int64_t fly_csv_next_line(const fly_csv *c);

/* Raw bytes after those consumed: up to n into dst, *got of them (fewer
 * than n only at end of input), buffered ones first.  FLY_IO on a read
 * error.  The reader is then only good for this and fly_csv_bytes. */
fly_rc fly_csv_read_raw(fly_csv *c, char *dst, size_t n, size_t *got,
                        fly_err *err);

/* Record boundaries in s[0..n), CSV data whose byte 0 is inside quotes
 * when *inq is 1: returns the offset just past the last line feed outside
 * quotes (0: none) and sets *inq to the state after byte n-1.  Every '"'
 * toggles the state ("" inside quotes toggles twice), which is exact for
 * RFC 4180 data; a misplaced quote is a parse error that a reader starting
 * at the last boundary before it meets first.  Cost: one memchr when s
 * holds no quote, else one pass. */
size_t fly_csv_boundary(const char *s, size_t n, int *inq);

/* Line ends in s[0..n) as the reader counts them: LF, CRLF, lone CR. */
int64_t fly_csv_count_lines(const char *s, size_t n);

/* A reader of the records in buf[0..n), which starts at a record boundary
 * on physical line `line` of hdr's input: the same records, cells, errors
 * and positions as hdr would give there.  Borrows buf (n + 1 + FLY_CSV_PAD
 * bytes; it writes the sentinel buf[n] = 0) until it is closed, and hdr's
 * path and header, so close it before hdr.  Cell texts stay valid until
 * it is closed. */
fly_rc fly_csv_open_chunk(const fly_csv *hdr, char *buf, size_t n,
                          int64_t line, fly_csv **pc, fly_err *err);

#endif
