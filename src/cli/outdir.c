/*
 * outdir.c -- mkdir -p for the commands that write files (see outdir.h).
 */
#include "outdir.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

fly_rc fly_make_dir(const char *dir, fly_err *err)
{
  char p[4096];
  struct stat sb;
  if( snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p )
    return fly_fail(err, FLY_RANGE, "--out: path too long");
  for(char *s = p + 1; ; s++){
    if( *s != '/' && *s ) continue;
    char c = *s;
    *s = 0;
    if( mkdir(p, 0777) != 0 && errno != EEXIST )
      return fly_fail(err, FLY_IO, "cannot create directory %s: %s", p, strerror(errno));
    *s = c;
    if( !c ) break;
  }
  if( stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode) )
    return fly_fail(err, FLY_IO, "--out %s is not a directory", dir);
  return FLY_OK;
}
