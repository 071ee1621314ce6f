/*
 * source.h -- an input of `flydb ingest` as a stream of CSV text.
 *
 * The ingest reads CSV text from a FILE* (io/ingest.h).  A source turns
 * every other input into such a stream, so one CSV ingest serves them all:
 *
 *   plain CSV              the file itself (or standard input), untouched
 *   gzip, zstd, xz         decompressed on the fly (zlib, libzstd, liblzma),
 *                          from a file or from standard input
 *   Stata .dta, SPSS       converted by ReadStat: a header of the variable
 *   .sav/.zsav, SAS        names, then one record per observation
 *   .sas7bdat
 *   an SQL query           the result of a query on another SQLite database
 *
 * The format is found from the first bytes (gzip 1f 8b, zstd 28 b5 2f fd,
 * xz fd 37 7a 58 5a 00, "<stata_dta>", "$FL2"/"$FL3", the SAS header) or,
 * for the statistical formats, the extension; anything else is CSV.  The
 * statistical formats need a seekable file (not standard input).
 *
 * Text produced by the converters: numbers with %.17g (they read back
 * bit-identical), a missing value (system-missing, Stata's .a-.z, SPSS
 * user-missing, SQL NULL) as an empty cell, text and value labels quoted
 * per RFC 4180 when they hold a comma, quote, line end or edge blank.  A
 * variable with value labels is written as its labels (a value without a
 * label as the number) and listed by fly_source_categorical().
 *
 * Errors while reading -- a truncated or corrupt compressed stream, a file
 * ReadStat rejects halfway, an SQL error at some row -- make the stream's
 * read fail (fread returns short and ferror() is set, errno EIO), so a
 * reader stops there and reports an I/O error; fly_source_error() then
 * gives the message naming the input and the position, e.g.
 * "data.csv.gz: truncated gzip stream after 4096 bytes".
 *
 * Memory is flat in the number of rows: fixed buffers, the decoders'
 * windows, one row of text, the value labels.  A statistical file is
 * converted by a thread that ReadStat pushes values into, writing into a
 * socket pair the stream reads from; the thread blocks every signal.
 */
#ifndef FLY_SOURCE_H
#define FLY_SOURCE_H

#include <stddef.h>
#include <stdio.h>

#include "util/err.h"

typedef struct fly_source fly_source;

typedef struct fly_source_opts {
  const char *query;   /* non-NULL: the path is an SQLite database, opened
                          read-only, and the source is this query's result */
} fly_source_opts;

/* query NULL. */
void fly_source_opts_default(fly_source_opts *o);

/* Open path ("-": standard input) and find its format; o NULL: defaults.
 * Reads at most the first 32 bytes before returning (a statistical file
 * also has its dictionary and value labels read, a query is prepared and
 * checked), so a wrong input fails here.  Returns
 *   FLY_IO      cannot open or read the input; a statistical file on
 *               standard input;
 *   FLY_CORRUPT a statistical file ReadStat rejects ("x.dta: ReadStat:
 *               Invalid file, or file has unsupported features");
 *   FLY_SQL     the database cannot be opened, or the query fails to
 *               prepare, is not one read-only statement, returns no
 *               columns ("q.db: query 'SELECT ...': no such table: t");
 *   FLY_NOMEM.
 * *ps NULL on failure. */
fly_rc fly_source_open(const char *path, const fly_source_opts *o,
                       fly_source **ps, fly_err *err);

/* Close the stream and free everything; stops a conversion thread.  A
 * borrowed standard input is not closed.  NULL: no-op. */
void fly_source_close(fly_source *s);

/* The stream of CSV text, positioned at its first byte; valid until
 * fly_source_close (which closes it: do not fclose it).  For plain CSV it
 * is the opened file (or stdin) itself. */
FILE *fly_source_file(fly_source *s);

/* "csv", "gzip", "zstd", "xz", "dta", "sav", "sas7bdat" or "sql". */
const char *fly_source_format(const fly_source *s);

/* The message of the failure that stopped the stream ("data.csv.gz:
 * truncated gzip stream after 4096 bytes"), or NULL if the stream has not
 * failed (or only a read was interrupted by a signal).  Valid until the
 * next read or close. */
const char *fly_source_error(const fly_source *s);

/* The columns that hold category labels (variables with value labels of a
 * statistical file), in column order: *names[0..*n), valid until close.
 * None (n 0) for the other formats. */
void fly_source_categorical(const fly_source *s, const char *const **names,
                            size_t *n);

#endif
