/* itest_flag: the flag tests' HTTP flag service and plans (itest_flag.h). */
#include "itest_flag.h"

void
iflag_nap(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static enum MHD_Result
reply(struct MHD_Connection *conn, unsigned int status, const char *type,
    const char *body)
{
	struct MHD_Response *r;
	enum MHD_Result rc;

	r = MHD_create_response_from_buffer(strlen(body), (void *)body,
	    MHD_RESPMEM_MUST_COPY);
	if (r == NULL)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", type);
	rc = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return rc;
}

static enum MHD_Result
handle(void *cls, struct MHD_Connection *conn, const char *url,
    const char *method, const char *version, const char *data,
    size_t *size, void **con_cls)
{
	struct srv *s = cls;
	struct upload *up = *con_cls;
	const char *h;
	char body[512];
	json_t *doc = NULL, *in;
	char *text;
	enum MHD_Result rc;
	int write, fail, bad, slow, after;

	(void)version;
	if (up == NULL) {
		if ((up = calloc(1, sizeof(*up))) == NULL)
			return MHD_NO;
		*con_cls = up;
		return MHD_YES;
	}
	if (*size > 0) {
		char *p = realloc(up->p, up->len + *size + 1);

		if (p == NULL)
			return MHD_NO;
		up->p = p;
		memcpy(up->p + up->len, data, *size);
		up->len += *size;
		up->p[up->len] = '\0';
		*size = 0;
		return MHD_YES;
	}

	write = strcmp(method, "GET") != 0;
	pthread_mutex_lock(&s->mu);
	s->requests++;
	h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_AUTHORIZATION);
	snprintf(s->auth, sizeof(s->auth), "%s", h != NULL ? h : "");
	fail = s->fail_forever || s->fail_n > 0 ||
	    (write && (s->write_fail_forever || s->write_fail_n > 0)) ||
	    (!write && s->reads_failing);
	if (s->fail_n > 0)
		s->fail_n--;
	else if (write && s->write_fail_n > 0)
		s->write_fail_n--;
	bad = write && s->bad_request;
	slow = s->slow_n > 0 ? (s->slow_n--, 1) : 0;
	pthread_mutex_unlock(&s->mu);
	if (slow)
		iflag_nap(s->slow_ms);

	if (strcmp(url, "/flag") != 0)
		return reply(conn, 404, "application/json",
		    "{\"message\":\"no such flag\"}");
	if (fail) {
		/* An answer that quotes the secret: it must come out as ***. */
		snprintf(body, sizeof(body), "flag store unavailable\n\n"
		    "(request had %s)", h != NULL ? h : "no auth");
		return reply(conn, 500, "text/plain", body);
	}
	if (bad) {
		snprintf(body, sizeof(body), "{\"name\":\"BadRequest\","
		    "\"message\":\"refusing %s\"}", h != NULL ? h : "nobody");
		return reply(conn, 400, "application/json", body);
	}
	pthread_mutex_lock(&s->mu);
	if (write) {
		s->writes++;
		snprintf(s->method, sizeof(s->method), "%s", method);
		h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
		    MHD_HTTP_HEADER_CONTENT_TYPE);
		snprintf(s->ctype, sizeof(s->ctype), "%s", h != NULL ? h : "");
		in = up->p != NULL ? json_loads(up->p, 0, NULL) : NULL;
		if (in == NULL || json_object_get(in, "enabled") == NULL) {
			pthread_mutex_unlock(&s->mu);
			json_decref(in);
			return reply(conn, 422, "application/json",
			    "{\"message\":\"expected enabled\"}");
		}
		if (s->toggle || !s->ignore_write) {
			json_t *v = s->toggle ? json_boolean(!json_is_true(s->value)) :
			    json_incref(json_object_get(in, "enabled"));

			json_decref(s->value);
			s->value = v;
		}
		json_decref(in);
		/* Applied; the answer may still be lost. */
		after = s->applied_close_n > 0 ? 2 : s->applied_fail_n > 0;
		if (after == 2)
			s->applied_close_n--;
		else if (after == 1)
			s->applied_fail_n--;
		if (after && s->reads_fail_after)
			s->reads_failing = 1;
		pthread_mutex_unlock(&s->mu);
		if (after == 2)
			return MHD_NO;	/* closes the connection, no answer */
		if (after == 1)
			return reply(conn, 500, "text/plain", "flag store "
			    "failed after applying the write");
		return reply(conn, 200, "application/json", "{\"ok\":true}");
	}
	doc = json_pack("{s:O,s:[{s:s,s:{s:O}}]}", "enabled", s->value, "flags",
	    "name", "delay-ladder", "x/y", "m~n", s->value);
	pthread_mutex_unlock(&s->mu);
	text = doc != NULL ? json_dumps(doc, JSON_COMPACT) : NULL;
	json_decref(doc);
	if (text == NULL)
		return MHD_NO;
	rc = reply(conn, 200, "application/json", text);
	free(text);
	return rc;
}

static void
completed(void *cls, struct MHD_Connection *conn, void **con_cls,
    enum MHD_RequestTerminationCode toe)
{
	struct upload *up = *con_cls;

	(void)cls;
	(void)conn;
	(void)toe;
	if (up != NULL) {
		free(up->p);
		free(up);
		*con_cls = NULL;
	}
}

