/*
 * model.h -- the model interface: likelihood, lower bound, collapsed bound
 * product, gap upper bound, prior, MAP pieces.
 *
 * A model is a const type table (fly_model_logistic, fly_model_softmax,
 * fly_model_robust) plus a small transparent instance (fly_model) holding
 * dimensions and options.  The type holds the core every model has
 * (likelihood, gradient, lower bound, collapsed bound product, MAP pieces)
 * and points to optional tables, each defined next to its model: bound
 * coefficients with the scan screen (fly_model_coef), the thinning bound
 * (fly_model_thin) and its box refinement (fly_model_box), and the fused
 * full-data sum of regular mode (fly_model_full).  A NULL table
 * means the model lacks that concern; a present table has every member set
 * except those its contract calls optional.  Functions work on blocks of stored rows: X is n rows of ldx
 * doubles, row-major; features are X[i*ldx + 0 .. D-1] (intercept included
 * when the data set has one) and the target is X[i*ldx + tcol].  Per-row
 * bound parameters xi are n rows of n_xi values (stored as f32; always pass
 * the stored values so bounds and moments agree bit for bit).
 *
 * Parameters th are a flat vector of n_params doubles (for softmax K x D
 * row-major).  Everything is in log space.  No function allocates: callers
 * pass `work` of at least type->work_len(m, n) doubles.
 *
 * The models never know about samplers, z or SQLite.
 */
#ifndef FLY_MODEL_H
#define FLY_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

typedef struct fly_model_type fly_model_type;

/* A call on at most FLY_ROWWISE rows computes each row's linear predictors
 * with a BLAS call of that row's own (a dot product, or a K x D matrix
 * times the row), so a row gets the same bits whatever other rows share
 * the call.  Larger calls use one matrix kernel for the block, faster, but
 * it rounds a row by its place in the block.  The chain evaluates batches
 * whose make-up the page cache decides in chunks of this many rows, so
 * --cache-mb cannot change a seed's draws. */
#define FLY_ROWWISE 16

#define FLY_BOX_MAX 8   /* bucket constants of a box bound (n_box) */

typedef enum { FLY_PRIOR_NORMAL = 0, FLY_PRIOR_LAPLACE = 1 } fly_prior;

typedef struct fly_model {
  const fly_model_type *type;
  size_t    D;            /* features per row, intercept included */
  size_t    tcol;         /* index of the target within a stored row */
  size_t    K;            /* classes (softmax); 1 otherwise */
  fly_prior prior;
  double    prior_scale;  /* sd of the normal prior, scale of the Laplace */
  double    nu, scale;    /* Student-t (robust) */
  double    slack;        /* >= 0: the chain's bounds are B_n e^-slack (see
                           * fly_model_slack_logB); 0 in tuning */
} fly_model;

/* Moment tables: a flat array of type->n_moments(m) doubles whose layout the
 * model defines; named sections for storage are listed by moment_layout. */
typedef struct fly_moment_section {
  const char *name;   /* stored in moment.name, e.g. "S" */
  size_t rows, cols;  /* the section is rows x cols, row-major */
} fly_moment_section;

/* Bound coefficients (optional table, fly_model_type.coef; NULL: none, and
 * the chain evaluates log B from the stored xi with eval / grad).
 *
 * Per-row bound coefficients, n(m) doubles a row, computed by make() from
 * the stored xi and the rows X (a coefficient may depend on the row's
 * target, e.g. softmax's class).  The chain keeps them for its bright rows,
 * so a theta step evaluates log B without recomputing them (logistic: an
 * expm1 and a log1p a row; softmax: K exps and a log) at every step.
 *
 * Contract when present: eval and grad take the coefficients where the
 * core eval and grad take xi and give the same bits (the core ones are
 * fly_model_eval_xi / fly_model_grad_xi: make() then eval / grad), with
 * coef NULL meaning the likelihood part only, as logB / wB NULL do. */
