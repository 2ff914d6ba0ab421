/* serve_config: loads serve.yaml (serve_config.h) with the plan loader's
 * YAML reader (plan_yaml.c, through plan_load_int.h), so that its errors
 * read as a plan's: FILE:LINE:COL, what was found, what was expected, and
 * every unknown key refused. The events a notifier can name, and the
 * history events each stands for, are one table (events[]). The backup
 * directory is looked at on the disk as the file is read, so that a typo
 * there is refused with its line rather than found an interval later. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <openssl/crypto.h>
#include <yaml.h>

#include "errbuf.h"
#include "plan.h"
#include "plan_load_int.h"
#include "serve_config.h"
#include "server.h"

#define NAME_CHARS	"abcdefghijklmnopqrstuvwxyz0123456789._-"
#define URL_EXPECT	"env:NAME (the URL in that variable) or http(s)://host[:port][/path]"

static const struct {
	const char *name;
	const char *kinds[3];		/* history event kinds, NULL-ended */
} events[NOTIFY_NEVENTS] = {
	[NOTIFY_GATE_WAITING] = { "gate_waiting", { "step.waiting_approval" } },
	[NOTIFY_STEP_FAILED] = { "step_failed", { "step.failed" } },
	[NOTIFY_ALERT_OPENED] = { "alert_opened", { "alert.raised" } },
	[NOTIFY_PLAN_FINISHED] = { "plan_finished", { "plan.succeeded", "plan.aborted" } },
};

static const char *const kinds[] = { [NOTIFY_WEBHOOK] = "webhook", [NOTIFY_SLACK] = "slack" };

static const char *const log_levels[] = { "debug", "info", "warn", "error", NULL };

const char *
serve_notify_event_name(enum notify_event e)
{
	return (unsigned)e < NOTIFY_NEVENTS ? events[e].name : "?";
}

int
serve_notify_event_of(const char *kind, enum notify_event *out)
{
	for (int e = 0; e < NOTIFY_NEVENTS; e++)
		for (int k = 0; events[e].kinds[k] != NULL; k++)
			if (strcmp(events[e].kinds[k], kind) == 0) {
				*out = (enum notify_event)e;
				return 0;
			}
	return -1;
}

const char *
serve_notify_kind_name(enum notify_kind k)
{
	return (unsigned)k < sizeof(kinds) / sizeof(kinds[0]) ? kinds[k] : "?";
}

/* Index of scalar N's text in the NULL-ended WORDS, or -1 after reporting
 * that WHAT is none of them. */
static int
one_of(struct loader *ld, const yaml_node_t *n, const char *what, const char *const *words,
    size_t nwords)
{
	char expect[160];
	const char *t;
	size_t i, o = 0;

	expect[0] = '\0';
	for (i = 0; i < nwords && o < sizeof(expect); i++)
		o += (size_t)snprintf(expect + o, sizeof(expect) - o, "%s%s",
		    i == 0 ? "" : i + 1 == nwords ? " or " : ", ", words[i]);
	if ((t = py_conv_text(ld, n, what, expect)) == NULL)
		return -1;
	for (i = 0; i < nwords; i++)
		if (strcmp(t, words[i]) == 0)
			return (int)i;
	py_err_at(ld, n, "%s '%.64s' is unknown; expected %s", what, t, expect);
	return -1;
}

static void
load_listen(struct loader *ld, const struct sect *root, struct serve_config *c)
{
	struct sockaddr_storage ss;
	socklen_t sslen;
	yaml_node_t *n;
	char err[256];
	int loopback;

	if ((n = py_field(ld, root, "listen", 0, "")) == NULL)
		return;
	if (py_conv_dup(ld, n, "listen", "HOST:PORT such as 127.0.0.1:8080", &c->listen) != 0)
		return;
	c->listen_line = py_mark_num(n->start_mark.line);
	c->listen_column = py_mark_num(n->start_mark.column);
	if (c->listen != NULL && server_listen_parse(c->listen, &ss, &sslen, &loopback, err,
	    sizeof(err)) != 0)
		py_err_at(ld, n, "listen: %s", err);
}

static void
load_log_level(struct loader *ld, const struct sect *root, struct serve_config *c)
{
	yaml_node_t *n;
	int i;

	if ((n = py_field(ld, root, "log_level", 0, "")) == NULL)
		return;
	if ((i = one_of(ld, n, "log_level", log_levels, 4)) >= 0)
		c->log_level = py_copy(ld, log_levels[i]);
}

/* The text of a notifier's required KEY in S, with its node in *N and its
 * label ("notifiers[0].url") in WHAT (64 bytes). Returns it, or NULL once
 * it is reported missing or not text (EXPECT says what it should be). */
