/*
 * schema.h -- the SQL schema embedded at build time from schema/NNN_*.sql.
 *
 * Migration i (1-based) brings a database from user_version i-1 to i.
 * fly_schema_version is the version this binary writes and understands.
 * fly_schema_current creates that version's schema in an empty file: the
 * objects the migrations leave, in the order they were created (the same
 * tables, indexes, views and triggers, with the same SQL, as applying
 * every migration; tests/e2e/migrate.sh compares the two).
 */
#ifndef FLY_SCHEMA_H
#define FLY_SCHEMA_H

typedef struct fly_migration {
  int         version;  /* user_version after applying sql */
  const char *file;     /* schema file name, for messages */
  const char *sql;      /* statements, run in one transaction */
} fly_migration;

extern const fly_migration fly_migrations[];
extern const int fly_schema_version;
extern const char fly_schema_current[];

#endif