typedef struct fly_model_coef {
  size_t (*n)(const fly_model *m);
  void   (*make)(const fly_model *m, const double *X, size_t ldx,
                 const float *xi, size_t n, double *coef);
  void   (*eval)(const fly_model *m, const double *th, const double *X,
                 size_t ldx, const double *coef, size_t n, double *logL,
                 double *logB, double *work);
  void   (*grad)(const fly_model *m, const double *th, const double *X,
                 size_t ldx, const double *coef, size_t n, const double *wL,
                 const double *wB, double *g, double *work);
  /* Optional, both or neither (NULL: eval, then grad): eval_sd is eval
   * (logL, logB the same bits) that also leaves in sd (2n doubles) what
   * grad_sd needs of the rows at th, and grad_sd is grad from sd, without
   * th: a value and gradient then multiply the rows by th once, not
   * twice, and take the likelihood's derivative from eval's vectorised
   * pass (g within a few ulps of grad's). */
  void   (*eval_sd)(const fly_model *m, const double *th, const double *X,
                    size_t ldx, const double *coef, size_t n, double *logL,
                    double *logB, double *sd, double *work);
  void   (*grad_sd)(const fly_model *m, const double *X, size_t ldx,
                    const double *coef, size_t n, const double *wL,
                    const double *wB, const double *sd, double *g, double *work);

  /* Optional (NULL: no screen): a screen for a gibbs scan, which draws u_i
   * for every dark row and turns it bright when u_i < p_i =
   * -expm1(logB_i - logL_i), from eval's values for the row alone (at most
   * FLY_ROWWISE rows a call).  From an f32 copy of the rows (Xf, row stride
   * ldx, fly_model_scan_rows) and the rows' feature norms, scan puts into
   * ub[i] a bound ub_i >= p_i (+inf or NaN when it cannot say), cheaply: a
   * single-precision matrix-vector product and no transcendental function.
   * A row with u_i >= ub_i needs neither its data nor its likelihood, and
   * the scan's decisions do not change.  work: work_len(m, n) doubles. */
  void   (*scan)(const fly_model *m, const double *th, const float *Xf,
                 size_t ldx, const float *xnorm, const double *coef,
                 size_t n, double *ub, double *work);
} fly_model_coef;

/* A tighter thinning bound for a group of rows (optional table,
 * fly_model_thin.box; NULL: none).  Rows are grouped by |xi_i[0]| into
 * boxes [xi_lo, xi_hi]; the chain may assume, when present:
 *  - upper: for every row i with xi_lo <= |xi_i[0]| <= xi_hi and
 *    thin->key(xi_i, xnorm_i) <= key, and every th, gap_i(th) <=
 *    upper(xi_lo, xi_hi, key, r) (r as for thin->upper).  Increasing in key
 *    and r; +inf when it cannot say more (e.g. xi_hi not finite).
 *  - prep / upper_c: upper's part that depends on the box only (n(m)
 *    doubles, at most FLY_BOX_MAX, computed once when the buckets are
 *    built) and the bound from it at r:
 *    upper(lo, hi, key, r) == upper_c(prep(lo, hi, key), r) bit for bit.
 *  - upper_rho: a bound for every row of the box whose |x_i'(th - th_map)|
 *    <= rho (a per-row rho, flymc/sketch.h); increasing in rho.
 *  - upper_c_n (optional, NULL: none): upper_c of n boxes at once, box i's
 *    constants at box + i n(m), into out[i], through the vectorised
 *    transcendentals of util/vmath.h: within a few ulp of upper_c (the
 *    bound's own margin is ~4500 ulp), the same bits for a box wherever
 *    it sits.  work: n doubles.  A gibbs z step bounds every bucket. */
typedef struct fly_model_box {
  size_t (*n)(const fly_model *m);
  double (*upper)(const fly_model *m, double xi_lo, double xi_hi,
                  double key, double r);
  void   (*prep)(const fly_model *m, double xi_lo, double xi_hi,
                 double key, double *box);
  double (*upper_c)(const fly_model *m, const double *box, double r);
  double (*upper_rho)(const fly_model *m, const double *box, double rho);
  void   (*upper_c_n)(const fly_model *m, const double *box, size_t n, double r,
                      double *out, double *work);
} fly_model_box;

/* The thinning bound (optional table, fly_model_type.thin; NULL: the model
 * cannot be thinned: tuning stores +inf keys, and the gibbs z mode, whose
 * buckets and sketch rest on this bound, refuses the model).  When present the chain may assume:
 *  - key(xi_row, xnorm) is a per-row number such that, for every th,
 *    gap_i(th) <= upper(key_i, r) where r = radius(th, th_map, H) =
 *    ||th - th_map||_{P^-1} and xnorm = ||x_i||_P; upper is increasing in
 *    key, so a bucket may use its largest key.
 *  - The proofs use xnorm and r only through |x_i'(th - th_map)| <= xnorm r
 *    (with dirs: sum_k (x_i'd_k)^2 <= xnorm^2 r^2), so also gap_i(th) <=
 *    upper(key(xi_row, rho), 1) for every th with |x_i'(th - th_map)| <= rho
 *    (with dirs: sum_k (x_i'd_k)^2 <= rho^2; fly_model_gap_upper_rho).
 *  - radius: ||th - th_map|| in the metric H = P^-1 (for softmax the sum
 *    over class rows).
 *  - dirs, optional, for parameters that are not one D-vector: the K = m->K
 *    D-vectors d_k (d, K x D row-major) through which the bound sees th:
 *    gap_i(th) <= fly_model_gap_upper_rho(m, xi_i, rho) for every th and rho
 *    with sum_k (x_i'd_k)^2 <= rho^2, and r^2 = sum_k d_k'H d_k (softmax:
 *    the centred class rows of th - th_map).  NULL: one direction,
 *    d = th - th_map (n_params == D). */
