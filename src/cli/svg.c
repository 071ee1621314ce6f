/*
 * svg.c -- a tiny SVG writer (see svg.h).
 *
 * Elements go straight to a buffered FILE in the order they are drawn (SVG
 * paints in document order, so later calls draw on top).  Coordinates are
 * written with two decimals: a hundredth of a pixel is below what any
 * renderer shows and keeps a 2000-point path near 30 KB.  Write errors are
 * sticky in the FILE (ferror) and checked once, at the end, together with
 * fclose, whose failure on a full disk is the one that matters.
 *
 * The file is "<path>.tmp" until fly_svg_finish() renames it, so readers
 * (a browser refreshing index.html) never see half a picture.
 */
#include "svg.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/mem.h"

struct fly_svg {
  FILE *f;
  char *path;      /* final name */
  char *tmp;       /* name while being written */
  int   finished;  /* renamed into place */
};

fly_rc fly_svg_open(const char *path, double w, double h, const char *title,
                    fly_svg **ps, fly_err *err)
{
  fly_svg *s = fly_alloc_array(1, sizeof *s);
  size_t n = strlen(path) + 5;
  *ps = NULL;
  if( !s ) return fly_fail(err, FLY_NOMEM, "%s", path);
  s->path = fly_strdup(path);
  s->tmp = fly_alloc_array(n, 1);
  if( !s->path || !s->tmp ){
    fly_svg_close(s);
    return fly_fail(err, FLY_NOMEM, "%s", path);
  }
  snprintf(s->tmp, n, "%s.tmp", path);
  s->f = fopen(s->tmp, "w");
  if( !s->f ){
    fly_rc rc = fly_fail(err, FLY_IO, "cannot create %s: %s", s->tmp, strerror(errno));
    fly_svg_close(s);
    return rc;
  }
  fprintf(s->f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" "
                "width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
                "font-family=\"Helvetica, Arial, sans-serif\">\n", w, h, w, h);
  if( title ){
    fputs("<title>", s->f);
    fly_svg_escape(s->f, title);
    fputs("</title>\n", s->f);
  }
  fprintf(s->f, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"#ffffff\"/>\n",
          w, h);
  *ps = s;
  return FLY_OK;
}

fly_rc fly_svg_finish(fly_svg *s, fly_err *err)
{
  int bad;
  if( FLY_NEVER(!s || !s->f) ) return fly_fail(err, FLY_MISUSE, "fly_svg_finish: no picture");
  fputs("</svg>\n", s->f);
  bad = ferror(s->f);
  bad |= fclose(s->f) != 0;
  s->f = NULL;
  if( bad ) return fly_fail(err, FLY_IO, "writing %s: %s", s->tmp, strerror(errno));
  if( rename(s->tmp, s->path) != 0 )
    return fly_fail(err, FLY_IO, "renaming %s to %s: %s", s->tmp, s->path, strerror(errno));
  s->finished = 1;
  return FLY_OK;
}

void fly_svg_close(fly_svg *s)
{
  if( !s ) return;
  if( s->f ) fclose(s->f);
  if( !s->finished && s->tmp ) remove(s->tmp);
  fly_free(s->path);
  fly_free(s->tmp);
  fly_free(s);
}

/* Length of the valid UTF-8 sequence at t (1-4), or 0 if it is not one
 * (overlong forms, surrogates and code points above U+10FFFF included):
 * XML parsers reject a file with one bad byte. */
static size_t utf8_len(const unsigned char *t)
{
  unsigned c = t[0];
  size_t n = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3
           : (c & 0xf8) == 0xf0 ? 4 : 0;
  unsigned long cp = n == 2 ? (c & 0x1f) : n == 3 ? (c & 0x0f) : (c & 0x07);
  static const unsigned long min[5] = { 0, 0, 0x80, 0x800, 0x10000 };
  if( n <= 1 ) return n;
  for(size_t i = 1; i < n; i++){
    if( (t[i] & 0xc0) != 0x80 ) return 0;
    cp = cp << 6 | (t[i] & 0x3f);
  }
  if( cp < min[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) ||
      cp == 0xfffe || cp == 0xffff ) return 0;
  return n;
}

