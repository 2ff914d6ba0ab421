/* itest_unleash: a test's own features in the test Unleash (see
 * itest_unleash.h), through libcurl; the token goes only into the
 * Authorization header. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "clock.h"
#include "itest_unleash.h"

static const char *
need_env(const char *name)
{
	const char *v = getenv(name);

	if (v == NULL || *v == '\0')
		fail_msg("set %s (scripts/test does: scripts/unleash env)", name);
	return v;
}

/* Keeps the first bytes of an answer (ARG: struct answer), drops the rest. */
struct answer {
	char buf[4096];
	size_t len;
};

static size_t
keep(char *p, size_t size, size_t n, void *arg)
{
	struct answer *a = arg;
	size_t len = size * n, room = sizeof(a->buf) - 1 - a->len;

	if (room > 0) {
		memcpy(a->buf + a->len, p, len < room ? len : room);
		a->len += len < room ? len : room;
		a->buf[a->len] = '\0';
	}
	return len;
}

/* One admin API call: METHOD /api/admin PATH with JSON BODY (or NULL);
 * the answer's first bytes go into OUT (or nowhere, OUT NULL). Returns
 * the HTTP status, 0 when there was no answer. */
static long
unleash_answer(const char *method, const char *path, const char *body,
    struct answer *out)
{
	char url[512], auth[512];
	struct curl_slist *h = NULL;
	struct answer sink = { "", 0 };
	long status = 0;
	CURL *cu;

	snprintf(url, sizeof(url), "%s/api/admin%s",
	    need_env("CUTOVER_TEST_UNLEASH_URL"), path);
	snprintf(auth, sizeof(auth), "Authorization: %s",
	    need_env("CUTOVER_TEST_UNLEASH_TOKEN"));
	if ((cu = curl_easy_init()) == NULL)
		return 0;
	h = curl_slist_append(h, auth);
	h = curl_slist_append(h, "Content-Type: application/json");
	curl_easy_setopt(cu, CURLOPT_URL, url);
	curl_easy_setopt(cu, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(cu, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(cu, CURLOPT_TIMEOUT_MS, 30000L);
	curl_easy_setopt(cu, CURLOPT_WRITEFUNCTION, keep);
	curl_easy_setopt(cu, CURLOPT_WRITEDATA, out != NULL ? out : &sink);
	if (body != NULL)
		curl_easy_setopt(cu, CURLOPT_POSTFIELDS, body);
	if (curl_easy_perform(cu) == CURLE_OK)
		curl_easy_getinfo(cu, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(h);
	curl_easy_cleanup(cu);
	return status;
}

long
itest_unleash_call(const char *method, const char *path, const char *body)
{
	return unleash_answer(method, path, body, NULL);
}

void
itest_feature_set(const char *name, bool on)
{
	char path[256];
	long st;

	snprintf(path, sizeof(path), "/projects/default/features/%s/environments/"
	    "production/%s", name, on ? "on" : "off");
	if ((st = itest_unleash_call("POST", path, NULL)) != 200)
		fail_msg("turning feature '%s' %s: HTTP %ld", name, on ? "on" : "off", st);
}

void
itest_feature_create(const char *name)
{
	char body[256];
	long st;

	snprintf(body, sizeof(body), "{\"name\":\"%s\",\"type\":\"release\"}", name);
	if ((st = itest_unleash_call("POST", "/projects/default/features", body)) != 201 &&
	    st != 200)
		fail_msg("creating feature '%s': HTTP %ld", name, st);
	itest_feature_set(name, true);
}

/* Unleash 7 records a feature's "initial" lifecycle stage a moment after
 * its creation answers, and its "archived" stage a moment after the
 * archive call answers (event listeners, later still on a loaded machine);
 * a feature deleted from the archive before either makes that insert
 * violate a foreign key, and that stops the whole server (seen in suite
 * runs, for each stage: every later test then found no Unleash). So the
 * archive is emptied only once both stages are recorded, waited for up to
 * this long. */
#define ARCHIVED_WAIT_MS	30000

void
itest_feature_delete(const char *name)
{
	struct answer a;
	char path[256];
	long st;
	int waited;

	snprintf(path, sizeof(path), "/projects/default/features/%s", name);
	if ((st = itest_unleash_call("DELETE", path, NULL)) / 100 != 2) {
		fprintf(stderr, "itest: archiving feature %s: HTTP %ld\n", name, st);
		return;
	}
	snprintf(path, sizeof(path), "/projects/default/features/%s/lifecycle", name);
	for (waited = 0;; waited += 100) {
		memset(&a, 0, sizeof(a));
		if (unleash_answer("GET", path, NULL, &a) == 200 &&
		    strstr(a.buf, "\"archived\"") != NULL &&
		    strstr(a.buf, "\"initial\"") != NULL)
			break;
		if (waited >= ARCHIVED_WAIT_MS) {
			fprintf(stderr, "itest: feature %s: no \"initial\" and \"archived\" "
			    "lifecycle stages after %d ms; left in the archive\n", name,
			    ARCHIVED_WAIT_MS);
			return;
		}
		clock_sleep_ms(100);
	}
	snprintf(path, sizeof(path), "/archive/%s", name);
	if ((st = itest_unleash_call("DELETE", path, NULL)) / 100 != 2)
		fprintf(stderr, "itest: deleting feature %s: HTTP %ld\n", name, st);
}
