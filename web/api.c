/* api: the routes of the JSON API and what each answers. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "api.h"
#include "build_info.h"
#include "export.h"
#include "log.h"
#include "plan.h"
#include "store_admit.h"
#include "view.h"
#include "view_notify.h"

#define SEGS_MAX	8
#define STEP_MAX	1000		/* as the CLI: no plan has more steps */
#define SUBMIT_FILE	"request body"	/* names a submitted plan in its events */

static const char allow_read[] = "GET, HEAD";
static const char allow_write[] = "POST";
static const char allow_plans[] = "GET, HEAD, POST";

/* Who may call a route. */
enum api_access {
	API_OPEN,		/* anyone, from anywhere: /healthz */
	API_READ,		/* anyone on loopback; elsewhere an operator */
	API_OPERATOR		/* an operator's token, always (recorded as who) */
};

/* One request as a handler sees it. */
struct api_call {
	const struct api_row *row;
	struct store *s;
	const struct api_target *t;
	const struct uri_query *q;
	const char *body;	/* LEN bytes, NULL for none */
	size_t len;
	const char *actor;	/* the authenticated operator, or NULL */
	struct api_response *r;
};

/* A route: one row of routes[] below. */
struct api_row {
	const char *name;		/* for api_path; a command's kind */
	const char *method;		/* "GET" (HEAD too) or "POST" */
	const char *path;		/* literal segments and {placeholders} */
	void (*handle)(const struct api_call *c);
	enum api_access access;
	int cacheable;			/* its answer may be kept until the store changes */
	const char *const *params;	/* the query parameters it knows, or NULL */
};

/* Sets R to STATUS with DOC (stolen) as its body. */
static void
reply(struct api_response *r, int status, json_t *doc)
{
	char *text = NULL, *grown;
	size_t n;

	free(r->body);
	r->body = NULL;
	r->len = 0;
	r->status = status;
	if (doc != NULL)
		text = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(doc);
	if (text == NULL) {
		r->status = 500;
		text = strdup("{\"error\":\"out of memory\"}");
		if (text == NULL)
			return;
	}
	n = strlen(text);
	if ((grown = realloc(text, n + 2)) == NULL) {
		free(text);
		return;
	}
	grown[n] = '\n';
	grown[n + 1] = '\0';
	r->body = grown;
	r->len = n + 1;
}

void
api_error(struct api_response *r, int status, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	reply(r, status, json_pack("{s:o}", "error", view_string(msg)));
}

void
api_response_clear(struct api_response *r)
{
	free(r->body);
	memset(r, 0, sizeof(*r));
}

/* A store failure: logged, and 503 when the database was busy, else 500. */
static void
store_failed(struct api_response *r, const char *err)
{
	int busy = strstr(err, "locked") != NULL || strstr(err, "busy") != NULL;

	log_event("error", NULL, NULL, "api: %s", err);
	api_error(r, busy ? 503 : 500, "the database failed: %s", err);
}

