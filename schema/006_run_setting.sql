-- flydb schema, version 6: a run's configuration as typed columns.
--
-- Why: up to version 5 a run was resumed by rebuilding a command line from
-- the option strings of run_config and parsing it again, so the library
-- could not resume a run without the CLI's option table.  run_setting holds
-- what `run` does not (run has the model, sampler, z mode, chains, warm-up,
-- iterations, thinning and seed), one typed row per run, written in the
-- transaction that creates the run and read by `--resume` (src/store/run.c
-- owns both).  run_config stays as the human-readable list of every
-- resolved option with is_default.
--
-- Existing runs get their row from run_config.  Options that an older
-- flydb did not have take the behaviour of that flydb: no theta-steps row
-- means one theta update per iteration, no sketch row means no sketch.
CREATE TABLE run_setting (
  run_id       INTEGER PRIMARY KEY REFERENCES run(id) ON DELETE CASCADE,
  prior        TEXT    NOT NULL CHECK (prior IN ('normal', 'laplace')),
  prior_scale  REAL    NOT NULL CHECK (prior_scale > 0),
  nu           REAL,             -- robust: Student-t degrees of freedom, else NULL
  scale        REAL,             -- robust: Student-t scale, else NULL
  z_param      REAL,             -- explicit: fraction; implicit: q_db; else NULL
  bounds       TEXT    NOT NULL CHECK (bounds IN ('map', 'fixed')),
  fixed_xi     REAL,             -- fixed bounds: their xi, else NULL
  theta_steps  INTEGER NOT NULL CHECK (theta_steps >= 1),
  leapfrog     INTEGER NOT NULL CHECK (leapfrog >= 1),
  proposal     TEXT    NOT NULL CHECK (proposal IN ('laplace', 'isotropic')),
  step         REAL    CHECK (step > 0),  -- initial step size as resolved; NULL: the kernel's default
  init         TEXT    NOT NULL CHECK (init IN ('laplace', 'map')),
  cache_mb     INTEGER,          -- NULL: the default of the machine that runs it
  scan_frac    REAL    NOT NULL,
  sketch       INTEGER NOT NULL CHECK (sketch IN (0, 1)),
  checkpoint_every   INTEGER NOT NULL CHECK (checkpoint_every >= 1),
  full_logpost_every INTEGER NOT NULL CHECK (full_logpost_every >= 0)
) WITHOUT ROWID;

INSERT INTO run_setting
SELECT r.id,
       coalesce(max(CASE c.key WHEN 'prior' THEN c.value END), 'normal'),
       coalesce(CAST(max(CASE c.key WHEN 'prior-scale' THEN c.value END) AS REAL), 1.0),
       CASE WHEN r.model = 'robust'
            THEN CAST(max(CASE c.key WHEN 'nu' THEN c.value END) AS REAL) END,
       CASE WHEN r.model = 'robust'
            THEN CAST(max(CASE c.key WHEN 'scale' THEN c.value END) AS REAL) END,
       CASE WHEN r.z_mode IN ('implicit', 'explicit')
            THEN coalesce(CAST(substr(max(CASE c.key WHEN 'z' THEN c.value END),
                                      instr(max(CASE c.key WHEN 'z' THEN c.value END), '=') + 1)
                               AS REAL), 0.1) END,
       CASE WHEN max(CASE c.key WHEN 'bounds' THEN c.value END) LIKE 'fixed%'
            THEN 'fixed' ELSE 'map' END,
       CASE WHEN max(CASE c.key WHEN 'bounds' THEN c.value END) LIKE 'fixed=%'
            THEN CAST(substr(max(CASE c.key WHEN 'bounds' THEN c.value END), 7) AS REAL)
            WHEN max(CASE c.key WHEN 'bounds' THEN c.value END) = 'fixed' THEN 1.5 END,
       coalesce(CAST(max(CASE c.key WHEN 'theta-steps' THEN c.value END) AS INTEGER), 1),
       coalesce(CAST(max(CASE c.key WHEN 'leapfrog' THEN c.value END) AS INTEGER), 16),
       coalesce(max(CASE c.key WHEN 'proposal' THEN c.value END), 'laplace'),
       CAST(max(CASE c.key WHEN 'step' THEN c.value END) AS REAL),
       coalesce(max(CASE c.key WHEN 'init' THEN c.value END), 'laplace'),
       CASE WHEN max(CASE c.key WHEN 'cache-mb' THEN c.is_default END) = 0
            THEN CAST(max(CASE c.key WHEN 'cache-mb' THEN c.value END) AS INTEGER) END,
       coalesce(CAST(max(CASE c.key WHEN 'scan-frac' THEN c.value END) AS REAL), 0.25),
       coalesce(max(CASE c.key WHEN 'sketch' THEN c.value END), 'off') = 'on',
       coalesce(CAST(max(CASE c.key WHEN 'checkpoint-every' THEN c.value END) AS INTEGER), 1000),
       coalesce(CAST(max(CASE c.key WHEN 'full-logpost-every' THEN c.value END) AS INTEGER), 0)
FROM run r JOIN run_config c ON c.run_id = r.id
GROUP BY r.id;
