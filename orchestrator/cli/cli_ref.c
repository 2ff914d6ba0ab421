/* cli_ref: a step or an alert named on the command line, by its number
 * or its kind, found the same way whether the verb reads a database or
 * asks a server; a name that matches none is answered with what the plan
 * has and the one most likely meant. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "errbuf.h"
#include "near.h"

/* Whether A and B are the same kind written with '-' for '_' or in
 * another case (remove-old, Remove_Old). */
static int
same_kind(const char *a, const char *b)
{
	return near_distance(a, b, 0) == 0;
}

int
cli_step_ref(const char *plan, const char *const *kinds, size_t n, const char *ref,
    char *err, size_t errlen)
{
	const char *near;
	char *end, list[768] = "";
	long k = strtol(ref, &end, 10);
	size_t i, used = 0;

	if (*ref >= '0' && *ref <= '9' && *end == '\0') {
		if (k >= 1 && (size_t)k <= n)
			return (int)k - 1;
	} else {
		for (i = 0; i < n; i++)
			if (strcmp(kinds[i], ref) == 0)
				return (int)i;
		for (i = 0; i < n; i++)
			if (same_kind(kinds[i], ref))
				return (int)i;
	}
	for (i = 0; i < n && used < sizeof(list); i++) {
		int w = snprintf(list + used, sizeof(list) - used, "%s%zu %s", i ? ", " : "",
		    i + 1, kinds[i]);

		if (w < 0)
			break;
		used += (size_t)w;
	}
	near = near_word(ref, kinds, n);
	errbuf_set(err, errlen, "plan '%s' has no step '%s'%s%s%s; its steps: %s", plan, ref,
	    near != NULL ? " (did you mean '" : "", near != NULL ? near : "",
	    near != NULL ? "'?)" : "", list);
	return -1;
}

int64_t
cli_alert_ref(const char *plan, const struct cli_alert *open, size_t n, const char *ref,
    char *err, size_t errlen)
{
	const char *kinds[CLI_ALERTS_MAX], *near;
	char *end, list[768] = "";
	long long id = strtoll(ref, &end, 10);
	size_t i, used = 0, found = 0, at = 0;

	if (*ref >= '0' && *ref <= '9' && *end == '\0') {
		if (id > 0)
			return id;
		errbuf_set(err, errlen, "plan '%s' has no alert %s: alerts are numbered from 1",
		    plan, ref);
		return -1;
	}
	for (i = 0; i < n; i++)
		if (same_kind(open[i].kind, ref)) {
			found++;
			at = i;
		}
	if (found == 1)
		return open[at].id;
	for (i = 0; i < n && i < CLI_ALERTS_MAX && used < sizeof(list); i++) {
		int w = snprintf(list + used, sizeof(list) - used, "%s#%lld %s", i ? ", " : "",
		    (long long)open[i].id, open[i].kind);

		kinds[i] = open[i].kind;
		if (w < 0)
			break;
		used += (size_t)w;
	}
	if (found > 1) {
		errbuf_set(err, errlen, "plan '%s' has %zu open alerts of kind '%s': give the "
		    "number of the one you mean (%s)", plan, found, ref, list);
		return -1;
	}
	near = near_word(ref, kinds, i);
	errbuf_set(err, errlen, "plan '%s' has no open alert '%s'%s%s%s; %s%s", plan, ref,
	    near != NULL ? " (did you mean '" : "", near != NULL ? near : "",
	    near != NULL ? "'?)" : "", n > 0 ? "its open alerts: " : "it has no open alert",
	    list);
	return -1;
}
