/* plan: the migration plan of DESIGN.md §2 — its model, its YAML loader
 * (libyaml's document API) and its validation. Every error carries the file,
 * line and column it is about; all errors are collected, not just the first.
 * Secrets stay `env:NAME` references here; they are resolved only at use. */
#ifndef CUTOVER_PLAN_H
#define CUTOVER_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ladder.h"
#include "tls.h"

#define PLAN_NAME_MAX 64

struct plan_library;
#define PLAN_DEFAULT_CANARY_BUDGET_MS (2 * 60 * 1000)
/* flag.settle: how long the engine keeps reading the flag after a write
 * in doubt, a rollback or the end of a plan that switched it. A write the
 * flag client gave up on (it waits FLAG_TIMEOUT_MS, 10 s, for an answer;
 * a whole switch call at most FLAG_BUDGET_MS, 30 s) may still be applied
 * by a service that holds it: one was seen applying writes 45 s after
 * they were sent. Two minutes is four times the client's whole budget and
 * over twice that 45 s; the cost is one bounded GET a second meanwhile.
 * A plan may not go below the client's request timeout plus 5 s: shorter,
 * a write could still be waiting for its answer when the window ends. */
#define PLAN_DEFAULT_FLAG_SETTLE_MS (2 * 60 * 1000)
#define PLAN_MIN_FLAG_SETTLE_MS (15 * 1000)

/* One per row of the step-kind table (step_kinds.def), in its order. */
enum plan_step_kind {
#define STEP_KIND(id, ...) PLAN_STEP_##id,
#include "step_kinds.def"
#undef STEP_KIND
	PLAN_STEP_KIND_COUNT
};

enum plan_queue_type { PLAN_QUEUE_QUORUM, PLAN_QUEUE_CLASSIC };

struct plan_step {
	enum plan_step_kind kind;
	bool gate;
	int line, column;              /* where the step is written */
};

/* A broker as a plan names it (broker:, target:). */
struct plan_broker {
	char *amqp;                /* amqp://host:port/vhost (no credentials) */
	char *management;          /* http(s)://host:port */
	/* broker.amqp and broker.management as lists (a cluster's
	 * nodes), tried in order: [0] equals amqp / management. A
	 * single string is a list of one. */
	char **amqp_urls;
	size_t namqp;
	char **management_urls;
	size_t nmanagement;
	char *username;
	char *password;            /* env:NAME reference, never a literal */
	struct tls_opts tls;       /* broker.tls: for amqps:// and https:// */
	int64_t return_after_ms;   /* broker.return_after: on a later node
	                            * of a list, how long before the
	                            * earlier ones are tried again */
	const char *section;       /* "broker" or "target" (static): names
	                            * it in messages */
};

struct plan_header {               /* one HTTP header; value may be env:NAME */
	char *name;
	char *value;
};

struct plan_http_call {            /* flag.on / flag.off */
	char *method;                  /* GET, POST, PUT, PATCH, DELETE */
	char *url;
	char *body;                    /* may be NULL */
};

struct plan {
	char *file;                    /* as given to the loader */
	char name[PLAN_NAME_MAX + 1];  /* [a-z0-9._-]{1,64} */

	struct plan_broker broker;     /* broker: the old path's, and the
	                                * ladder's too when there is no target */
	struct plan_broker target;     /* target: the broker the ladder is built
	                                * on and producers are flipped to, when
	                                * it is another (has_target) */
	bool has_target;

	struct {
		char *match;               /* PCRE2 pattern over queue names, or NULL */
		char **names;              /* or explicit names */
		size_t nnames;
		int64_t max_message_ttl_ms; /* 0 when not given */
		bool allow_expiring;       /* old.allow_expiring: an old queue whose
		                            * x-expires is shorter than its horizon is
		                            * a warning, not a refusal (default false) */
		const struct plan_library *library; /* old.library's row, or NULL */
		bool match_from_library;   /* match is the library's selection */
		bool from_ladder;          /* old.ladder: the old path is a ladder,
		                            * its level queues the selection */
		struct ladder ladder;      /* that ladder, when from_ladder */
	} old;