typedef struct fly_model_thin {
  double (*key)(const fly_model *m, const float *xi_row, double xnorm);
  /* key_n, optional (NULL: key row by row; fly_model_keys picks): key of
   * n rows at once, row i's xi at xi + i n_xi and xnorm[i], into out[i],
   * the same bits as key.  work: work_len(m, n) doubles. */
  void   (*key_n)(const fly_model *m, const float *xi, const double *xnorm,
                  size_t n, double *out, double *work);
  double (*upper)(const fly_model *m, double key, double r);
  double (*radius)(const fly_model *m, const double *th, const double *th_map,
                   const double *H, double *work);
  void   (*dirs)(const fly_model *m, const double *th, const double *th_map,
                 double *d);
  const fly_model_box *box;                       /* NULL: none */
} fly_model_thin;

/* The full-data log likelihood and its gradient in one call (optional
 * table, fly_model_type.full; NULL: the chain sums eval and grad).  Regular
 * mode needs sum_i log L_i(th) over every row and its gradient, and no
 * bound: logp_grad computes them from one matrix product with the block
 * (X th) and, when grad is non-NULL, one with its transpose, between them
 * the likelihood and its derivative in one vectorised pass (util/vmath.h),
 * with no per-row bound arithmetic.
 *
 * Contract when present: returns sum_i log L_i(th) over the n rows and, if
 * grad is non-NULL, adds its gradient to grad (n_params doubles); grad NULL
 * costs no transposed product.  Equal to the sum of eval's logL and to grad
 * with wL = 1, wB = NULL to rounding, not bit for bit: the summation order
 * and the vector functions differ (the unit tests bound the difference).
 * A row's terms may depend on the rows beside it (one matrix kernel for the
 * block, whatever n).  work: work_len(m, n) doubles. */
typedef struct fly_model_full {
  double (*logp_grad)(const fly_model *m, const double *th, const double *X,
                      size_t ldx, size_t n, double *grad, double *work);
} fly_model_full;

/* The core of a model: likelihood, gradient, lower bound, collapsed bound
 * product, MAP objective.  Every member is set. */
struct fly_model_type {
  const char *name;                               /* "logistic" */

  size_t (*n_params)(const fly_model *m);
  size_t (*n_xi)(const fly_model *m);             /* bound parameters per row */
  size_t (*work_len)(const fly_model *m, size_t n);

  /* FLY_RANGE naming the row (0-based `row`, reported 1-based as a data row)
   * if the target is not valid for this model (e.g. not 0/1). */
  fly_rc (*check_target)(const fly_model *m, double y, int64_t row,
                         fly_err *err);

  /* logL[i] = log L_i(th), logB[i] = log B_i(th) for the n rows.  logB may
   * be NULL (likelihood only).  B_i <= L_i holds to rounding. */
  void   (*eval)(const fly_model *m, const double *th, const double *X,
                 size_t ldx, const float *xi, size_t n, double *logL,
                 double *logB, double *work);

  /* g += sum_i ( wL[i] * grad log L_i(th) + wB[i] * grad log B_i(th) ).
   * wB may be NULL (treated as 0).  With wL = 1/(1 - exp(-gap)) and
   * wB = -wL this is the gradient of sum_i log Ltilde_i. */
  void   (*grad)(const fly_model *m, const double *th, const double *X,
                 size_t ldx, const float *xi, size_t n, const double *wL,
                 const double *wB, double *g, double *work);

  /* H += sum_i -hess log L_i(th)  (n_params x n_params, full, row-major). */
  void   (*neg_hess)(const fly_model *m, const double *th, const double *X,
                     size_t ldx, size_t n, double *H, double *work);

  /* Per-row bound parameters tight at th (MAP tuning): xi_out n x n_xi. */
  void   (*xi_at)(const fly_model *m, const double *th, const double *X,
                  size_t ldx, size_t n, double *xi_out, double *work);

  /* Moments */
  size_t (*n_moments)(const fly_model *m);
  /* Sections covering the flat moment array in order; returns their count
   * (at most 8). */
  size_t (*moment_layout)(const fly_model *m, fly_moment_section *sec);
  /* mom += the collapsed statistics of these n rows (with their xi). */
  void   (*moments_add)(const fly_model *m, const double *X, size_t ldx,
                        const float *xi, size_t n, double *mom, double *work);
  /* sum_n log B_n(th) from the moments in O(n_params^2); if grad is non-NULL,
   * grad += its gradient.  work: work_len(m, 1) doubles. */
  double (*bound_sum)(const fly_model *m, const double *mom, const double *th,
                      double *grad, double *work);

