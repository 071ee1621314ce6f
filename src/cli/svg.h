/*
 * svg.h -- a tiny SVG writer: one picture, written to a file as it is drawn.
 *
 * Coordinates are pixels, origin top left, y down.  Drawing calls never
 * fail: a write error is sticky in the FILE and reported once, by
 * fly_svg_finish().  The picture is written to "<path>.tmp" and renamed to
 * path only when it is finished, so a failed or abandoned picture leaves
 * no file behind and never half-overwrites an older one.
 */
#ifndef FLY_SVG_H
#define FLY_SVG_H

#include <stddef.h>
#include <stdio.h>

#include "util/err.h"

typedef struct fly_svg fly_svg;

typedef struct fly_svg_style {
  const char *stroke;    /* colour, e.g. "#0072b2"; NULL: no stroke */
  const char *fill;      /* colour; NULL: no fill */
  double      width;     /* stroke width in px; 0: 1 px */
  double      opacity;   /* of stroke and fill, in (0, 1]; 0: opaque */
  const char *dash;      /* stroke-dasharray, e.g. "4 3"; NULL: solid */
} fly_svg_style;

/* Start a w x h px picture titled `title` (the <title> element; may be
 * NULL) at path.  FLY_IO if the file cannot be created, FLY_NOMEM; *ps
 * NULL on failure. */
fly_rc fly_svg_open(const char *path, double w, double h, const char *title,
                    fly_svg **ps, fly_err *err);
/* Write the closing tag, close the file and rename it into place.  FLY_IO
 * naming the path if any write failed.  The handle still needs
 * fly_svg_close(). */
fly_rc fly_svg_finish(fly_svg *s, fly_err *err);
/* Free the handle; an unfinished picture's file is removed.  NULL: no-op. */
void   fly_svg_close(fly_svg *s);

void fly_svg_rect(fly_svg *s, double x, double y, double w, double h,
                  const fly_svg_style *st);
void fly_svg_line(fly_svg *s, double x1, double y1, double x2, double y2,
                  const fly_svg_style *st);
/* n points (x[i], y[i]); closed and filled when st->fill is set.  Nothing
 * for n < 2. */
void fly_svg_path(fly_svg *s, const double *x, const double *y, size_t n,
                  const fly_svg_style *st);
void fly_svg_circle(fly_svg *s, double cx, double cy, double r,
                    const fly_svg_style *st);

typedef enum { FLY_SVG_START, FLY_SVG_MIDDLE, FLY_SVG_END } fly_svg_anchor;

/* Text of size px, anchored at (x, y) on its baseline, rotated by rot
 * degrees (clockwise) about that point, in colour (NULL: black); bold when
 * bold != 0.  printf format; the result is escaped for XML. */
void fly_svg_text(fly_svg *s, double x, double y, double size,
                  fly_svg_anchor anchor, double rot, const char *colour,
                  int bold, const char *fmt, ...)
#if defined(__GNUC__)
  __attribute__((format(printf, 9, 10)))
#endif
  ;

/* Append text to f escaped for XML character data and attribute values
 * (& < > " '; control characters other than tab become '?').  Also used
 * for HTML. */
void fly_svg_escape(FILE *f, const char *text);

#endif
