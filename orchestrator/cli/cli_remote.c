/* cli_remote: the operator verbs against a running `cutover serve` —
 * submit, status, approve, retry, abort, ack, history — through its JSON
 * API (libcurl + jansson). cli_engine.c parses each verb's options and comes
 * here when no --db is given. The token comes from $CUTOVER_TOKEN and goes
 * only into the Authorization header: never printed, never in a message. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>
#include <openssl/crypto.h>

#include "api.h"
#include "cli.h"
#include "clock.h"
#include "httpbody.h"
#include "tls_curl.h"

#define DEFAULT_SERVER		"http://127.0.0.1:8080"
#define ANSWER_MAX		(64 * 1024 * 1024)
#define CONNECT_TIMEOUT_MS	5000L
#define TIMEOUT_MS		60000L
#define TOKEN_MAX		1024
#define TLS_WHERE		"the remote CLI (--cacert, --cert, --key)"
#define WAIT_MAX_MS		60000	/* --wait: how long the outcome is waited for */
#define WAIT_POLL_MS		250	/* the engine turns every 500 ms */

/* --cacert, --cert and --key FILE, or NULL. */
static const char *tls_ca, *tls_cert, *tls_key;

void
cli_remote_tls(char which, const char *file)
{
	if (which == 'C')
		tls_ca = file;
	else if (which == 'c')
		tls_cert = file;
	else
		tls_key = file;
}


struct remote {
	const char		*verb;
	CURL			*curl;
	struct curl_slist	*hdr_plain;
	struct curl_slist	*hdr_yaml;
	struct curl_slist	*hdr_json;
	int			 have_token;
	int			 global_init;
	char			 base[512];
	char			 curlerr[CURL_ERROR_SIZE];
	struct httpbody		 a;
	long			 status;	/* of the last call */
	struct tls_opts		 tls;		/* ca_file: --cacert */
	json_t			*doc;		/* its answer, parsed, or NULL */
};

/* Headers for one kind of request, with the token when there is one. */
static struct curl_slist *
headers(const char *auth, const char *ctype)
{
	struct curl_slist *h = NULL, *t;

	if ((t = curl_slist_append(h, "Accept: application/json")) == NULL)
		goto fail;
	h = t;
	if ((t = curl_slist_append(h, "Expect:")) == NULL)
		goto fail;
	h = t;
	if (ctype != NULL) {
		if ((t = curl_slist_append(h, ctype)) == NULL)
			goto fail;
		h = t;
	}
	if (auth != NULL) {
		if ((t = curl_slist_append(h, auth)) == NULL)
			goto fail;
		h = t;
	}
	return h;
fail:
	curl_slist_free_all(h);
	return NULL;
}

static void
remote_close(struct remote *rm)
{
	curl_slist_free_all(rm->hdr_plain);
	curl_slist_free_all(rm->hdr_yaml);
	curl_slist_free_all(rm->hdr_json);
	if (rm->curl != NULL)
		curl_easy_cleanup(rm->curl);
	if (rm->global_init)
		curl_global_cleanup();
	free(rm->a.p);
	json_decref(rm->doc);
	memset(rm, 0, sizeof(*rm));
}

/* Sets rm->base from SERVER (NULL: $CUTOVER_SERVER, else the default),
 * without trailing slashes, into *SERVER too. Returns 0, or prints why
 * not and returns -1. */
static int
remote_base(struct remote *rm, const char *verb, const char **server)
{
	size_t n;

	if (*server == NULL && (*server = getenv("CUTOVER_SERVER")) == NULL)
		*server = DEFAULT_SERVER;
	n = strlen(*server);
	while (n > 0 && (*server)[n - 1] == '/')
		n--;
	if ((strncmp(*server, "http://", 7) != 0 && strncmp(*server, "https://", 8) != 0) ||
	    n >= sizeof(rm->base) || strcspn(*server, " \t\r\n") < n) {
		fprintf(stderr, "cutover %s: --server must be an http:// or https:// URL, "
		    "like %s\n", verb, DEFAULT_SERVER);
		return -1;
	}
	memcpy(rm->base, *server, n);
	rm->base[n] = '\0';
	return 0;
}

