/* flag_unleash: the flag provider "unleash" (flag_provider.h) — the admin
 * API of an Unleash server: the token header, the switch URL and the
 * read-back of the feature's environment. See flag.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flag_transport.h"
#include "plan_flag.h"

/* Percent-encodes S as one path segment into a new string, or NULL. */
static char *
segment(struct flag_call *c, const char *s)
{
	char *e, *out;

	if ((e = curl_easy_escape(c->curl, s, 0)) == NULL)
		return NULL;
	out = strdup(e);
	curl_free(e);
	return out;
}

/* The headers of kind unleash: the token, resolved now. */
static int
unleash_headers(struct flag_call *c, char *err, size_t errlen)
{
	const struct plan *p = c->p;
	const char *token;
	int rc;

	if ((rc = flag_resolve(c, plan_flag_unleash(p)->token, "flag.token", &token, err,
	    errlen)) != 0)
		return rc;
	if (flag_add_header(&c->hdr_write, "Authorization", token) != 0 ||
	    flag_add_header(&c->hdr_write, "Content-Type", JSON_TYPE) != 0 ||
	    flag_add_header(&c->hdr_write, "Accept", JSON_TYPE) != 0 ||
	    flag_add_header(&c->hdr_read, "Authorization", token) != 0 ||
	    flag_add_header(&c->hdr_read, "Accept", JSON_TYPE) != 0) {
		errbuf_set(err, errlen, "flag: out of memory");
		return FLAG_ERR_NOMEM;
	}
	return 0;
}

/* "{url}/api/admin/projects/{project}/features/{feature}" and SUFFIX. */
static char *
unleash_url(struct flag_call *c, const char *suffix)
{
	const struct plan *p = c->p;
	char *proj, *feat, *out = NULL;
	size_t n, base;

	proj = segment(c, plan_flag_unleash(p)->project);
	feat = segment(c, plan_flag_unleash(p)->feature);
	if (proj == NULL || feat == NULL)
		goto done;
	base = strlen(plan_flag_unleash(p)->url);
	while (base > 0 && plan_flag_unleash(p)->url[base - 1] == '/')
		base--;
	n = base + strlen(proj) + strlen(feat) + strlen(suffix) + 64;
	if ((out = malloc(n)) == NULL)
		goto done;
	snprintf(out, n, "%.*s/api/admin/projects/%s/features/%s%s",
	    (int)base, plan_flag_unleash(p)->url, proj, feat, suffix);
done:
	free(proj);
	free(feat);
	return out;
}

/* ".../features/{feature}/environments/{environment}/on" (or off). */
static char *
unleash_switch_url(struct flag_call *c, bool on)
{
	char *env, *suffix = NULL, *url = NULL;
	size_t n;

	if ((env = segment(c, plan_flag_unleash(c->p)->environment)) == NULL)
		return NULL;
	n = strlen(env) + 32;
	if ((suffix = malloc(n)) != NULL) {
		snprintf(suffix, n, "/environments/%s/%s", env,
		    on ? "on" : "off");
		url = unleash_url(c, suffix);
	}
	free(env);
	free(suffix);
	return url;
}

/* The member of the environments array ARR named NAME, or NULL. */
static json_t *
find_environment(const json_t *arr, const char *name)
{
	const char *n;
	json_t *e;
	size_t i;

	for (i = 0; i < json_array_size(arr); i++) {
		e = json_array_get(arr, i);
		n = json_string_value(json_object_get(e, "name"));
		if (n != NULL && strcmp(n, name) == 0)
			return e;
	}
	return NULL;
}

/* The names of the environments in ARR, as "a, b", in a new string; NULL
 * when out of memory. */
static char *
environment_names(const json_t *arr)
{
	const char *name;
	char *envs;
	size_t i, n;

	for (i = 0, n = 0; i < json_array_size(arr); i++) {
		name = json_string_value(json_object_get(
		    json_array_get(arr, i), "name"));
		n += name != NULL ? strlen(name) + 2 : 0;
	}
	if ((envs = calloc(1, n + 1)) == NULL)
		return NULL;
	for (i = 0; i < json_array_size(arr); i++) {
		name = json_string_value(json_object_get(
		    json_array_get(arr, i), "name"));
		if (name == NULL)
			continue;
		if (envs[0] != '\0')
			strcat(envs, ", ");
		strcat(envs, name);
	}
	return envs;
}