static const char *
required_text(struct loader *ld, const struct sect *s, const char *key,
    const char *expect, yaml_node_t **n, char what[64])
{
	if ((*n = py_field(ld, s, key, 1, expect)) == NULL)
		return NULL;
	py_label(what, 64, s, key);
	return py_conv_text(ld, *n, what, expect);
}

static void
load_name(struct loader *ld, const struct sect *s, const struct serve_config *c,
    struct serve_notifier *nt)
{
	static const char expect[] = "1 to 64 of a-z, 0-9, '.', '_' and '-'";
	char what[64];
	yaml_node_t *n;
	const char *t;
	size_t len;

	if ((t = required_text(ld, s, "name", expect, &n, what)) == NULL)
		return;
	len = strlen(t);
	if (len > 64 || strspn(t, NAME_CHARS) != len) {
		py_err_at(ld, n, "%s '%.64s' is not a valid name; expected %s", what, t, expect);
		return;
	}
	for (size_t i = 0; i < c->nnotifiers; i++)
		if (strcmp(c->notifiers[i].name, t) == 0) {
			py_err_at(ld, n, "%s '%s' is the name of notifiers[%zu] too; expected "
			    "each notifier's name once", what, t, i);
			return;
		}
	memcpy(nt->name, t, len + 1);
}

/* A notifier's url: env:NAME, or a literal http(s) URL that is never
 * repeated in a message (a Slack webhook's URL is its credential). */
static void
load_url(struct loader *ld, const struct sect *s, struct serve_notifier *nt)
{
	const char *t, *why;
	char what[64];
	yaml_node_t *n;
	int secret;

	if ((t = required_text(ld, s, "url", URL_EXPECT, &n, what)) == NULL)
		return;
	if (strncmp(t, "env:", 4) == 0) {
		if (py_check_env_ref(ld, n, what, t) != 0)
			return;
	} else if ((why = py_url_problem(t, URL_HTTP, &secret)) != NULL) {
		py_err_at(ld, n, "%s %s; expected %s", what, why, URL_EXPECT);
		return;
	}
	nt->url = py_copy(ld, t);
}

static void
load_events(struct loader *ld, const struct sect *s, struct serve_notifier *nt)
{
	const char *names[NOTIFY_NEVENTS];
	char what[64], item[80], expect[160];
	yaml_node_t *n;
	size_t count, i;
	int e;

	for (e = 0; e < NOTIFY_NEVENTS; e++)
		names[e] = events[e].name;
	snprintf(expect, sizeof(expect), "a list of %s, %s, %s or %s", names[0], names[1],
	    names[2], names[3]);
	if ((n = py_field(ld, s, "events", 1, expect)) == NULL)
		return;
	py_label(what, sizeof(what), s, "events");
	if ((count = py_seq_items(ld, n, what, expect)) == 0)
		return;
	for (i = 0; i < count; i++) {
		snprintf(item, sizeof(item), "%s[%zu]", what, i);
		if ((e = one_of(ld, py_seq_item(ld, n, i), item, names, NOTIFY_NEVENTS)) < 0)
			continue;
		if (nt->events & (1u << e))
			py_err_at(ld, py_seq_item(ld, n, i), "%s '%s' is listed twice; "
			    "expected each event once", item, names[e]);
		nt->events |= 1u << e;
	}
}

/* Item I of notifiers: a mapping with name, kind, url, events and
 * optionally attempts and backoff. */
static void
load_notifier(struct loader *ld, yaml_node_t *n, size_t i, struct serve_config *c)
{
	static const char *const keys[] = { "name", "kind", "url", "events", "attempts",
	    "backoff", NULL };
	struct serve_notifier *nt = &c->notifiers[c->nnotifiers];
	char path[32], what[64];
	struct sect s;
	yaml_node_t *k;
	int kind;

	snprintf(path, sizeof(path), "notifiers[%zu]", i);
	if (n->type != YAML_MAPPING_NODE) {
		py_err_at(ld, n, "%s is %s; expected a mapping with name, kind, url and events",
		    path, py_kind_name(n));
		return;
	}
	s.map = n;
	s.path = path;
	memset(nt, 0, sizeof(*nt));
	nt->attempts = SERVE_NOTIFY_ATTEMPTS;
	nt->backoff_ms = SERVE_NOTIFY_BACKOFF_MS;
	nt->line = py_mark_num(n->start_mark.line);
	nt->column = py_mark_num(n->start_mark.column);
	py_check_keys(ld, &s, keys);
	load_name(ld, &s, c, nt);
	py_label(what, sizeof(what), &s, "kind");
	if ((k = py_field(ld, &s, "kind", 1, "webhook or slack")) != NULL &&
	    (kind = one_of(ld, k, what, kinds, 2)) >= 0)
		nt->kind = (enum notify_kind)kind;
	load_url(ld, &s, nt);
	load_events(ld, &s, nt);
	if ((k = py_field(ld, &s, "attempts", 0, "")) != NULL)
		py_conv_int(ld, k, py_label(what, sizeof(what), &s, "attempts"), 1, 20,
		    &nt->attempts);
	if (py_get_duration(ld, &s, "backoff", 0, &nt->backoff_ms) == 0 &&
	    nt->backoff_ms > 5 * 60 * 1000)
		py_err_at(ld, py_field(ld, &s, "backoff", 0, ""), "%s.backoff is longer than "
		    "5m; expected the first retry's delay, at most 5m", path);
	c->nnotifiers++;
}