/* A positive decimal id without leading zeros, at most 18 digits. */
static int
parse_id(const char *s, int64_t *out)
{
	int64_t v = 0;
	size_t n = strlen(s);

	if (n == 0 || n > 18 || s[0] == '0')
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

/* 400 unless every parameter of Q is one of KNOWN (NULL-terminated). */
static int
only_params(const struct uri_query *q, const char *const *known, struct api_response *r)
{
	for (size_t i = 0; i < q->n; i++) {
		size_t k;

		for (k = 0; known[k] != NULL && strcmp(known[k], q->v[i].key) != 0; k++)
			;
		if (known[k] == NULL) {
			api_error(r, 400, "unknown query parameter '%s'", q->v[i].key);
			return -1;
		}
	}
	return 0;
}

/* MS (epoch) as UTC ISO 8601 to the second into OUT. Returns OUT. */
static const char *
time_iso(int64_t ms, char *out, size_t outlen)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (gmtime_r(&t, &tm) == NULL || strftime(out, outlen, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(out, outlen, "%lld ms", (long long)ms);
	return out;
}

/* GET /healthz: whether the database can be read (and its file is the one
 * opened, and its disk not full), and cutover's version and
 * commit (the libraries' versions are in /metrics, which is not open to
 * everyone). */
static void
healthz(const struct api_call *c)
{
	struct api_response *r = c->r;
	struct store_plan p;
	char err[512], when[40];
	int64_t since;
	int rc;

	if (store_file_check(c->s, err, sizeof(err)) != 0) {
		api_error(r, 503, "%s; cutover takes no action on it: stop cutover serve, "
		    "restore the file from a backup and start it again", err);
		return;
	}
	if ((since = store_disk_full_since()) != 0) {
		api_error(r, 503, "disk full: the disk holding the database has been full "
		    "since %s; the plans are held where they were and go on by themselves "
		    "once space is freed there", time_iso(since, when, sizeof(when)));
		return;
	}
	rc = store_plan_get(c->s, 0, &p, err, sizeof(err));
	if (rc != 0 && rc != STORE_NOT_FOUND) {	/* plan 0 never exists */
		log_event("error", NULL, NULL, "healthz: %s", err);
		api_error(r, 503, "the database cannot be read: %s", err);
		return;
	}
	reply(r, 200, json_pack("{s:s,s:s,s:s}", "status", "ok",
	    "version", build_info_get()->version, "commit", build_info_get()->commit));
}

/* Answers a read whose view returned RC (0, STORE_NOT_FOUND, -1). */
static void
read_done(struct api_response *r, int rc, json_t *doc, int64_t id, const char *err)
{
	if (rc == 0)
		reply(r, 200, doc);
	else if (rc == STORE_NOT_FOUND)
		api_error(r, 404, "no plan %lld", (long long)id);
	else
		store_failed(r, err);
}

/* POST /api/plans: the plan's YAML, admitted by the engine's rules. */
static void
submit(const struct api_call *c)
{
	struct store *s = c->s;
	const char *body = c->body, *actor = c->actor, *fresh;
	size_t len = c->len;
	struct api_response *r = c->r;
	struct plan_errors errs = { 0 };
	struct store_plan p;
	json_t *list;
	char err[1024];
	int64_t id = 0;
	int rc;

	if (len == 0) {
		api_error(r, 400, "empty body: POST the plan's YAML");
		return;
	}
	if (memchr(body, '\0', len) != NULL) {
		api_error(r, 400, "the body holds a NUL byte: expected the plan's YAML");
		return;
	}
	if ((fresh = uri_query_get(c->q, "new")) != NULL && strcmp(fresh, "1") != 0 &&
	    strcmp(fresh, "true") != 0) {
		api_error(r, 400, "new=%s: new takes 1 or true (the plan starts anew on a "
		    "broker that may show an earlier run of it)", fresh);
		return;
	}
	rc = store_plan_submit(s, SUBMIT_FILE, body, len, actor,
	    fresh != NULL ? STORE_SUBMIT_NEW : 0, &id, &errs, err, sizeof(err));
	if (rc == STORE_INVALID) {
		if ((list = json_array()) != NULL)
			for (size_t i = 0; i < errs.n; i++)
				json_array_append_new(list, json_pack("{s:i,s:i,s:o}", "line",
				    errs.v[i].line, "column", errs.v[i].column, "message",
				    view_string(errs.v[i].message)));
		reply(r, 400, json_pack("{s:s,s:o*}", "error", errs.n == 1 ?
		    "the plan is not valid: 1 error" : "the plan is not valid", "errors",
		    list));
		plan_errors_free(&errs);
		return;
	}
	plan_errors_free(&errs);
	if (rc == STORE_RUNNING || rc == STORE_UNARCHIVED) {
		/* Which refusal, for a client to say what to do next. */
		reply(r, 409, json_pack("{s:o,s:I,s:s}", "error", view_string(err), "id",
		    (json_int_t)id, "reason", rc == STORE_RUNNING ? "running" : "unarchived"));
		return;
	}
	if (rc != 0 || store_plan_get(s, id, &p, err, sizeof(err)) != 0) {
		store_failed(r, err);
		return;
	}
	log_event("info", p.name, NULL, "plan submitted by %s (id %lld)", actor,
	    (long long)id);
	snprintf(r->location, sizeof(r->location), "/api/plans/%lld", (long long)id);
	reply(r, 201, json_pack("{s:I,s:o,s:o,s:o,s:s}", "id", (json_int_t)id,
	    "name", view_string(p.name), "status", view_string(p.status),
	    "sha256", view_string(p.sha256), "url", r->location));
}

/* The optional {"comment": "…"} of a command's body into OUT. Returns 0
 * (OUT empty when there is none), or -1 with R set to a 400. */
static int
comment_of(const char *body, size_t len, char out[API_COMMENT_MAX + 1],
    struct api_response *r)
{
	json_error_t je;
	json_t *doc, *c;
	const char *key;
	json_t *v;
	int rc = -1;

	out[0] = '\0';
	if (len == 0)
		return 0;
	if ((doc = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je)) == NULL) {
		api_error(r, 400, "malformed JSON body: %s (line %d, column %d)", je.text,
		    je.line, je.column);
		return -1;
	}
	if (!json_is_object(doc)) {
		api_error(r, 400, "the body must be a JSON object: {\"comment\": \"…\"}");
		goto done;
	}
	json_object_foreach(doc, key, v) {
		if (strcmp(key, "comment") != 0) {
			api_error(r, 400, "unknown key in the body (only \"comment\" is known)");
			goto done;
		}
	}
	if ((c = json_object_get(doc, "comment")) != NULL && !json_is_null(c)) {
		if (!json_is_string(c)) {
			api_error(r, 400, "\"comment\" must be a string");
			goto done;
		}
		if (json_string_length(c) > API_COMMENT_MAX) {
			api_error(r, 400, "\"comment\" is longer than %d bytes", API_COMMENT_MAX);
			goto done;
		}
		memcpy(out, json_string_value(c), json_string_length(c) + 1);
	}
	rc = 0;
done:
	json_decref(doc);
	return rc;
}

/* POST approve, retry, abort or ack: the command named as its route,
 * checked and recorded (store_command_record) for the engine to act on. */
static void
command(const struct api_call *c)
{
	struct store *s = c->s;
	const struct api_target *t = c->t;
	const char *kind = c->row->name, *actor = c->actor;
	struct api_response *r = c->r;
	struct store_plan p;
	struct store_step st;
	char comment[API_COMMENT_MAX + 1], err[1024];
	int64_t cmd = 0;
	int idx = -1, rc;
	json_t *doc;

	if (comment_of(c->body, c->len, comment, r) != 0)
		return;
	if ((rc = store_plan_get(s, t->plan_id, &p, err, sizeof(err))) != 0) {
		read_done(r, rc, NULL, t->plan_id, err);
		return;
	}
	if (t->step != 0) {
		if (t->step > STEP_MAX ||
		    (rc = store_step_get(s, t->plan_id, (int)t->step - 1, &st, err,
		    sizeof(err))) == STORE_NOT_FOUND) {
			api_error(r, 404, "plan '%s' has no step %lld", p.name,
			    (long long)t->step);
			return;
		}
		if (rc < 0) {
			store_failed(r, err);
			return;
		}
		store_step_clear(&st);
		idx = (int)t->step - 1;
	}
	rc = store_command_record(s, t->plan_id, kind, idx, t->alert, actor, comment, &cmd,
	    err, sizeof(err));
	if (rc == STORE_REFUSED) {
		api_error(r, 409, "%s", err);
		return;
	}
	if (rc != 0) {
		store_failed(r, err);
		return;
	}
	doc = json_pack("{s:I,s:I,s:s,s:o,s:o,s:s,s:o,s:s}", "command",
	    (json_int_t)cmd, "plan", (json_int_t)t->plan_id, "kind", kind,
	    "step", idx >= 0 ? json_integer(idx + 1) : json_null(),
	    "alert", t->alert != 0 ? json_integer((json_int_t)t->alert) : json_null(),
	    "actor", actor, "comment", view_string(comment),
	    "message", "recorded; the engine acts on it at its next turn, against the "
	    "state it then finds: GET /api/plans/ID/commands/COMMAND says whether it "
	    "was done or refused, and why");
	if (doc != NULL && t->alert != 0)
		view_ack_cause(s, t->plan_id, t->alert, doc);
	reply(r, 202, doc);
}

/* POST /api/plans/{plan}/archive: a finished plan gives up its name
 * (store_plan_archive); not a command for the engine, done at once. */
static void
archive(const struct api_call *c)
{
	struct api_response *r = c->r;
	char comment[API_COMMENT_MAX + 1], err[1024];
	int rc;

	if (comment_of(c->body, c->len, comment, r) != 0)
		return;
	rc = store_plan_archive(c->s, c->t->plan_id, c->actor, comment, err, sizeof(err));
	if (rc == STORE_REFUSED) {
		api_error(r, strncmp(err, "no plan", 7) == 0 ? 404 : 409, "%s", err);
		return;
	}
	if (rc != 0) {
		store_failed(r, err);
		return;
	}
	reply(r, 200, json_pack("{s:I,s:s,s:s,s:o}", "plan", (json_int_t)c->t->plan_id,
	    "kind", "archive", "actor", c->actor, "message", view_string("archived: "
	    "the plan's name may be submitted again")));
}

/* GET /api/plans/ID/commands/C: what the engine made of a command. */
static void
command_status(const struct api_call *call)
{
	const struct api_target *t = call->t;
	struct api_response *r = call->r;
	struct store_command c;
	const char *state;
	char err[1024];
	int rc = store_command_get(call->s, t->plan_id, t->command, &c, err, sizeof(err));

	if (rc == STORE_NOT_FOUND) {
		api_error(r, 404, "plan %lld has no command %lld", (long long)t->plan_id,
		    (long long)t->command);
		return;
	}
	if (rc != 0) {
		store_failed(r, err);
		return;
	}
	state = c.handled_ms == 0 ? "pending" :
	    strncmp(c.outcome, "refused", 7) == 0 ? "refused" : "done";
	reply(r, 200, json_pack("{s:I,s:I,s:s,s:o,s:o,s:o,s:s,s:o,s:o}", "command",
	    (json_int_t)c.id, "plan", (json_int_t)t->plan_id, "kind", c.kind,
	    "step", c.step_idx >= 0 ? json_integer(c.step_idx + 1) : json_null(),
	    "alert", c.alert_id > 0 ? json_integer((json_int_t)c.alert_id) : json_null(),
	    "actor", view_string(c.actor), "state", state,
	    "outcome", c.handled_ms != 0 ? view_string(c.outcome) : json_null(),
	    "handled_ms", c.handled_ms != 0 ? json_integer((json_int_t)c.handled_ms) :
	    json_null()));
}

/* GET /api/plans[?name=NAME]: every plan, or the plans of one name. */
static void
plan_list(const struct api_call *c)
{
	json_t *doc = NULL;
	char err[1024];

	if (view_plan_list(c->s, uri_query_get(c->q, "name"), &doc, err, sizeof(err)) != 0)
		store_failed(c->r, err);
	else
		reply(c->r, 200, doc);
}

/* Answers with VIEW (view.h) of the path's plan: 200, 404 or a store failure. */
static void
plan_read(const struct api_call *c, int (*view)(struct store *, int64_t, json_t **,
    char *, size_t))
{
	json_t *doc = NULL;
	char err[1024];
	int rc = view(c->s, c->t->plan_id, &doc, err, sizeof(err));

	read_done(c->r, rc, doc, c->t->plan_id, err);
}

/* GET /api/plans/{plan}: one plan's document with its steps. */
static void
plan_doc(const struct api_call *c)
{
	plan_read(c, view_plan);
}

/* GET /api/plans/{plan}/history: its events and the chain's verification. */
static void
history(const struct api_call *c)
{
	plan_read(c, view_history);
}

/* GET /api/plans/{plan}/notifications: each delivery to a notifier. */
static void
notifications(const struct api_call *c)
{
	plan_read(c, view_notifications);
}

/* GET /api/plans/{plan}/export[?format=json|csv]: the plan's history as
 * a file `cutover history --verify FILE` checks offline (export.h). */
static void
export(const struct api_call *c)
{
	const char *format = uri_query_get(c->q, "format");
	struct api_response *r = c->r;
	json_t *doc = NULL;
	char err[1024], filename[sizeof(r->filename)], *text = NULL;
	size_t len = 0;
	int csv, rc;

	if (format == NULL)
		format = "json";
	csv = strcmp(format, "csv") == 0;
	if (!csv && strcmp(format, "json") != 0) {
		api_error(r, 400, "format must be json or csv");
		return;
	}
	if ((rc = export_build(c->s, c->t->plan_id, &doc, err, sizeof(err))) != 0) {
		read_done(r, rc, NULL, c->t->plan_id, err);
		return;
	}
	/* names are [a-z0-9._-]: nothing to escape in the header */
	snprintf(filename, sizeof(filename), "cutover-%s-%lld-history.%s",
	    json_string_value(json_object_get(json_object_get(doc, "plan"), "name")),
	    (long long)c->t->plan_id, format);
	if (!csv)
		reply(r, 200, doc);
	else {
		rc = export_csv(doc, &text, &len, err, sizeof(err));
		json_decref(doc);
		if (rc != 0) {
			store_failed(r, err);
			return;
		}
		api_response_clear(r);
		r->status = 200;
		r->body = text;
		r->len = len;
		r->type = "text/csv; charset=utf-8";
	}
	if (r->status == 200)
		snprintf(r->filename, sizeof(r->filename), "%s", filename);
}

/* GET /api/plans/{plan}/samples[?since=MS]: the watch's samples, as text
 * written from the rows (view_samples_text). */
static void
samples(const struct api_call *c)
{
	struct api_response *r = c->r;
	char err[1024], *text = NULL;
	const char *v;
	int64_t since = 0;
	size_t len = 0;
	int rc;

	if ((v = uri_query_get(c->q, "since")) != NULL && strcmp(v, "0") != 0 &&
	    parse_id(v, &since) != 0) {
		api_error(r, 400, "since must be a time in milliseconds since the epoch");
		return;
	}
	rc = view_samples_text(c->s, c->t->plan_id, since, &text, &len, err, sizeof(err));
	if (rc != 0) {
		read_done(r, rc, NULL, c->t->plan_id, err);
		return;
	}
	api_response_clear(r);
	r->status = 200;
	r->body = text;
	r->len = len;
}

/* GET /api/plans/{plan}/steps/{step}/result: the step's recorded result
 * whole, as the engine wrote it (the plan document leaves a large one's
 * long lists out): the stored text itself, never parsed, so that serving
 * megabytes costs serve no more than their copy. */
static void
step_result(const struct api_call *c)
{
	struct api_response *r = c->r;
	struct store_step st;
	char err[1024];
	size_t n;
	int rc = c->t->step > STEP_MAX ? STORE_NOT_FOUND :
	    store_step_get(c->s, c->t->plan_id, (int)c->t->step - 1, &st, err, sizeof(err));

	if (rc == STORE_NOT_FOUND) {
		api_error(r, 404, "plan %lld has no step %lld", (long long)c->t->plan_id,
		    (long long)c->t->step);
		return;
	}
	if (rc != 0) {
		store_failed(r, err);
		return;
	}
	api_response_clear(r);
	n = st.result_json != NULL ? strlen(st.result_json) : 4;
	if ((r->body = malloc(n + 2)) == NULL) {
		store_step_clear(&st);
		api_error(r, 500, "out of memory");
		return;
	}
	memcpy(r->body, st.result_json != NULL ? st.result_json : "null", n);
	r->body[n] = '\n';
	r->body[n + 1] = '\0';
	r->len = n + 1;
	r->status = 200;
	store_step_clear(&st);
}

static const char *const by_name[] = { "name", NULL };
static const char *const by_since[] = { "since", NULL };
static const char *const by_format[] = { "format", NULL };
static const char *const by_new[] = { "new", NULL };

/* The routes: adding one is a handler above and a row here. NAME is what
 * api_path knows it by (for a command, its kind); PATH's {plan}, {step},
 * {alert} and {command} are positive ids; GET rows answer HEAD too.
 * submit takes the plan's YAML, a command {"comment": "…"} or nothing.
 * Answers: healthz 200, 503; plans 200; submit 201, 400, 409; plan,
 * history, notifications, command, result 200, 404; samples, export 200, 400, 404; approve, retry, abort,
 * ack 202, 400, 404, 409; archive 200, 400, 404, 409. */
static const struct api_row routes[] = {
	/* name      method  path                                 handler         access        cache params */
	{ "healthz", "GET",  "/healthz",                          healthz,        API_OPEN,     0, NULL },
	{ "plans",   "GET",  "/api/plans",                        plan_list,      API_READ,     1, by_name },
	{ "submit",  "POST", "/api/plans",                        submit,         API_OPERATOR, 0, by_new },
	{ "plan",    "GET",  "/api/plans/{plan}",                 plan_doc,       API_READ,     1, NULL },
	{ "history", "GET",  "/api/plans/{plan}/history",         history,        API_READ,     1, NULL },
	{ "samples", "GET",  "/api/plans/{plan}/samples",         samples,        API_READ,     1, by_since },
	{ "notifications", "GET", "/api/plans/{plan}/notifications", notifications, API_READ,   1, NULL },
	{ "export",  "GET",  "/api/plans/{plan}/export",          export,         API_READ,     0, by_format },
	{ "command", "GET",  "/api/plans/{plan}/commands/{command}", command_status, API_READ,  0, NULL },
	{ "result",  "GET",  "/api/plans/{plan}/steps/{step}/result", step_result, API_READ,    0, NULL },
	{ "abort",   "POST", "/api/plans/{plan}/abort",           command,        API_OPERATOR, 0, NULL },
	{ "approve", "POST", "/api/plans/{plan}/steps/{step}/approve", command,   API_OPERATOR, 0, NULL },
	{ "retry",   "POST", "/api/plans/{plan}/steps/{step}/retry", command,     API_OPERATOR, 0, NULL },
	{ "ack",     "POST", "/api/plans/{plan}/alerts/{alert}/ack", command,     API_OPERATOR, 0, NULL },
	{ "archive", "POST", "/api/plans/{plan}/archive",         archive,        API_OPERATOR, 0, NULL },
};

#define NROUTES (sizeof(routes) / sizeof(routes[0]))

/* Splits the path P (after its leading '/') into BUF and SEGS. Returns the
 * number of segments, or 0 when there are too many or one is empty. */
static size_t
split(const char *p, char buf[URI_PATH_MAX], char *segs[SEGS_MAX])
{
	char *q, *slash;
	size_t n = 0;

	if (p[0] != '/' || strlen(p) >= URI_PATH_MAX)
		return 0;
	strcpy(buf, p + 1);
	for (q = buf;; q = slash + 1) {
		if (n == SEGS_MAX)
			return 0;
		segs[n++] = q;
		if ((slash = strchr(q, '/')) == NULL)
			break;
		*slash = '\0';
	}
	for (size_t i = 0; i < n; i++)
		if (segs[i][0] == '\0')
			return 0;
	return n;
}

/* Where each placeholder of a route's path goes in the target. */
static const struct {
	const char *name;
	size_t off;
} holes[] = {
	{ "{plan}", offsetof(struct api_target, plan_id) },
	{ "{step}", offsetof(struct api_target, step) },
	{ "{alert}", offsetof(struct api_target, alert) },
	{ "{command}", offsetof(struct api_target, command) },
};

/* Does route ROW's path take the N segments SEGS? Fills T's ids if so. */
static bool
path_matches(const struct api_row *row, char *const *segs, size_t n,
    struct api_target *t)
{
	char buf[URI_PATH_MAX], *pat[SEGS_MAX];
	size_t i, h;

	if (split(row->path, buf, pat) != n)
		return false;
	for (i = 0; i < n; i++) {
		if (pat[i][0] != '{') {
			if (strcmp(pat[i], segs[i]) != 0)
				return false;
			continue;
		}
		for (h = 0; h < sizeof(holes) / sizeof(holes[0]) &&
		    strcmp(holes[h].name, pat[i]) != 0; h++)
			;
		if (h == sizeof(holes) / sizeof(holes[0]) ||
		    parse_id(segs[i], (int64_t *)((char *)t + holes[h].off)) != 0)
			return false;
	}
	return true;
}

int
api_route(const char *method, const char *path, struct api_target *t,
    struct api_response *r)
{
	char buf[URI_PATH_MAX], *segs[SEGS_MAX];
	size_t n = split(path, buf, segs);
	int get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
	int post = strcmp(method, "POST") == 0, any_get = 0, any_post = 0;
	const char *allow;

	for (size_t i = 0; n > 0 && i < NROUTES; i++) {
		struct api_target m = { 0 };
		int row_post = strcmp(routes[i].method, "POST") == 0;

		if (!path_matches(&routes[i], segs, n, &m))
			continue;
		if (row_post ? post : get) {
			*t = m;
			t->route = (int)i;
			t->write = row_post;
			return 0;
		}
		any_post |= row_post;
		any_get |= !row_post;
	}
	memset(t, 0, sizeof(*t));
	if (!any_get && !any_post) {
		api_error(r, 404, "no such resource");
		return -1;
	}
	allow = any_get && any_post ? allow_plans : any_get ? allow_read : allow_write;
	api_error(r, 405, "method %s is not allowed here; allowed: %s",
	    strlen(method) <= 16 ? method : "(too long)", allow);
	r->allow = allow;
	return -1;
}

const char *
api_route_name(const struct api_target *t)
{
	return routes[t->route].name;
}

int
api_needs_token(const struct api_target *t, int reads_need_token)
{
	const struct api_row *row = &routes[t->route];

	return row->access == API_OPERATOR || (row->access == API_READ && reads_need_token);
}

int
api_cache_key(const struct api_target *t, const struct uri_query *q, char *key,
    size_t keylen)
{
	const struct api_row *row = &routes[t->route];
	size_t n = 0, known = 0;
	const char *v;
	int w;

	if (!row->cacheable || keylen == 0)
		return 0;
	key[0] = '\0';
	for (size_t i = 0; row->params != NULL && row->params[i] != NULL; i++) {
		if ((v = uri_query_get(q, row->params[i])) == NULL)
			continue;
		known++;
		w = snprintf(key + n, keylen - n, "%s=%s\n", row->params[i], v);
		if (w < 0 || (size_t)w >= keylen - n)
			return 0;
		n += (size_t)w;
	}
	/* A parameter the route does not take is answered 400, never kept. */
	return known == q->n;
}

int
api_path(const char *name, const char *const *args, char *out, size_t outlen)
{
	const char *p, *end;
	size_t n = 0, k;

	if (outlen == 0)
		return -1;
	out[0] = '\0';
	for (k = 0; k < NROUTES && strcmp(routes[k].name, name) != 0; k++)
		;
	if (k == NROUTES)
		return -1;
	for (p = routes[k].path; *p != '\0'; p++) {
		const char *piece = p;
		size_t len = 1;

		if (*p == '{' && (end = strchr(p, '}')) != NULL) {
			piece = *args++;
			len = strlen(piece);
			p = end;
		}
		if (n + len >= outlen) {
			memcpy(out + n, piece, outlen - 1 - n);
			out[outlen - 1] = '\0';
			return -1;
		}
		memcpy(out + n, piece, len);
		n += len;
	}
	out[n] = '\0';
	return 0;
}

void
api_handle(struct store *s, const struct api_target *t, const struct uri_query *q,
    const char *body, size_t len, const char *actor, struct api_response *r)
{
	static const char *const none[] = { NULL };
	const struct api_row *row = &routes[t->route];
	const struct api_call c = { row, s, t, q, body, len, actor, r };

	if (row->access == API_OPERATOR && (actor == NULL || *actor == '\0')) {
		api_error(r, 401, "this needs an operator's token");
		return;
	}
	if (only_params(q, row->params != NULL ? row->params : none, r) != 0)
		return;
	row->handle(&c);
}
