/* view_gate: what the plan's steps will do, said before they run — the
 * flip's flag service, feature, environment and value (from the stored
 * plan, never a secret: URLs are reduced to their host) and the figures
 * the page needs to read the watch (interval, allowance, probe bound). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "plan_flag.h"
#include "view_json.h"
#include "view_gate.h"

void
view_url_host(const char *url, char *out, size_t outlen)
{
	const char *p, *end, *at;

	out[0] = '\0';
	if (url == NULL)
		return;
	p = strstr(url, "://");
	p = p != NULL ? p + 3 : url;
	end = p + strcspn(p, "/?#");
	/* user:password@ is never shown */
	for (at = p; at < end; at++)
		if (*at == '@')
			p = at + 1;
	snprintf(out, outlen, "%.*s", (int)(end - p), p);
}

/* The flip of plan P: {"provider","host","feature","environment",
 * "project","value"}; http: {"provider","host","method","body" (the "on"
 * request's, a literal: secrets are only ever headers), "read" (the
 * read-back's pointer), "value" (what it must read there)}. */
static json_t *
flip_will_do(const struct plan *p)
{
	const struct plan_flag_unleash *u = plan_flag_unleash(p);
	const struct plan_flag_http *h = plan_flag_http(p);
	char host[256];

	if (u != NULL) {
		view_url_host(u->url, host, sizeof(host));
		return json_pack("{s:s,s:o,s:o,s:o,s:o,s:s,s:s}", "provider", "unleash",
		    "host", view_string(host), "feature", view_string(u->feature),
		    "environment", view_string(u->environment), "project",
		    view_string(u->project), "value", "enabled (on)", "sentence",
		    "turns the feature on: new delayed publishes go to the ladder");
	}
	if (h == NULL)
		return json_null();
	view_url_host(h->on.url, host, sizeof(host));
	return json_pack("{s:s,s:o,s:o,s:o,s:o,s:o,s:s}", "provider", "http", "host",
	    view_string(host), "method", view_string(h->on.method), "body",
	    view_string(h->on.body), "read", view_string(h->read_pointer),
	    "value", view_string(h->read_on),
	    "sentence", "calls the flag service's \"on\" request and reads the flag back");
}

int
view_gate_facts(struct store *s, int64_t id, json_t *doc, char *err, size_t errlen)
{
	struct plan_errors errs = { 0 };
	struct plan *p = NULL;
	char *yaml = NULL, file[64];
	size_t len;
	int rc;

	if ((rc = store_plan_yaml(s, id, &yaml, &len, err, errlen)) != 0)
		return rc < 0 ? -1 : 0;
	snprintf(file, sizeof(file), "plan %lld", (long long)id);
	if (plan_load_buffer(file, yaml, len, &p, &errs) != 0) {
		/* A stored plan that no longer loads: the page says nothing more. */
		plan_errors_free(&errs);
		free(yaml);
		return 0;
	}
	json_object_set_new(doc, "flip", flip_will_do(p));
	json_object_set_new(doc, "facts", json_pack("{s:I,s:I,s:I,s:I,s:i}",
	    "watch_interval_ms", (json_int_t)p->watch.interval_ms, "allowance_ms",
	    (json_int_t)p->watch.allowance_ms, "probe_every_ms",
	    (json_int_t)p->watch.probe_every_ms, "max_lateness_ms",
	    (json_int_t)p->canary.max_lateness_ms, "levels", (int)p->ladder.levels));
	plan_free(p);
	free(yaml);
	return 0;
}