static void
load_notifiers(struct loader *ld, const struct sect *root, struct serve_config *c)
{
	static const char expect[] = "a list of { name, kind, url, events }";
	yaml_node_t *n;
	size_t count, i;

	if ((n = py_field(ld, root, "notifiers", 0, expect)) == NULL)
		return;
	if ((count = py_seq_items(ld, n, "notifiers", expect)) == 0)
		return;
	if (count > SERVE_NOTIFIERS_MAX) {
		py_err_at(ld, n, "notifiers lists %zu; expected at most %d", count,
		    SERVE_NOTIFIERS_MAX);
		return;
	}
	if ((c->notifiers = calloc(count, sizeof(*c->notifiers))) == NULL) {
		ld->oom = 1;
		return;
	}
	for (i = 0; i < count; i++)
		load_notifier(ld, py_seq_item(ld, n, i), i, c);
}

/* backup.directory: an existing directory this process may write in (and
 * search: the copies are named in it). */
static void
load_backup_directory(struct loader *ld, const struct sect *s, struct serve_backup *b)
{
	static const char expect[] = "an existing directory serve can write in";
	yaml_node_t *n;
	struct stat st;
	const char *t;

	if ((n = py_field(ld, s, "directory", 1, expect)) == NULL)
		return;
	if ((t = py_conv_text(ld, n, "backup.directory", expect)) == NULL)
		return;
	if (stat(t, &st) != 0) {
		py_err_at(ld, n, "backup.directory %s %s; expected %s", t, errno == ENOENT ?
		    "does not exist" : strerror(errno), expect);
		return;
	}
	if (!S_ISDIR(st.st_mode)) {
		py_err_at(ld, n, "backup.directory %s is not a directory; expected %s", t,
		    expect);
		return;
	}
	if (access(t, W_OK | X_OK) != 0) {
		py_err_at(ld, n, "backup.directory %s is not writable by this user (uid %u): "
		    "%s; expected %s", t, (unsigned)geteuid(), strerror(errno), expect);
		return;
	}
	b->directory = py_copy(ld, t);
}

/* backup: a mapping of directory (required), interval and keep. */
static void
load_backup(struct loader *ld, const struct sect *root, struct serve_config *c)
{
	static const char *const keys[] = { "directory", "interval", "keep", NULL };
	static const char expect[] = "a mapping of directory, interval and keep";
	struct serve_backup *b = &c->backup;
	struct sect s;
	yaml_node_t *n;

	b->interval_ms = SERVE_BACKUP_INTERVAL_MS;
	b->keep = SERVE_BACKUP_KEEP;
	if (py_get_map(ld, root, "backup", 0, expect, "backup", &s) != 0 || s.map == NULL)
		return;
	b->line = py_mark_num(s.map->start_mark.line);
	b->column = py_mark_num(s.map->start_mark.column);
	py_check_keys(ld, &s, keys);
	load_backup_directory(ld, &s, b);
	if (py_get_duration(ld, &s, "interval", 0, &b->interval_ms) == 0 &&
	    b->interval_ms < SERVE_BACKUP_INTERVAL_MIN_MS)
		py_err_at(ld, py_field(ld, &s, "interval", 0, ""), "backup.interval is shorter "
		    "than %ds; expected a duration of at least %ds, such as 1h",
		    SERVE_BACKUP_INTERVAL_MIN_MS / 1000, SERVE_BACKUP_INTERVAL_MIN_MS / 1000);
	if ((n = py_field(ld, &s, "keep", 0, "")) != NULL)
		py_conv_int(ld, n, "backup.keep", 1, SERVE_BACKUP_KEEP_MAX, &b->keep);
}

