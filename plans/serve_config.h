/* serve_config: the configuration of `cutover serve` (serve.yaml): where it
 * listens, its database, its operators file, its log level, its notifiers
 * (webhooks for gate waiting, step failed, alert opened, plan finished) and
 * its scheduled backups (a directory, how often, how many kept). Read with the plan loader's YAML reader: every error names
 * FILE:LINE:COL and unknown keys are errors. A notifier's URL is a secret
 * (a Slack webhook's is its credential): it is held as written, an env:NAME
 * reference resolved at use or a literal, and never echoed. */
#ifndef CUTOVER_SERVE_CONFIG_H
#define CUTOVER_SERVE_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "plan.h"

/* What a notifier can be told about, in serve.yaml's words. */
enum notify_event {
	NOTIFY_GATE_WAITING,		/* a gated step waits for approval */
	NOTIFY_STEP_FAILED,		/* a step failed (the plan stops) */
	NOTIFY_ALERT_OPENED,		/* an alert was raised */
	NOTIFY_PLAN_FINISHED,		/* the plan succeeded or was aborted */
	NOTIFY_NEVENTS
};

enum notify_kind {
	NOTIFY_WEBHOOK,			/* a JSON document POSTed as is */
	NOTIFY_SLACK			/* a Slack incoming webhook: {"text": ...} */
};

#define SERVE_NOTIFIERS_MAX		16
#define SERVE_NOTIFY_ATTEMPTS		5	/* default attempts per delivery */
#define SERVE_NOTIFY_BACKOFF_MS		1000	/* default first retry delay */

struct serve_notifier {
	char name[65];			/* [a-z0-9._-]{1,64}, unique: what is recorded */
	enum notify_kind kind;
	char *url;			/* env:NAME or a literal URL; a secret */
	unsigned events;		/* bit (1u << enum notify_event) per event */
	int attempts;			/* 1..20 */
	int64_t backoff_ms;		/* before the 2nd attempt, doubling, at most 5 min */
	int line, column;		/* where the notifier is written */
};

#define SERVE_BACKUP_INTERVAL_MS	(60 * 60 * 1000)	/* default: hourly */
#define SERVE_BACKUP_INTERVAL_MIN_MS	(10 * 1000)
#define SERVE_BACKUP_KEEP		24
#define SERVE_BACKUP_KEEP_MAX		100000

/* backup: checked copies of the database made by serve at each interval. */
struct serve_backup {
	char *directory;		/* NULL: no backup section */
	int64_t interval_ms;		/* at least SERVE_BACKUP_INTERVAL_MIN_MS */
	int keep;			/* checked copies kept, 1..SERVE_BACKUP_KEEP_MAX */
	int line, column;		/* where the section is written */
};

/* The most workers serve runs plans on (engine.h's ENGINE_WORKERS_MAX). */
#define SERVE_WORKERS_MAX 64

struct serve_config {
	char *file;
	char *listen, *db, *operators;	/* NULL when not given */
	char *log_level;		/* debug, info, warn, error; NULL: info */
	int listen_line, listen_column;
	struct serve_notifier *notifiers;
	size_t nnotifiers;
	struct serve_backup backup;	/* backup.directory NULL: none */
	int workers;			/* serve's workers, 1 to SERVE_WORKERS_MAX;
					 * 0 when not given */
};

/* Reads the serve configuration at PATH into *OUT (freed with
 * serve_config_free). A backup section's directory is looked at now: it
 * must be a directory this process can write in. Returns 0, or -1 with ERRS (freed with
 * plan_errors_free; may be NULL) holding every error in file order, each
 * formatted by plan_error_format as FILE:LINE:COL: message. */
int serve_config_load_file(const char *path, struct serve_config **out,
    struct plan_errors *errs);

/* As serve_config_load_file, for text in memory; FILE names it. */
int serve_config_load_buffer(const char *file, const char *buf, size_t len,
    struct serve_config **out, struct plan_errors *errs);

/* Frees C (NULL is fine). */
void serve_config_free(struct serve_config *c);

/* Checks that every env:NAME a notifier's URL refers to is set in this
 * process's environment to an http(s) URL (the value is not kept nor
 * echoed). Returns 0, or -1 with ERR naming FILE:LINE:COL, the notifier
 * and the variable. */
int serve_config_check_env(const struct serve_config *c, char *err, size_t errlen);

/* The word of event E in serve.yaml ("gate_waiting"), or "?". */
const char *serve_notify_event_name(enum notify_event e);

/* The notifier event that history event KIND ("step.failed") stands for,
 * into *OUT. Returns 0, or -1 when KIND is none of them. */
int serve_notify_event_of(const char *kind, enum notify_event *out);

/* "webhook" or "slack". */
const char *serve_notify_kind_name(enum notify_kind k);

/* Resolves notifier N's URL at use into BUF (which the caller wipes with
 * OPENSSL_cleanse when done). Returns 0, or -1 with ERR naming the
 * variable, never its value. */
int serve_notifier_url(const struct serve_notifier *n, char *buf, size_t len, char *err,
    size_t errlen);

#endif