void
iflag_srv_start(struct srv *s)
{
	struct sockaddr_in sa;
	const union MHD_DaemonInfo *info;

	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->mu, NULL);
	s->value = json_false();
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = 0;
	s->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
	    MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG, 0, NULL, NULL,
	    handle, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
	    MHD_OPTION_NOTIFY_COMPLETED, completed, s,
	    MHD_OPTION_CONNECTION_TIMEOUT, 10U, MHD_OPTION_END);
	assert_non_null(s->d);
	info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
	assert_non_null(info);
	s->port = info->port;
	snprintf(s->base, sizeof(s->base), "http://127.0.0.1:%d", s->port);
}

void
iflag_srv_stop(struct srv *s)
{
	MHD_stop_daemon(s->d);
	json_decref(s->value);
	pthread_mutex_destroy(&s->mu);
}

void
iflag_http_plan(struct http_plan *hp, const struct srv *s, const char *pointer)
{
	memset(hp, 0, sizeof(*hp));
	snprintf(hp->url, sizeof(hp->url), "%s/flag", s->base);
	hp->p.flag.kind = "http";
	hp->p.flag.settings = &hp->settings;
	hp->settings.on.method = "PUT";
	hp->settings.on.url = hp->url;
	hp->settings.on.body = "{\"enabled\":true}";
	hp->settings.off.method = "PUT";
	hp->settings.off.url = hp->url;
	hp->settings.off.body = "{\"enabled\":false}";
	hp->settings.read_url = hp->url;
	hp->settings.read_pointer = (char *)pointer;
	hp->settings.read_on = "true";
	hp->settings.read_off = "false";
	hp->h[0].name = "Authorization";
	hp->h[0].value = "env:" AUTH_ENV;
	hp->h[1].name = "X-Cutover-Test";
	hp->h[1].value = "flag";
	hp->settings.headers = hp->h;
	hp->settings.nheaders = 2;
}

void
iflag_quick(struct flag_options *o)
{
	flag_options_default(o);
	o->connect_timeout_ms = 1000;
	o->timeout_ms = 2000;
	o->backoff_ms = 20;
	o->backoff_max_ms = 80;
	o->budget_ms = 10000;
}

void
iflag_http_begin(struct iflag_http *t, const char *pointer)
{
	memset(t, 0, sizeof(*t));
	assert_int_equal(setenv(AUTH_ENV, AUTH_SECRET, 1), 0);
	iflag_srv_start(&t->s);
	iflag_http_plan(&t->hp, &t->s, pointer);
	iflag_quick(&t->o);
}

void
iflag_http_clear(struct iflag_http *t)
{
	json_decref(t->r);
	t->r = NULL;
}

void
iflag_http_end(struct iflag_http *t)
{
	iflag_http_clear(t);
	iflag_srv_stop(&t->s);
}

void
iflag_assert_not_leaked(const json_t *j, const char *err, const char *needle)
{
	char *text = j != NULL ? json_dumps(j, JSON_COMPACT) : NULL;

	assert_true(needle != NULL && needle[0] != '\0');
	if (text != NULL && strstr(text, needle) != NULL)
		fail_msg("secret leaked into the result: %s", text);
	free(text);
	if (err != NULL && strstr(err, needle) != NULL)
		fail_msg("secret leaked into the message: %s", err);
}

json_t *
iflag_attempt(const json_t *result, size_t i)
{
	return json_array_get(json_object_get(result, "attempts"), i);
}

size_t
iflag_nattempts(const json_t *result, const char *role)
{
	json_t *a = json_object_get(result, "attempts"), *it;
	size_t i, n = 0;

	json_array_foreach(a, i, it)
		if (role == NULL || strcmp(json_string_value(json_object_get(it,
		    "call")), role) == 0)
			n++;
	return n;
}

long
iflag_status_of(const json_t *a)
{
	return (long)json_integer_value(json_object_get(a, "status"));
}

void
iflag_assert_contains(const char *s, const char *part)
{
	if (s == NULL || strstr(s, part) == NULL)
		fail_msg("\"%s\" does not contain \"%s\"",
		    s != NULL ? s : "(null)", part);
}

void
iflag_switch_on(struct iflag_http *t, int rc, size_t writes, size_t reads)
{
	int got = flag_switch_with(&t->hp.p, true, &t->o, &t->r, t->err,
	    sizeof(t->err));
	bool confirmed = json_is_true(json_object_get(t->r, "confirmed"));

	if (got != rc)
		fail_msg("flag on returned %d, not %d: %s", got, rc, t->err);
	if (confirmed != (rc == 0))
		fail_msg("flag on returned %d %s confirmed: %s", got,
		    confirmed ? "but" : "and not", t->err);
	if (iflag_nattempts(t->r, "write") != writes ||
	    iflag_nattempts(t->r, "read") != reads)
		fail_msg("flag on (%d) wrote %zu times and read back %zu, not %zu "
		    "and %zu", got, iflag_nattempts(t->r, "write"),
		    iflag_nattempts(t->r, "read"), writes, reads);
}

int
iflag_main(const struct CMUnitTest *tests, size_t n, int argc, char **argv)
{
	int rc;

	(void)argc;
	(void)argv;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = itest_run_part("tests", tests, n, NULL, NULL);
	curl_global_cleanup();
	return rc;
}

void
iflag_expect_read(struct iflag_http *t, int state)
{
	int st = -2, rc;

	iflag_http_clear(t);
	rc = flag_read_with(&t->hp.p, &t->o, &st, &t->r, t->err, sizeof(t->err));
	if (rc != 0)
		fail_msg("flag read returned %d: %s", rc, t->err);
	if (st != state)
		fail_msg("flag read %d, not %d", st, state);
}