/* Puts --cacert ($CUTOVER_CACERT), --cert and --key on RM, which must go
 * to an https:// SERVER, the certificate with its key. Returns 0, or
 * prints why not and returns -1. */
static int
remote_tls(struct remote *rm, const char *verb, const char *server)
{
	if (tls_ca == NULL && (tls_ca = getenv("CUTOVER_CACERT")) != NULL &&
	    tls_ca[0] == '\0')
		tls_ca = NULL;
	/* Not owned: never freed. */
	rm->tls.ca_file = (char *)tls_ca;
	rm->tls.cert_file = (char *)tls_cert;
	rm->tls.key_file = (char *)tls_key;
	if ((tls_ca != NULL || tls_cert != NULL) && strncmp(server, "https://", 8) != 0) {
		fprintf(stderr, "cutover %s: --%s is for an https:// --server, "
		    "not %s\n", verb, tls_ca != NULL ? "cacert" : "cert", rm->base);
		return -1;
	}
	if ((tls_cert == NULL) != (tls_key == NULL)) {
		fprintf(stderr, "cutover %s: a client certificate needs both --cert "
		    "and --key\n", verb);
		return -1;
	}
	return 0;
}

/* Writes the Authorization header for $CUTOVER_TOKEN into AUTH and sets
 * rm->have_token, when one is set. Returns 0, or prints why the token is
 * unusable and returns -1. */
static int
remote_token(struct remote *rm, const char *verb, char *auth, size_t authlen)
{
	const char *token = getenv("CUTOVER_TOKEN");
	size_t tlen;

	if (token == NULL || *token == '\0')
		return 0;
	tlen = strlen(token);
	for (size_t i = 0; i < tlen; i++)
		if ((unsigned char)token[i] <= 0x20 || (unsigned char)token[i] >= 0x7f) {
			fprintf(stderr, "cutover %s: CUTOVER_TOKEN holds a space or a "
			    "control character\n", verb);
			return -1;
		}
	if (tlen > TOKEN_MAX) {
		fprintf(stderr, "cutover %s: CUTOVER_TOKEN is longer than %d bytes\n",
		    verb, TOKEN_MAX);
		return -1;
	}
	snprintf(auth, authlen, "Authorization: Bearer %s", token);
	rm->have_token = 1;
	return 0;
}

/* Makes RM's libcurl handle and its header lists (with AUTH when it has a
 * token). Returns 0, or prints why not and returns -1 (the caller closes
 * RM). */