	struct ladder ladder;          /* naming, prefix, unit, levels */
	int64_t max_delay_ms;          /* as written, or 0 when `levels` was given */
	enum plan_queue_type queue_type;
	char **destinations;           /* each destination's routing key suffix
	                                * (ladder.destinations: the short form,
	                                * or the long form's key) */
	size_t ndestinations;
	struct plan_target {           /* what destination i's key reaches */
		char *name;                /* a queue, or an exchange; NULL: the
		                            * queue named as the key (short form) */
		bool exchange;             /* NAME is an exchange its owner binds
		                            * its queues to */
	} *destination_targets;        /* one per destination, or NULL: all short */
	struct plan_pos {              /* where each destination is written */
		int line, column;
	} *destinations_at;
	bool create_destinations;      /* ladder.create_destinations: declare_ladder
	                                * creates missing destination queues
	                                * (default false: a missing one is an
	                                * error, most likely a typo) */

	struct {
		int64_t *delays_ms;        /* as written, or one per level within budget */
		size_t ndelays;
		bool delays_defaulted;
		int64_t max_lateness_ms;   /* default 2s */
		int64_t budget_ms;         /* default PLAN_DEFAULT_CANARY_BUDGET_MS */
	} canary;

	struct {
		const char *kind;          /* the flag provider's name (static, from
		                            * flag_provider_find); NULL when the
		                            * plan has no flag */
		void *settings;            /* the provider's own settings, of its
		                            * kind's struct (plan_flag.h:
		                            * plan_flag_unleash, plan_flag_http);
		                            * owned, freed through its kind's row */
		struct tls_opts tls;       /* flag.tls: for https:// */
		int64_t settle_ms;         /* flag.settle; default
		                            * PLAN_DEFAULT_FLAG_SETTLE_MS */
	} flag;

	struct {
		int64_t interval_ms;       /* default 10s */
		int64_t allowance_ms;      /* default 30s */
		int64_t probe_every_ms;    /* default 1m */
	} watch;

	struct {                       /* move_old */
		int64_t rate_per_s;        /* messages moved per second at most;
		                            * default 500 */
		int prefetch;              /* messages taken before their confirms
		                            * are awaited; default 100 */
		int64_t unknown_max_lateness_ms; /* an unstamped message is moved
		                            * with its queue's full TTL only when
		                            * that TTL is at most this; default 0 */
		int64_t stragglers_ms;     /* how long after the flip producers may
		                            * still publish into the old path;
		                            * default 1m */
		struct plan_move_entry {   /* first matching entry wins */
			char *match;           /* PCRE2 over queue names */
			int from;              /* enum move_from (steps/move_entry.h) */
			int then;              /* the source tried when FROM gives no
			                        * entry time (from: [a, b]); unknown:
			                        * none */
			char *header;          /* from: header */
			int line, column;      /* 0 for the library's */
		} *entries;
		size_t nentries;
		bool entries_from_library; /* entries are old.library's */
	} move_old;

	struct plan_step *steps;
	size_t nsteps;
};

struct plan_error {
	int line, column;              /* 1-based; 0 when not about a position */
	char message[320];
};

struct plan_errors {
	char *file;
	struct plan_error *v;
	size_t n, cap;
};

/* Returns the step kind's name as written in plans ("measure_horizon"…). */
const char *plan_step_kind_name(enum plan_step_kind kind);

/* Parses a step kind's name. Returns 0, or -1 if NAME is not one. */
int plan_step_kind_parse(const char *name, enum plan_step_kind *out);

/* Whether a step of KIND waits for approval when the plan does not say
 * (the table's GATE). */
bool plan_step_kind_gated(enum plan_step_kind kind);

/* Writes every step kind's name, in table order, separated by ", ", into
 * OUT (for messages that list what is expected). Returns OUT. */
char *plan_step_kind_names(char *out, size_t outlen);

/* The plan section a step of KIND cannot run without (the table's
 * SECTION), or NULL; *WHY (may be NULL) gets the rest of the error. */
const char *plan_step_kind_section(enum plan_step_kind kind, const char **why);

/* What the status page shows of a step of KIND's result when it has no view
 * of its own (the table's SHOWS: "LABEL=/json/pointer" pairs separated by
 * ", "), or NULL. */
const char *plan_step_kind_shows(enum plan_step_kind kind);

/* Reads the next pair of SHOWS at *CUR into LABEL and POINTER and moves *CUR
 * past it. Returns 0, or -1 when there is none left (or it has no '='). */
