-- flydb schema, version 2: where the time of a run goes.
-- `flydb sample --profile` stores, per chain, the exclusive wall time of the
-- sampling loop spent in each part (src/util/prof.h): every instant is
-- charged to the innermost part open, so a chain's rows add up to its loop
-- time and its shares to 100.  A resumed run replaces the rows with those
-- of the last invocation.
CREATE TABLE profile (
  run_id  INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
  chain   INTEGER NOT NULL,          -- 0-based, as in table draw
  part    TEXT    NOT NULL CHECK (part IN ('theta', 'z', 'read', 'decode',
                                           'write', 'other')),
  seconds REAL    NOT NULL,          -- exclusive wall seconds
  share   REAL    NOT NULL,          -- percent of the chain's loop time
  n_iters INTEGER NOT NULL,          -- iterations profiled
  PRIMARY KEY (run_id, chain, part)
) WITHOUT ROWID;
