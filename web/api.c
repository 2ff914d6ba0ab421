/* api: the routes of the JSON API and what each answers. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api.h"
#include "log.h"
#include "plan.h"
#include "store_admit.h"
#include "view.h"

#define SEGS_MAX	8
#define STEP_MAX	1000		/* as the CLI: no plan has more steps */
#define SUBMIT_FILE	"request body"	/* names a submitted plan in its events */

static const char allow_read[] = "GET, HEAD";
static const char allow_write[] = "POST";
static const char allow_plans[] = "GET, HEAD, POST";

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

int
api_route(const char *method, const char *path, struct api_target *t,
    struct api_response *r)
{
	char buf[URI_PATH_MAX], *segs[SEGS_MAX], *p, *slash;
	const char *allow;
	size_t n = 0;
	int get, post;

	memset(t, 0, sizeof(*t));
	if (path[0] != '/' || strlen(path) >= sizeof(buf))
		goto notfound;
	strcpy(buf, path + 1);
	for (p = buf;; p = slash + 1) {
		if (n == SEGS_MAX)
			goto notfound;
		segs[n++] = p;
		if ((slash = strchr(p, '/')) == NULL)
			break;
		*slash = '\0';
	}
	for (size_t i = 0; i < n; i++)
		if (segs[i][0] == '\0')
			goto notfound;
	if (n == 1 && strcmp(segs[0], "healthz") == 0) {
		t->route = API_HEALTHZ;
		allow = allow_read;
		goto method;
	}
	if (n < 2 || strcmp(segs[0], "api") != 0 || strcmp(segs[1], "plans") != 0)
		goto notfound;
	if (n == 2) {
		t->route = API_PLANS;
		allow = allow_plans;
		goto method;
	}
	if (parse_id(segs[2], &t->plan_id) != 0)
		goto notfound;
	allow = allow_read;
	if (n == 3)
		t->route = API_PLAN;
	else if (n == 4 && strcmp(segs[3], "history") == 0)
		t->route = API_HISTORY;
	else if (n == 4 && strcmp(segs[3], "samples") == 0)
		t->route = API_SAMPLES;
	else if (n == 5 && strcmp(segs[3], "commands") == 0 &&
	    parse_id(segs[4], &t->arg) == 0)
		t->route = API_COMMAND;
	else if (n == 4 && strcmp(segs[3], "abort") == 0) {
		t->route = API_ABORT;
		allow = allow_write;
	} else if (n == 6 && strcmp(segs[3], "steps") == 0 &&
	    parse_id(segs[4], &t->arg) == 0 &&
	    (strcmp(segs[5], "approve") == 0 || strcmp(segs[5], "retry") == 0)) {
		t->route = segs[5][0] == 'a' ? API_APPROVE : API_RETRY;
		allow = allow_write;
	} else if (n == 6 && strcmp(segs[3], "alerts") == 0 &&
	    parse_id(segs[4], &t->arg) == 0 && strcmp(segs[5], "ack") == 0) {
		t->route = API_ACK;
		allow = allow_write;
	} else
		goto notfound;
method:
	get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
	post = strcmp(method, "POST") == 0;
	if ((get && allow != allow_write) || (post && allow != allow_read)) {
		t->write = post;
		return 0;
	}
	api_error(r, 405, "method %s is not allowed here; allowed: %s",
	    strlen(method) <= 16 ? method : "(too long)", allow);
	r->allow = allow;
	return -1;
notfound:
	api_error(r, 404, "no such resource");
	return -1;
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

static void
healthz(struct store *s, struct api_response *r)
{
	struct store_plan p;
	char err[512];

	if (store_plan_get(s, 0, &p, err, sizeof(err)) < 0) {
		log_event("error", NULL, NULL, "healthz: %s", err);
		api_error(r, 503, "the database cannot be read: %s", err);
		return;
	}
	reply(r, 200, json_pack("{s:s}", "status", "ok"));
}

/* Answers a read whose view returned RC (0, 1: no such plan, -1). */
static void
read_done(struct api_response *r, int rc, json_t *doc, int64_t id, const char *err)
{
	if (rc == 0)
		reply(r, 200, doc);
	else if (rc == 1)
		api_error(r, 404, "no plan %lld", (long long)id);
	else
		store_failed(r, err);
}

static void
submit(struct store *s, const char *body, size_t len, const char *actor,
    struct api_response *r)
{
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
	rc = store_plan_submit(s, SUBMIT_FILE, body, len, actor, &id, &errs, err,
	    sizeof(err));
	if (rc == 1) {
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
	if (rc == 2) {
		reply(r, 409, json_pack("{s:o,s:I}", "error", view_string(err), "id",
		    (json_int_t)id));
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

static void
command(struct store *s, const struct api_target *t, const char *body, size_t len,
    const char *actor, struct api_response *r)
{
	static const char *const kinds[] = {
		[API_APPROVE] = "approve", [API_RETRY] = "retry", [API_ABORT] = "abort",
		[API_ACK] = "ack"
	};
	const char *kind = kinds[t->route];
	struct store_plan p;
	struct store_step st;
	char comment[API_COMMENT_MAX + 1], err[1024];
	int64_t cmd = 0;
	int idx = -1, rc;

	if (comment_of(body, len, comment, r) != 0)
		return;
	if ((rc = store_plan_get(s, t->plan_id, &p, err, sizeof(err))) != 0) {
		read_done(r, rc, NULL, t->plan_id, err);
		return;
	}
	if (t->route == API_APPROVE || t->route == API_RETRY) {
		if (t->arg > STEP_MAX ||
		    (rc = store_step_get(s, t->plan_id, (int)t->arg - 1, &st, err,
		    sizeof(err))) == 1) {
			api_error(r, 404, "plan '%s' has no step %lld", p.name,
			    (long long)t->arg);
			return;
		}
		if (rc < 0) {
			store_failed(r, err);
			return;
		}
		store_step_clear(&st);
		idx = (int)t->arg - 1;
	}
	rc = store_command_record(s, t->plan_id, kind, idx, t->route == API_ACK ? t->arg : 0,
	    actor, comment, &cmd, err, sizeof(err));
	if (rc == 1) {
		api_error(r, 409, "%s", err);
		return;
	}
	if (rc != 0) {
		store_failed(r, err);
		return;
	}
	reply(r, 202, json_pack("{s:I,s:I,s:s,s:o,s:o,s:s,s:o,s:s}", "command",
	    (json_int_t)cmd, "plan", (json_int_t)t->plan_id, "kind", kind,
	    "step", idx >= 0 ? json_integer(idx + 1) : json_null(),
	    "alert", t->route == API_ACK ? json_integer((json_int_t)t->arg) : json_null(),
	    "actor", actor, "comment", view_string(comment),
	    "message", "recorded; the engine acts on it at its next turn, against the "
	    "state it then finds: GET /api/plans/ID/commands/COMMAND says whether it "
	    "was done or refused, and why"));
}

/* GET /api/plans/ID/commands/C: what the engine made of a command. */
static void
command_status(struct store *s, const struct api_target *t, struct api_response *r)
{
	struct store_command c;
	const char *state;
	char err[1024];
	int rc = store_command_get(s, t->plan_id, t->arg, &c, err, sizeof(err));

	if (rc == 1) {
		api_error(r, 404, "plan %lld has no command %lld", (long long)t->plan_id,
		    (long long)t->arg);
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

void
api_handle(struct store *s, const struct api_target *t, const struct uri_query *q,
    const char *body, size_t len, const char *actor, struct api_response *r)
{
	static const char *const none[] = { NULL };
	static const char *const by_name[] = { "name", NULL };
	static const char *const by_since[] = { "since", NULL };
	json_t *doc = NULL;
	char err[1024];
	const char *v;
	int64_t since = 0;
	int rc;

	if (t->write && (actor == NULL || *actor == '\0')) {
		api_error(r, 401, "this needs an operator's token");
		return;
	}
	if (only_params(q, t->route == API_PLANS && !t->write ? by_name :
	    t->route == API_SAMPLES ? by_since : none, r) != 0)
		return;
	switch (t->route) {
	case API_HEALTHZ:
		healthz(s, r);
		break;
	case API_PLANS:
		if (t->write) {
			submit(s, body, len, actor, r);
			break;
		}
		if (view_plan_list(s, uri_query_get(q, "name"), &doc, err, sizeof(err)) != 0)
			store_failed(r, err);
		else
			reply(r, 200, doc);
		break;
	case API_PLAN:
		rc = view_plan(s, t->plan_id, &doc, err, sizeof(err));
		read_done(r, rc, doc, t->plan_id, err);
		break;
	case API_HISTORY:
		rc = view_history(s, t->plan_id, &doc, err, sizeof(err));
		read_done(r, rc, doc, t->plan_id, err);
		break;
	case API_SAMPLES:
		if ((v = uri_query_get(q, "since")) != NULL && strcmp(v, "0") != 0 &&
		    parse_id(v, &since) != 0) {
			api_error(r, 400, "since must be a time in milliseconds since the "
			    "epoch");
			break;
		}
		rc = view_samples(s, t->plan_id, since, &doc, err, sizeof(err));
		read_done(r, rc, doc, t->plan_id, err);
		break;
	case API_APPROVE:
	case API_RETRY:
	case API_ABORT:
	case API_ACK:
		command(s, t, body, len, actor, r);
		break;
	case API_COMMAND:
		command_status(s, t, r);
		break;
	}
}
