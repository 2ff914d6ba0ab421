/* itest_unleash: a test's own features in the test Unleash (see
 * itest_unleash.h), through libcurl; the token goes only into the
 * Authorization header. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "itest_unleash.h"

static const char *
need_env(const char *name)
{
	const char *v = getenv(name);

	if (v == NULL || *v == '\0')
		fail_msg("set %s (scripts/test does: scripts/unleash env)", name);
	return v;
}

static size_t
discard(char *p, size_t size, size_t n, void *arg)
{
	(void)p;
	(void)arg;
	return size * n;
}

/* One admin API call: METHOD /api/admin PATH with JSON BODY (or NULL).
 * Returns the HTTP status, 0 when there was no answer. */
static long
unleash(const char *method, const char *path, const char *body)
{
	char url[512], auth[512];
	struct curl_slist *h = NULL;
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
	curl_easy_setopt(cu, CURLOPT_TIMEOUT_MS, 20000L);
	curl_easy_setopt(cu, CURLOPT_WRITEFUNCTION, discard);
	if (body != NULL)
		curl_easy_setopt(cu, CURLOPT_POSTFIELDS, body);
	if (curl_easy_perform(cu) == CURLE_OK)
		curl_easy_getinfo(cu, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(h);
	curl_easy_cleanup(cu);
	return status;
}

void
itest_feature_set(const char *name, bool on)
{
	char path[256];
	long st;

	snprintf(path, sizeof(path), "/projects/default/features/%s/environments/"
	    "production/%s", name, on ? "on" : "off");
	if ((st = unleash("POST", path, NULL)) != 200)
		fail_msg("turning feature '%s' %s: HTTP %ld", name, on ? "on" : "off", st);
}

void
itest_feature_create(const char *name)
{
	char body[256];
	long st;

	snprintf(body, sizeof(body), "{\"name\":\"%s\",\"type\":\"release\"}", name);
	if ((st = unleash("POST", "/projects/default/features", body)) != 201 &&
	    st != 200)
		fail_msg("creating feature '%s': HTTP %ld", name, st);
	itest_feature_set(name, true);
}

void
itest_feature_delete(const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "/projects/default/features/%s", name);
	(void)unleash("DELETE", path, NULL);
	snprintf(path, sizeof(path), "/archive/%s", name);
	(void)unleash("DELETE", path, NULL);
}