static int
remote_curl(struct remote *rm, const char *verb, const char *auth)
{
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		fprintf(stderr, "cutover %s: libcurl did not initialise\n", verb);
		return -1;
	}
	rm->global_init = 1;
	if ((rm->curl = curl_easy_init()) == NULL ||
	    (rm->hdr_plain = headers(rm->have_token ? auth : NULL, NULL)) == NULL ||
	    (rm->hdr_yaml = headers(rm->have_token ? auth : NULL,
	    "Content-Type: application/yaml")) == NULL ||
	    (rm->hdr_json = headers(rm->have_token ? auth : NULL,
	    "Content-Type: application/json")) == NULL) {
		fprintf(stderr, "cutover %s: out of memory\n", verb);
		return -1;
	}
	curl_easy_setopt(rm->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(rm->curl, CURLOPT_USERAGENT, "cutover-cli/1");
	curl_easy_setopt(rm->curl, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_TIMEOUT_MS);
	curl_easy_setopt(rm->curl, CURLOPT_TIMEOUT_MS, TIMEOUT_MS);
	curl_easy_setopt(rm->curl, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(rm->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	rm->a.max = ANSWER_MAX;
	curl_easy_setopt(rm->curl, CURLOPT_WRITEFUNCTION, httpbody_write);
	curl_easy_setopt(rm->curl, CURLOPT_WRITEDATA, &rm->a);
	curl_easy_setopt(rm->curl, CURLOPT_ERRORBUFFER, rm->curlerr);
	return 0;
}

/* Prepares calls to SERVER (NULL: $CUTOVER_SERVER, else the default).
 * Returns 0, or prints why not and returns -1. */
static int
remote_open(struct remote *rm, const char *verb, const char *server)
{
	char auth[TOKEN_MAX + 32];
	int rc = -1;

	memset(rm, 0, sizeof(*rm));
	rm->verb = verb;
	auth[0] = '\0';
	if (remote_base(rm, verb, &server) != 0 || remote_tls(rm, verb, server) != 0 ||
	    remote_token(rm, verb, auth, sizeof(auth)) != 0)
		return -1;
	if (remote_curl(rm, verb, auth) != 0)
		goto done;
	rc = 0;
done:
	OPENSSL_cleanse(auth, sizeof(auth));	/* a dead store memset may drop */
	if (rc != 0)
		remote_close(rm);
	return rc;
}

/* One request: METHOD PATH with BODY (NULL: none) of type CTYPE ("yaml",
 * "json" or NULL). Sets rm->status and rm->doc. Returns 0 when an answer
 * came (whatever its status), or prints why not and returns -1. */
static int
remote_call(struct remote *rm, const char *method, const char *path, const char *body,
    size_t len, const char *ctype)
{
	char url[1536], why[CURL_ERROR_SIZE + 512];
	struct tls_curl tc;
	CURLcode cc;

	httpbody_reset(&rm->a);
	rm->status = 0;
	json_decref(rm->doc);
	rm->doc = NULL;
	rm->curlerr[0] = '\0';
	snprintf(url, sizeof(url), "%s%s", rm->base, path);
	if (tls_curl_prepare(rm->curl, &rm->tls, url, &tc, why, sizeof(why)) != 0) {
		fprintf(stderr, "cutover %s: %s\n", rm->verb, why);
		return -1;
	}
	curl_easy_setopt(rm->curl, CURLOPT_URL, tc.url);
	if (strcmp(method, "POST") == 0) {
		curl_easy_setopt(rm->curl, CURLOPT_POST, 1L);
		curl_easy_setopt(rm->curl, CURLOPT_POSTFIELDS, body != NULL ? body : "");
		curl_easy_setopt(rm->curl, CURLOPT_POSTFIELDSIZE_LARGE,
		    (curl_off_t)(body != NULL ? len : 0));
	} else
		curl_easy_setopt(rm->curl, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(rm->curl, CURLOPT_HTTPHEADER, ctype == NULL ? rm->hdr_plain :
	    strcmp(ctype, "yaml") == 0 ? rm->hdr_yaml : rm->hdr_json);
	cc = curl_easy_perform(rm->curl);
	tls_curl_release(rm->curl, &tc);
	if (cc != CURLE_OK) {
		const char *detail = rm->curlerr[0] != '\0' ? rm->curlerr :
		    curl_easy_strerror(cc);

		fprintf(stderr, "cutover %s: %s %s: %s\n", rm->verb, method, url,
		    rm->a.toobig ? "the answer is too large" : rm->a.nomem ? "out of memory" :
		    tls_curl_error(rm->curl, cc, detail, &rm->tls, TLS_WHERE, url, why,
		    sizeof(why)) ? why : detail);
		return -1;
	}
	curl_easy_getinfo(rm->curl, CURLINFO_RESPONSE_CODE, &rm->status);
	if (rm->a.len > 0)
		rm->doc = json_loadb(rm->a.p, rm->a.len, 0, NULL);
	return 0;
}

/* Prints the error of a refused call; returns CLI_FAIL. */
static int
refused(struct remote *rm)
{
	const char *msg = json_string_value(json_object_get(rm->doc, "error"));

	fprintf(stderr, "cutover %s: %s (HTTP %ld)\n", rm->verb,
	    msg != NULL ? msg : "the server's answer is not the API's", rm->status);
	if (rm->status == 401 && !rm->have_token)
		fprintf(stderr, "cutover %s: set CUTOVER_TOKEN to your operator token\n",
		    rm->verb);
	return CLI_FAIL;
}

/* GETs PATH into rm->doc. Returns 0 when the server answered 200, or -1
 * after saying why not (no answer, or the server's refusal). */
static int
remote_get(struct remote *rm, const char *path)
{
	if (remote_call(rm, "GET", path, NULL, 0, NULL) != 0)
		return -1;
	if (rm->status != 200) {
		refused(rm);
		return -1;
	}
	return 0;
}

/* Writes the answer as it came (--json). */
static void
pass_through(const struct remote *rm)
{
	if (rm->a.len > 0) {
		fwrite(rm->a.p, 1, rm->a.len, stdout);
		if (rm->a.p[rm->a.len - 1] != '\n')
			putchar('\n');
	}
}

static bool
all_digits(const char *s)
{
	size_t n = strspn(s, "0123456789");

	return n > 0 && n <= 18 && s[n] == '\0' && s[0] != '0';
}

/* The path of route NAME (api_path) for plan ID, with ARG (may be NULL)
 * as its next placeholder, into OUT (cut short when it does not fit). */
static void
plan_path(const char *name, long long id, const char *arg, char *out, size_t outlen)
{
	char ids[24];
	const char *const args[] = { ids, arg };

	snprintf(ids, sizeof(ids), "%lld", id);
	api_path(name, args, out, outlen);
}

/* Resolves PLAN (an id or a name) to the id of the plan on the server.
 * Returns 0, or prints why not and returns -1. */
static int
resolve_plan(struct remote *rm, const char *plan, long long *id)
{
	json_t *first;
	char path[256], *esc;

	if (all_digits(plan)) {
		*id = strtoll(plan, NULL, 10);
		return 0;
	}
	if (strlen(plan) > 64 || (esc = curl_easy_escape(rm->curl, plan, 0)) == NULL) {
		fprintf(stderr, "cutover %s: no plan '%s' on %s\n", rm->verb, plan, rm->base);
		return -1;
	}
	api_path("plans", NULL, path, sizeof(path));
	snprintf(path + strlen(path), sizeof(path) - strlen(path), "?name=%s", esc);
	curl_free(esc);
	if (remote_get(rm, path) != 0)
		return -1;
	first = json_array_get(json_object_get(rm->doc, "plans"), 0);
	if (!json_is_integer(json_object_get(first, "id"))) {
		fprintf(stderr, "cutover %s: no plan '%s' on %s\n", rm->verb, plan, rm->base);
		return -1;
	}
	*id = (long long)json_integer_value(json_object_get(first, "id"));
	return 0;
}

/* Reads plan ID's document into rm->doc. Returns 0, or -1 after saying
 * why. */
static int
get_plan(struct remote *rm, long long id)
{
	char path[128];

	plan_path("plan", id, NULL, path, sizeof(path));
	return remote_get(rm, path);
}

/* Resolves STEP (its number or its kind, cli_step_ref) in plan ID. */
static int
resolve_step(struct remote *rm, long long id, const char *step, long long *n)
{
	const char *kinds[CLI_STEPS_MAX];
	char err[1024];
	json_t *steps, *st;
	size_t i, nk = 0;
	int idx;

	if (get_plan(rm, id) != 0)
		return -1;
	steps = json_object_get(rm->doc, "steps");
	json_array_foreach(steps, i, st) {
		const char *kind = json_string_value(json_object_get(st, "kind"));

		if (nk < CLI_STEPS_MAX)
			kinds[nk++] = kind != NULL ? kind : "?";
	}
	idx = cli_step_ref(json_string_value(json_object_get(rm->doc, "name")) != NULL ?
	    json_string_value(json_object_get(rm->doc, "name")) : "?", kinds, nk, step, err, sizeof(err));
	if (idx < 0) {
		fprintf(stderr, "cutover %s: %s\n", rm->verb, err);
		return -1;
	}
	*n = (long long)idx + 1;
	return 0;
}

/* Resolves ALERT (its number, or the kind of the plan's one open alert of
 * that kind: cli_alert_ref) in plan ID. */
static int
resolve_alert(struct remote *rm, long long id, const char *alert, long long *n)
{
	struct cli_alert open[CLI_ALERTS_MAX];
	char err[1024];
	json_t *a;
	size_t i, na = 0;
	int64_t got;

	if (all_digits(alert)) {
		*n = strtoll(alert, NULL, 10);
		return 0;
	}
	if (get_plan(rm, id) != 0)
		return -1;
	json_array_foreach(json_object_get(rm->doc, "alerts"), i, a) {
		const char *kind = json_string_value(json_object_get(a, "kind"));

		if (na < CLI_ALERTS_MAX && kind != NULL) {
			open[na].id = (long long)json_integer_value(json_object_get(a, "id"));
			open[na++].kind = kind;
		}
	}
	got = cli_alert_ref(json_string_value(json_object_get(rm->doc, "name")) != NULL ?
	    json_string_value(json_object_get(rm->doc, "name")) : "?", open, na, alert, err,
	    sizeof(err));
	if (got < 0) {
		fprintf(stderr, "cutover %s: %s\n", rm->verb, err);
		return -1;
	}
	*n = (long long)got;
	return 0;
}

/* A time in ms since the epoch as UTC, or "-" for null. */
static const char *
when(const json_t *ms, char *buf, size_t len)
{
	struct tm tm;
	time_t t;

	if (!json_is_integer(ms))
		return "-";
	t = (time_t)(json_integer_value(ms) / 1000);
	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%d %H:%M:%SZ", &tm);
	return buf;
}

static const char *
str(const json_t *o, const char *key, const char *dflt)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s != NULL ? s : dflt;
}

int
cli_remote_submit(const char *server, const char *file, const char *yaml, size_t len,
    int json, int fresh)
{
	struct remote rm;
	json_t *e;
	char path[48];
	size_t i;
	int rc = CLI_FAIL;

	if (remote_open(&rm, "submit", server) != 0)
		return CLI_FAIL;
	api_path("submit", NULL, path, sizeof(path));
	if (fresh)
		strncat(path, "?new=1", sizeof(path) - strlen(path) - 1);
	if (remote_call(&rm, "POST", path, yaml, len, "yaml") != 0)
		goto done;
	if (json)
		pass_through(&rm);
	if (rm.status == 400 && json_is_array(json_object_get(rm.doc, "errors"))) {
		json_array_foreach(json_object_get(rm.doc, "errors"), i, e)
			fprintf(stderr, "%s:%lld:%lld: %s\n", file,
			    (long long)json_integer_value(json_object_get(e, "line")),
			    (long long)json_integer_value(json_object_get(e, "column")),
			    str(e, "message", "?"));
		goto done;
	}
	if (rm.status != 201) {
		refused(&rm);
		if (rm.status == 409 && strcmp(str(rm.doc, "reason", ""), "unarchived") == 0)
			fprintf(stderr, "  to archive it: cutover archive%s%s %lld\n",
			    server != NULL ? " --server " : "", server != NULL ? server : "",
			    (long long)json_integer_value(json_object_get(rm.doc, "id")));
		goto done;
	}
	if (!json)
		printf("plan %lld submitted: %s (%s); the server runs it now\n",
		    (long long)json_integer_value(json_object_get(rm.doc, "id")),
		    str(rm.doc, "name", "?"), str(rm.doc, "status", "?"));
	rc = CLI_OK;
done:
	remote_close(&rm);
	return rc;
}

/* Follows command CMD of plan ID until the engine has done or refused
 * it, or WAIT_MAX_MS has passed: prints the outcome (with JSON, the
 * command's last document). Returns CLI_OK when done or still pending at
 * the end (it stays recorded: the engine acts on it later), CLI_FAIL when
 * refused or the server could not say. */
static int
wait_command(struct remote *rm, long long id, long long cmd, int json)
{
	char path[128], num[24];
	int64_t until = clock_mono_ms() + WAIT_MAX_MS;
	const char *state = "pending";

	snprintf(num, sizeof(num), "%lld", cmd);
	plan_path("command", id, num, path, sizeof(path));
	for (;;) {
		if (remote_get(rm, path) != 0)
			return CLI_FAIL;
		state = str(rm->doc, "state", "pending");
		if (strcmp(state, "pending") != 0 || clock_mono_ms() >= until)
			break;
		clock_sleep_ms(WAIT_POLL_MS);
	}
	if (json) {
		pass_through(rm);
		return strcmp(state, "refused") == 0 ? CLI_FAIL : CLI_OK;
	}
	if (strcmp(state, "pending") == 0) {
		printf("%s still pending after %d s: the engine acts on it at its next turn "
		    "(a step in flight finishes first); cutover status %lld shows what it "
		    "did\n", rm->verb, WAIT_MAX_MS / 1000, id);
		return CLI_OK;
	}
	if (strcmp(state, "refused") == 0) {
		printf("%s refused by the engine: %s\n", rm->verb, str(rm->doc, "outcome", "?"));
		return CLI_FAIL;
	}
	/* Done, with more to say than that (an acknowledged alert whose cause
	 * is still there): said first. */
	if (strcmp(str(rm->doc, "outcome", "done"), "done") != 0)
		printf("%s %s\n", rm->verb, str(rm->doc, "outcome", ""));
	/* Done: where the plan now is, which is what the person asked for. */
	plan_path("plan", id, NULL, path, sizeof(path));
	if (remote_call(rm, "GET", path, NULL, 0, NULL) == 0 && rm->status == 200) {
		const json_t *cur = json_object_get(rm->doc, "current");

		printf("%s done: plan '%s' is %s", rm->verb, str(rm->doc, "name", "?"),
		    str(rm->doc, "status", "?"));
		if (json_is_object(cur))
			printf(", at step %lld (%s): %s",
			    (long long)json_integer_value(json_object_get(cur, "n")),
			    str(cur, "kind", "?"), str(cur, "status", "?"));
		printf("\n");
	} else {
		printf("%s done\n", rm->verb);
	}
	return CLI_OK;
}

int
cli_remote_command(const char *verb, const char *server, const char *plan,
    const char *arg, const char *comment, int json, int wait)
{
	struct remote rm;
	json_t *body = NULL;
	char path[256], num[24], *text = NULL;
	long long id, n = 0, cmd;
	int rc = CLI_FAIL;

	if (remote_open(&rm, verb, server) != 0)
		return CLI_FAIL;
	if (resolve_plan(&rm, plan, &id) != 0)
		goto done;
	if (strcmp(verb, "approve") == 0 || strcmp(verb, "retry") == 0) {
		if (resolve_step(&rm, id, arg, &n) != 0)
			goto done;
		snprintf(num, sizeof(num), "%lld", n);
		plan_path(verb, id, num, path, sizeof(path));
	} else if (strcmp(verb, "ack") == 0) {
		if (resolve_alert(&rm, id, arg, &n) != 0)
			goto done;
		snprintf(num, sizeof(num), "%lld", n);
		plan_path("ack", id, num, path, sizeof(path));
	} else
		plan_path(verb, id, NULL, path, sizeof(path));
	if (comment != NULL) {
		body = json_pack("{s:s}", "comment", comment);
		if (body == NULL || (text = json_dumps(body, JSON_COMPACT)) == NULL) {
			fprintf(stderr, "cutover %s: the comment is not valid UTF-8\n", verb);
			goto done;
		}
	}
	if (remote_call(&rm, "POST", path, text, text != NULL ? strlen(text) : 0,
	    text != NULL ? "json" : NULL) != 0)
		goto done;
	wait = wait && strcmp(verb, "archive") != 0;
	if (json && (!wait || rm.status != 202))
		pass_through(&rm);
	if (rm.status != (strcmp(verb, "archive") == 0 ? 200 : 202)) {
		refused(&rm);
		goto done;
	}
	cmd = (long long)json_integer_value(json_object_get(rm.doc, "command"));
	if (!json && strcmp(verb, "archive") == 0)
		printf("plan %lld archived by %s; its name may be submitted again\n", id,
		    str(rm.doc, "actor", "?"));
	else if (!json)
		printf("%s recorded (command %lld, by %s); %s\n", verb, cmd,
		    str(rm.doc, "actor", "?"), wait ? "waiting for the engine to act on it" :
		    "the engine acts on it at its next turn");
	if (!json && json_is_string(json_object_get(rm.doc, "cause")))
		printf("note: %s\n", str(rm.doc, "cause", ""));
	fflush(stdout);
	rc = wait ? wait_command(&rm, id, cmd, json) : CLI_OK;
done:
	free(text);
	json_decref(body);
	remote_close(&rm);
	return rc;
}

static void
print_plans(const json_t *doc)
{
	json_t *p;
	size_t i;
	char t[32];

	printf("%5s  %-32s %-10s %s\n", "id", "plan", "status", "submitted");
	json_array_foreach(json_object_get(doc, "plans"), i, p)
		printf("%5lld  %-32s %-10s %s\n",
		    (long long)json_integer_value(json_object_get(p, "id")),
		    str(p, "name", "?"), str(p, "status", "?"),
		    when(json_object_get(p, "created_ms"), t, sizeof(t)));
}

static void
print_plan(const json_t *doc)
{
	json_t *st, *a;
	size_t i;
	char t1[32], t2[32];

	printf("plan %s (id %lld): %s, submitted %s\n", str(doc, "name", "?"),
	    (long long)json_integer_value(json_object_get(doc, "id")),
	    str(doc, "status", "?"), when(json_object_get(doc, "created_ms"), t1,
	    sizeof(t1)));
	printf("  %2s  %-16s %-17s %-9s %-12s %-21s %s\n", "#", "step", "status", "gate",
	    "approved by", "started", "ended");
	json_array_foreach(json_object_get(doc, "steps"), i, st) {
		printf("  %2lld  %-16s %-17s %-9s %-12s %-21s %s\n",
		    (long long)json_integer_value(json_object_get(st, "n")),
		    str(st, "kind", "?"), str(st, "status", "?"),
		    strcmp(str(st, "gate_state", "none"), "none") == 0 ? "-" :
		    str(st, "gate_state", "?"),
		    str(st, "approved_by", str(st, "retried_by", "-")),
		    when(json_object_get(st, "started_ms"), t1, sizeof(t1)),
		    when(json_object_get(st, "ended_ms"), t2, sizeof(t2)));
		if (json_is_string(json_object_get(st, "error")))
			printf("      error: %s\n", str(st, "error", ""));
	}
	if (json_array_size(json_object_get(doc, "alerts")) > 0) {
		printf("open alerts:\n");
		json_array_foreach(json_object_get(doc, "alerts"), i, a)
			printf("  %3lld  %-24s %s (seen %lld times, last %s)\n",
			    (long long)json_integer_value(json_object_get(a, "id")),
			    str(a, "kind", "?"), str(a, "message", ""),
			    (long long)json_integer_value(json_object_get(a, "count")),
			    when(json_object_get(a, "last_ms"), t1, sizeof(t1)));
	}
}

int
cli_remote_status(const char *server, const char *plan, int json)
{
	struct remote rm;
	char path[128];
	long long id;
	int rc = CLI_FAIL;

	if (remote_open(&rm, "status", server) != 0)
		return CLI_FAIL;
	if (plan == NULL)
		api_path("plans", NULL, path, sizeof(path));
	else if (resolve_plan(&rm, plan, &id) != 0)
		goto done;
	else
		plan_path("plan", id, NULL, path, sizeof(path));
	if (remote_get(&rm, path) != 0)
		goto done;
	if (json)
		pass_through(&rm);
	else if (plan == NULL)
		print_plans(rm.doc);
	else
		print_plan(rm.doc);
	rc = CLI_OK;
done:
	remote_close(&rm);
	return rc;
}

int
cli_remote_history(const char *server, const char *plan, int json)
{
	struct remote rm;
	json_t *ev, *v;
	char path[128], t[32], *details;
	long long id;
	size_t i;
	int rc = CLI_FAIL;

	if (remote_open(&rm, "history", server) != 0)
		return CLI_FAIL;
	if (resolve_plan(&rm, plan, &id) != 0)
		goto done;
	plan_path("history", id, NULL, path, sizeof(path));
	if (remote_get(&rm, path) != 0)
		goto done;
	v = json_object_get(rm.doc, "verification");
	if (json)
		pass_through(&rm);
	else {
		json_array_foreach(json_object_get(rm.doc, "events"), i, ev) {
			details = json_dumps(json_object_get(ev, "details"),
			    JSON_COMPACT | JSON_ENCODE_ANY);
			printf("%5lld  %s  %-10s %-24s %s\n",
			    (long long)json_integer_value(json_object_get(ev, "id")),
			    when(json_object_get(ev, "ts_ms"), t, sizeof(t)),
			    str(ev, "actor", "?"), str(ev, "kind", "?"),
			    details != NULL ? details : "{}");
			free(details);
		}
		if (json_is_true(json_object_get(v, "verified")))
			printf("history verifies (%lld events in the chain)\n",
			    (long long)json_integer_value(json_object_get(v, "checked")));
		else
			printf("history does NOT verify: event %lld: %s\n",
			    (long long)json_integer_value(json_object_get(v, "bad_event")),
			    str(v, "reason", "?"));
	}
	rc = json_is_true(json_object_get(v, "verified")) ? CLI_OK : CLI_FAIL;
done:
	remote_close(&rm);
	return rc;
}