int plan_step_shows_next(const char **cur, char *label, size_t labellen,
    char *pointer, size_t pointerlen);

/* Loads and validates the plan in PATH. On success returns 0 and stores a
 * plan the caller frees with plan_free. On failure returns -1, stores no
 * plan, and fills ERRS (which the caller frees with plan_errors_free) with
 * every error found, in file order. ERRS is overwritten, not freed first;
 * it is left empty on success and may be NULL. */
int plan_load_file(const char *path, struct plan **out, struct plan_errors *errs);

/* As plan_load_file, for a plan held in memory; FILE names it in errors. */
int plan_load_buffer(const char *file, const char *buf, size_t len,
    struct plan **out, struct plan_errors *errs);

/* Frees a plan from plan_load_*. NULL is fine. */
void plan_free(struct plan *p);

/* The error list (plan_errors.c). Frees what ERRS holds and leaves it
 * empty. */
void plan_errors_free(struct plan_errors *errs);

/* Writes one error as "FILE:LINE:COLUMN: message" into OUT. Returns OUT. */
char *plan_error_format(const struct plan_errors *errs, size_t i, char *out, size_t outlen);

/* What destination I of P (I < ndestinations) reaches: the name of its
 * queue, or of its exchange when *EXCHANGE (may be NULL) is set. For the
 * short form that is the queue named as its key. Borrowed from P. */
const char *plan_destination_target(const struct plan *p, size_t i, bool *exchange);

/* Whether NAME is a destination's routing key or what one reaches (a
 * queue or exchange of its owner's). */
bool plan_names_destination(const struct plan *p, const char *name);

/* Writes where P's ladder.destinations lists NAME (a key, or the queue or
 * exchange one reaches) as "FILE:LINE:COLUMN" into OUT ("FILE" alone when
 * NAME is not listed). Returns OUT. */
char *plan_destination_where(const struct plan *p, const char *name, char *out,
    size_t outlen);

/* The broker P's ladder is built on and its producers are flipped to:
 * its target when it names one, else its broker. */
const struct plan_broker *plan_ladder_broker(const struct plan *p);

/* Index of the first step of KIND in P, or -1. */
int plan_find_step(const struct plan *p, enum plan_step_kind kind);

/* The queues of P's own: every level queue, the parking queue, each
 * destination (what its ladder consists of and feeds), the watch's probe
 * and statistics queues and the canary's queue (what the service itself
 * uses), which no
 * old selection may ever select. Calls FN(ARG, NAME, WHAT) for each, WHAT
 * saying which it is ("level queue", "parking queue", ...), and stops at
 * the first call that returns non-zero. Returns that value, or 0. */
int plan_own_queues(const struct plan *p,
    int (*fn)(void *arg, const char *name, const char *what), void *arg);

/* The watch's probe queue of P ("cutover.probe.NAME") into OUT. Returns OUT. */
char *plan_probe_queue(const struct plan *p, char *out, size_t outlen);

/* The watch's statistics exchange of P ("cutover.stats.NAME") into OUT,
 * and its queue of generation GEN ("cutover.stats.NAME.GEN": a new
 * generation is a queue whose counter starts from nothing). Every name
 * that starts with the exchange's name and a dot is the plan's own.
 * Return OUT. */
char *plan_stats_exchange(const struct plan *p, char *out, size_t outlen);
char *plan_stats_queue(const struct plan *p, int64_t gen, char *out, size_t outlen);

/* The canary's queue of P ("cutover.canary.NAME") into OUT. Returns OUT. */
char *plan_canary_queue(const struct plan *p, char *out, size_t outlen);

/* Internal to plans/: the loader (plan_load_int.h) reports through these,
 * plan_errors.c defines them. */

/* Appends an error at LINE:COLUMN (1-based; 0 for none) to ERRS. Returns 0,
 * or -1 when out of memory (the error is then lost). */
int plan_errors_add(struct plan_errors *errs, int line, int column,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* The checks that concern the plan as a whole, run by the loader once every
 * section is read: the steps' presence and order, and the canary delays the
 * plan leaves to their default (one per level within the budget). Appends
 * what is wrong to ERRS. Returns 0, or -1 when out of memory. */
int plan_validate(struct plan *p, struct plan_errors *errs);

#endif