static int
read_unleash(struct flag_call *c, const char *label, int *state, char *err,
    size_t errlen)
{
	const struct plan *p = c->p;
	char ex[FLAG_EXCERPT_MAX + 1], *url = NULL, *envs = NULL, *t;
	json_t *j = NULL, *arr, *e, *env = NULL, *en = NULL;
	json_error_t jerr;
	int rc;

	*state = FLAG_STATE_NEITHER;
	if ((url = unleash_url(c, "")) == NULL) {
		rc = FLAG_ERR_NOMEM;
		errbuf_set(err, errlen, "%s: out of memory", label);
		goto done;
	}
	if ((rc = flag_send(c, label, "read", "GET", url, NULL, c->hdr_read,
	    err, errlen)) != 0)
		goto done;
	rc = FLAG_ERR_ANSWER;
	if ((j = json_loadb(c->answer.p, c->answer.len, 0, &jerr)) == NULL) {
		if (flag_excerpt(c, c->answer.p, c->answer.len, 0, ex) != 0)
			ex[0] = '\0';
		errbuf_set(err, errlen, "%s: GET %s: HTTP %ld but the answer is "
		    "not JSON (%s): %s", label, url, c->status, jerr.text, ex);
		goto done;
	}
	arr = json_object_get(j, "environments");
	if ((env = find_environment(arr, plan_flag_unleash(p)->environment)) == NULL) {
		envs = environment_names(arr);
		errbuf_set(err, errlen, "%s: GET %s: feature \"%s\" has no "
		    "environment \"%s\" (it has: %s)", label, url,
		    plan_flag_unleash(p)->feature, plan_flag_unleash(p)->environment,
		    envs != NULL && envs[0] != '\0' ? envs : "none");
		flag_excerpt(c, c->answer.p, c->answer.len, 0, ex);
		if (flag_record_read(c, NULL, -1, ex) != 0)
			rc = FLAG_ERR_NOMEM;
		goto done;
	}
	/* The excerpt is the environment, less its strategies. */
	if ((e = json_deep_copy(env)) == NULL) {
		rc = FLAG_ERR_NOMEM;
		goto done;
	}
	json_object_del(e, "strategies");
	t = json_dumps(e, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(e);
	if (t == NULL || flag_excerpt(c, t, strlen(t), 0, ex) != 0) {
		free(t);
		rc = FLAG_ERR_NOMEM;
		goto done;
	}
	free(t);
	en = json_object_get(env, "enabled");
	*state = json_is_true(en) ? FLAG_STATE_ON : json_is_false(en) ? FLAG_STATE_OFF :
	    FLAG_STATE_NEITHER;
	if ((rc = flag_record_read(c, en, *state, ex)) != 0) {
		errbuf_set(err, errlen, "%s: out of memory", label);
		goto done;
	}
	if (*state == FLAG_STATE_NEITHER) {
		rc = FLAG_ERR_ANSWER;
		errbuf_set(err, errlen, "%s: GET %s: environment \"%s\" has no "
		    "boolean \"enabled\": %s", label, url, plan_flag_unleash(p)->environment,
		    ex);
		goto done;
	}
	rc = 0;
done:
	if (rc != 0)
		*state = FLAG_STATE_NEITHER;
	json_decref(j);
	free(envs);
	free(url);
	return rc;
}

static int
unleash_check(const struct plan *p, bool switching, bool on, char *err,
    size_t errlen)
{
	int rc;

	(void)switching;
	(void)on;
	if ((rc = flag_check_url(plan_flag_unleash(p)->url, "flag.url", 1, err,
	    errlen)) != 0)
		return rc;
	if (plan_flag_unleash(p)->project == NULL || plan_flag_unleash(p)->project[0] == '\0' ||
	    plan_flag_unleash(p)->feature == NULL || plan_flag_unleash(p)->feature[0] == '\0' ||
	    plan_flag_unleash(p)->environment == NULL ||
	    plan_flag_unleash(p)->environment[0] == '\0') {
		errbuf_set(err, errlen, "flag: kind unleash needs project, "
		    "feature and environment");
		return FLAG_ERR_ARG;
	}
	return 0;
}

static int
unleash_set(struct flag_call *c, bool on, const char *label, char *err,
    size_t errlen)
{
	char *url;
	int rc;

	if ((url = unleash_switch_url(c, on)) == NULL) {
		errbuf_set(err, errlen, "%s: out of memory", label);
		return FLAG_ERR_NOMEM;
	}
	rc = flag_send(c, label, "write", "POST", url, NULL, c->hdr_write,
	    err, errlen);
	free(url);
	return rc;
}

static void
unleash_mismatch(const struct plan *p, bool on, const char *label,
    const char *found, char *err, size_t errlen)
{
	errbuf_set(err, errlen, "%s: read back: feature \"%s\" in "
	    "environment \"%s\" has enabled %s; expected %s",
	    label, plan_flag_unleash(p)->feature, plan_flag_unleash(p)->environment, found,
	    on ? "true" : "false");
}

static void
unleash_describe(const struct plan *p, char *out, size_t outlen)
{
	snprintf(out, outlen, "Unleash feature '%s' (%s, project %s, "
	    "environment %s)", plan_flag_unleash(p)->feature, plan_flag_unleash(p)->url, plan_flag_unleash(p)->project,
	    plan_flag_unleash(p)->environment);
}

static json_t *
unleash_history(const struct plan *p)
{
	return json_pack("{s:s,s:s,s:s,s:s}", "kind", "unleash", "url",
	    plan_flag_unleash(p)->url, "feature", plan_flag_unleash(p)->feature, "environment",
	    plan_flag_unleash(p)->environment);
}

const struct flag_provider flag_unleash = {
	.name = "unleash",
	.check = unleash_check,
	.headers = unleash_headers,
	.set = unleash_set,
	.read = read_unleash,
	.mismatch = unleash_mismatch,
	.describe = unleash_describe,
	.history = unleash_history,
};