static void
load_root(struct loader *ld, yaml_node_t *root, struct serve_config *c)
{
	static const char *const keys[] = { "listen", "db", "operators", "log_level",
	    "notifiers", "backup", "workers", NULL };
	struct sect s = { root, "" };
	yaml_node_t *n;

	if (root->type != YAML_MAPPING_NODE) {
		py_err_at(ld, root, "the configuration is %s; expected a mapping of listen, "
		    "db, operators, log_level, notifiers, backup and workers", py_kind_name(root));
		return;
	}
	py_check_keys(ld, &s, keys);
	load_listen(ld, &s, c);
	py_get_text(ld, &s, "db", 0, "the database's path", &c->db);
	py_get_text(ld, &s, "operators", 0, "the operators file's path", &c->operators);
	load_log_level(ld, &s, c);
	load_notifiers(ld, &s, c);
	load_backup(ld, &s, c);
	if ((n = py_field(ld, &s, "workers", 0, "")) != NULL)
		py_conv_int(ld, n, "workers", 1, SERVE_WORKERS_MAX, &c->workers);
}

int
serve_config_load_buffer(const char *file, const char *buf, size_t len,
    struct serve_config **out, struct plan_errors *errs)
{
	struct plan_errors local;
	struct serve_config *c = NULL;
	struct py_document d = { 0 };
	yaml_node_t *root;
	struct loader ld;
	int rc = -1;

	*out = NULL;
	if (errs == NULL)
		errs = &local;
	memset(errs, 0, sizeof(*errs));
	memset(&ld, 0, sizeof(ld));
	ld.errs = errs;
	ld.root_name = "the configuration";
	if (file == NULL)
		file = "(config)";
	if ((errs->file = strdup(file)) == NULL || (c = calloc(1, sizeof(*c))) == NULL ||
	    (c->file = strdup(file)) == NULL) {
		ld.oom = 1;
		goto done;
	}
	if (py_read_document(&ld, &d, buf, len, &root, "a YAML mapping of listen, db, "
	    "operators, log_level, notifiers, backup and workers", "configuration") == -1)
		goto done;
	load_root(&ld, root, c);
done:
	if (py_load_end(&ld, &d, "configuration")) {
		*out = c;
		c = NULL;
		rc = 0;
	}
	serve_config_free(c);
	if (errs == &local || rc == 0)
		plan_errors_free(errs);
	return rc;
}

int
serve_config_load_file(const char *path, struct serve_config **out,
    struct plan_errors *errs)
{
	char *buf = NULL;
	size_t len = 0;
	int rc;

	*out = NULL;
	if (py_read_file(path, "configuration", "a configuration of a few kilobytes", &buf,
	    &len, errs) != 0)
		return -1;
	rc = serve_config_load_buffer(path, buf, len, out, errs);
	free(buf);
	return rc;
}

void
serve_config_free(struct serve_config *c)
{
	if (c == NULL)
		return;
	for (size_t i = 0; i < c->nnotifiers; i++)
		free(c->notifiers[i].url);
	free(c->notifiers);
	free(c->file);
	free(c->listen);
	free(c->db);
	free(c->operators);
	free(c->log_level);
	free(c->backup.directory);
	free(c);
}

int
serve_notifier_url(const struct serve_notifier *n, char *buf, size_t len, char *err,
    size_t errlen)
{
	const char *v = n->url;
	int secret;

	if (strncmp(v, "env:", 4) == 0 && ((v = getenv(n->url + 4)) == NULL || *v == '\0')) {
		errbuf_set(err, errlen, "notifier %s: %s is not set; expected the webhook's "
		    "URL in it", n->name, n->url);
		return -1;
	}
	if (strlen(v) >= len) {
		errbuf_set(err, errlen, "notifier %s: its URL is longer than %zu bytes",
		    n->name, len - 1);
		return -1;
	}
	if (py_url_problem(v, URL_HTTP, &secret) != NULL) {
		errbuf_set(err, errlen, "notifier %s: %s does not hold an http(s) URL "
		    "(its value is not shown)", n->name, n->url);
		return -1;
	}
	memcpy(buf, v, strlen(v) + 1);
	return 0;
}

int
serve_config_check_env(const struct serve_config *c, char *err, size_t errlen)
{
	char url[4096], why[512];

	for (size_t i = 0; i < c->nnotifiers; i++) {
		const struct serve_notifier *n = &c->notifiers[i];

		if (serve_notifier_url(n, url, sizeof(url), why, sizeof(why)) != 0) {
			OPENSSL_cleanse(url, sizeof(url));
			errbuf_set(err, errlen, "%s:%d:%d: %s", c->file, n->line, n->column, why);
			return -1;
		}
		OPENSSL_cleanse(url, sizeof(url));
	}
	return 0;
}