void fly_svg_escape(FILE *f, const char *text)
{
  const unsigned char *t = (const unsigned char *)text;
  while( *t ){
    size_t n = utf8_len(t);
    switch( *t ){
    case '&':  fputs("&amp;", f); break;
    case '<':  fputs("&lt;", f); break;
    case '>':  fputs("&gt;", f); break;
    case '"':  fputs("&quot;", f); break;
    case '\'': fputs("&#39;", f); break;
    default:
      if( n == 0 || (*t < 0x20 && *t != '\t') ) fputc('?', f);
      else fwrite(t, 1, n, f);
    }
    t += n ? n : 1;
  }
}

/* The presentation attributes of st. */
static void style(FILE *f, const fly_svg_style *st)
{
  fprintf(f, " fill=\"%s\"", st->fill ? st->fill : "none");
  if( st->stroke ){
    fprintf(f, " stroke=\"%s\"", st->stroke);
    if( st->width > 0 && st->width != 1 ) fprintf(f, " stroke-width=\"%.2g\"", st->width);
    if( st->dash ) fprintf(f, " stroke-dasharray=\"%s\"", st->dash);
  }
  if( st->opacity > 0 && st->opacity < 1 ) fprintf(f, " opacity=\"%.2g\"", st->opacity);
}

void fly_svg_rect(fly_svg *s, double x, double y, double w, double h,
                  const fly_svg_style *st)
{
  fprintf(s->f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\"",
          x, y, w, h);
  style(s->f, st);
  fputs("/>\n", s->f);
}

void fly_svg_line(fly_svg *s, double x1, double y1, double x2, double y2,
                  const fly_svg_style *st)
{
  fprintf(s->f, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"", x1, y1, x2, y2);
  style(s->f, st);
  fputs("/>\n", s->f);
}

void fly_svg_path(fly_svg *s, const double *x, const double *y, size_t n,
                  const fly_svg_style *st)
{
  size_t k = 0;         /* points written */
  int move = 1;         /* the next point starts a new subpath */
  if( n < 2 ) return;
  fputs("<path d=\"", s->f);
  for(size_t i = 0; i < n; i++){
    if( !isfinite(x[i]) || !isfinite(y[i]) ){ move = 1; continue; }
    /* a new line every 8 points keeps the file friendly to line tools */
    fprintf(s->f, "%s%s%.2f %.2f", k == 0 ? "" : (k % 8 ? " " : "\n"), move ? "M" : "",
            x[i], y[i]);
    move = 0;
    k++;
  }
  if( k == 0 ) fputs("M0 0", s->f);
  if( st->fill ) fputs("Z", s->f);
  fputs("\"", s->f);
  style(s->f, st);
  fputs(" stroke-linejoin=\"round\"/>\n", s->f);
}

void fly_svg_circle(fly_svg *s, double cx, double cy, double r,
                    const fly_svg_style *st)
{
  fprintf(s->f, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"%.2f\"", cx, cy, r);
  style(s->f, st);
  fputs("/>\n", s->f);
}

void fly_svg_text(fly_svg *s, double x, double y, double size,
                  fly_svg_anchor anchor, double rot, const char *colour,
                  int bold, const char *fmt, ...)
{
  static const char *anchors[] = { "start", "middle", "end" };
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fprintf(s->f, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"%.3g\"", x, y, size);
  if( anchor != FLY_SVG_START ) fprintf(s->f, " text-anchor=\"%s\"", anchors[anchor]);
  if( rot != 0 ) fprintf(s->f, " transform=\"rotate(%.3g %.2f %.2f)\"", rot, x, y);
  if( colour ) fprintf(s->f, " fill=\"%s\"", colour);
  if( bold ) fputs(" font-weight=\"bold\"", s->f);
  fputs(">", s->f);
  fly_svg_escape(s->f, buf);
  fputs("</text>\n", s->f);
}
