/* store_admit: a submitted plan validated and recorded with its steps, in
 * one transaction — the engine's rule for admitting a plan, as a store
 * write (store_admit.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clock.h"
#include "log.h"
#include "store_admit.h"

int
store_plan_submit(struct store *s, const char *file, const char *yaml, size_t len,
    const char *actor, int64_t *plan_id, struct plan_errors *errs, char *err,
    size_t errlen)
{
	struct store_plan existing;
	struct plan *p = NULL;
	char sha[STORE_HASH_HEX];
	json_t *d;
	char *text = NULL;
	int rc = -1, r;

	if (plan_load_buffer(file, yaml, len, &p, errs) != 0)
		return 1;
	if (store_begin(s, err, errlen) != 0)
		goto done;
	r = store_plan_find(s, p->name, &existing, err, errlen);
	if (r < 0)
		goto fail;
	if (r == 0 && (strcmp(existing.status, "running") == 0 ||
	    strcmp(existing.status, "failed") == 0)) {
		*plan_id = existing.id;
		snprintf(err, errlen, "plan '%s' is already running (id %lld); abort it or "
		    "let it finish first", p->name, (long long)existing.id);
		rc = 2;
		goto fail;
	}
	if (store_plan_insert(s, p->name, yaml, len, clock_now_ms(), plan_id, err,
	    errlen) != 0 || store_plan_get(s, *plan_id, &existing, err, errlen) != 0)
		goto fail;
	snprintf(sha, sizeof(sha), "%s", existing.sha256);
	for (size_t i = 0; i < p->nsteps; i++)
		if (store_step_insert(s, *plan_id, (int)i,
		    plan_step_kind_name(p->steps[i].kind), p->steps[i].gate, err, errlen) != 0)
			goto fail;
	d = json_pack("{s:s,s:i,s:s}", "file", file, "steps", (int)p->nsteps, "sha256",
	    sha);
	text = json_dumps(d, JSON_COMPACT);
	json_decref(d);
	if (store_append_event(s, *plan_id, clock_now_ms(), actor, "plan.submitted",
	    text, NULL, err, errlen) != 0)
		goto fail;
	if (store_commit(s, err, errlen) != 0)
		goto done;
	log_event("info", p->name, NULL, "plan.submitted id=%lld steps=%zu",
	    (long long)*plan_id, p->nsteps);
	rc = 0;
	goto done;
fail:
	store_rollback(s);
done:
	free(text);
	plan_free(p);
	return rc;
}
