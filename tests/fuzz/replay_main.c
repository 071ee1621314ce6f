/*
 * replay_main.c -- run a libFuzzer target over files without libFuzzer.
 *
 *   fuzz_x_replay PATH...     each PATH is a file or a directory of files
 *
 * Calls LLVMFuzzerTestOneInput once per file (directories in name order,
 * not recursive) and prints a TAP line per file; a target that finds a bug
 * aborts, which fails the test.  Generic: link it with any one target.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int n_run, n_bad;

static void run_file(const char *path)
{
  FILE *f = fopen(path, "rb");
  uint8_t *buf = NULL;
  size_t cap = 0, len = 0, got;
  int ok = f != NULL;

  while( ok ){
    if( len == cap ){
      uint8_t *nb;
      cap = cap ? 2*cap : 4096;
      nb = realloc(buf, cap);
      if( !nb ){ ok = 0; break; }
      buf = nb;
    }
    got = fread(buf + len, 1, cap - len, f);
    len += got;
    if( got == 0 ){
      if( ferror(f) ) ok = 0;
      break;
    }
  }
  if( f ) fclose(f);
  n_run++;
  if( ok ){
    LLVMFuzzerTestOneInput(buf ? buf : (const uint8_t *)"", len);
    printf("ok %d - %s (%zu bytes)\n", n_run, path, len);
  }else{
    n_bad++;
    printf("not ok %d - %s: cannot read\n", n_run, path);
  }
  fflush(stdout);
  free(buf);
}

static void run_path(const char *path)
{
  struct stat st;
  struct dirent **ents = NULL;
  int i, n;

  if( stat(path, &st) != 0 || !S_ISDIR(st.st_mode) ){
    run_file(path);
    return;
  }
  n = scandir(path, &ents, NULL, alphasort);
  if( n < 0 ){
    n_run++;
    n_bad++;
    printf("not ok %d - %s: cannot list\n", n_run, path);
    return;
  }
  for( i = 0; i < n; i++ ){
    size_t len = strlen(path) + strlen(ents[i]->d_name) + 2;
    char *full = malloc(len);
    if( full ){
      snprintf(full, len, "%s/%s", path, ents[i]->d_name);
      if( stat(full, &st) == 0 && S_ISREG(st.st_mode) ) run_file(full);
      free(full);
    }
    free(ents[i]);
  }
  free(ents);
}

int main(int argc, char **argv)
{
  int i;
  if( argc < 2 ){
    fprintf(stderr, "usage: %s FILE_OR_DIR...\n", argv[0]);
    return 2;
  }
  for( i = 1; i < argc; i++ ) run_path(argv[i]);
  printf("1..%d\n", n_run);
  return n_bad ? 1 : 0;
}