  const fly_model_coef *coef;   /* NULL: no bound coefficients */
  const fly_model_thin *thin;   /* NULL: cannot be thinned */
  const fly_model_full *full;   /* NULL: no fused full-data sum */
};

/* The prior: log p(th) (up to a constant); grad += its gradient if non-NULL. */
double fly_model_log_prior(const fly_model *m, const double *th, double *grad);
/* H += -hess log p(th) (the Laplace prior adds nothing: 0 almost everywhere). */
void   fly_model_prior_neg_hess(const fly_model *m, double *H);

/* eval / grad with xi of every model with bound coefficients (the types
 * point .eval / .grad here): coef->make into work + n max(K, 1), then
 * coef->eval / coef->grad, so both paths give the same bits.  So they may
 * use the first n max(K, 1) doubles of work themselves, and work_len(n)
 * must leave room for n coef->n(m) more after them. */
void   fly_model_eval_xi(const fly_model *m, const double *th, const double *X,
                         size_t ldx, const float *xi, size_t n, double *logL,
                         double *logB, double *work);
void   fly_model_grad_xi(const fly_model *m, const double *th, const double *X,
                         size_t ldx, const float *xi, size_t n, const double *wL,
                         const double *wB, double *g, double *work);

/* An upper bound on gap_i(th) for one row with bound parameters xi_row,
 * given rho >= |x_i'(th - th_map)| (models with one D-vector of parameters;
 * m->type->thin set): thin->upper(thin->key(xi_row, rho), 1), or the
 * smaller box->upper over the row's own |xi| when the model has a box
 * table.  +inf when rho is. */
/* The slackened bound.  Any B'_n <= B_n is a lower bound too, and
 * B'_n = e^-slack B_n makes every row bright with probability at least
 * 1 - e^-slack whatever theta (docs/design.md §20): gap' = gap + slack.
 * The chain applies it where it evaluates log B (fly_model_eval_xi does it
 * itself; a direct coef->eval caller calls fly_model_slack_logB after) and
 * where it bounds gaps (fly_model_gap_upper_rho and the thinning buckets add
 * m->slack; a scan's p-bound ub becomes fly_model_slack_p(m, ub)).  The
 * collapsed product changes by the constant -N slack. */
void fly_model_slack_logB(const fly_model *m, double *logB, size_t n);
double fly_model_slack_p(const fly_model *m, double p_upper);

double fly_model_gap_upper_rho(const fly_model *m, const float *xi_row,
                               double rho);

/* thin->key of n rows (as key_n describes; m->type->thin set), through
 * key_n where the model has one.  work: work_len(m, n) doubles. */
void fly_model_keys(const fly_model *m, const float *xi, const double *xnorm, size_t n,
                    double *out, double *work);

/* What coef->scan reads of n rows X (stride ldx): Xf = X rounded to f32
 * (stride ldx) and, unless xnorm is NULL, xnorm[i] >= the 2-norm of row
 * i's m->D features (its first m->D values), rounded up to f32 (+inf
 * beyond FLT_MAX, NaN for a NaN row). */
void   fly_model_scan_rows(const fly_model *m, const double *X, size_t ldx,
                           size_t n, float *Xf, float *xnorm);

/* thin->radius of models whose parameters are one D-vector (logistic, robust):
 * sqrt((th - th_map)' H (th - th_map)) with H D x D, row-major. */
double fly_model_radius(const fly_model *m, const double *th,
                        const double *th_map, const double *H, double *work);

/* Look up a model type by name ("logistic"); NULL if unknown. */
const fly_model_type *fly_model_find(const char *name);

extern const fly_model_type fly_model_logistic;
extern const fly_model_type fly_model_softmax;
extern const fly_model_type fly_model_robust;

/* p(z = 1 | theta) = 1 - B/L = -expm1(-gap) for gap = log L - log B >= 0
 * (0 for gap <= 0).  log Ltilde = log(e^gap - 1), its companion, is summed
 * over the bright rows in vector form: fly_vlog_ltilde (util/vmath.h). */
double fly_p_bright(double gap);

/* 1 / fly_p_bright(gap[i]) into out[i] for n rows (+inf for gap <= 0),
 * through the vectorised expm1 (util/vmath.h: within a few ulp of the
 * scalar, the same bits for a value wherever it sits): the weight
 * d log Ltilde / d gap of every bright row at every gradient of the FlyMC
 * target.  gap and out may be the same array. */
void fly_inv_p_bright_n(const double *gap, double *out, size_t n);

#endif
