/* store_admit: a submitted plan validated and recorded with its steps, in
 * one transaction — the engine's rule for admitting a plan, as a store
 * write — and a finished plan archived, which frees its name
 * (store_admit.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clock.h"
#include "log.h"
#include "store_admit.h"
#include "store_int.h"

/* Appends event KIND by ACTOR with DETAILS (stolen) to plan PLAN_ID and
 * commits the transaction the caller began; rolls it back on failure.
 * Returns 0 or -1 with ERR. */
static int
commit_with_event(struct store *s, int64_t plan_id, const char *actor,
    const char *kind, json_t *details, char *err, size_t errlen)
{
	char *text = json_dumps(details, JSON_COMPACT);

	json_decref(details);
	if (text == NULL || store_append_event(s, plan_id, clock_now_ms(), actor, kind,
	    text, NULL, err, errlen) != 0) {
		if (text == NULL)
			snprintf(err, errlen, "out of memory");
		free(text);
		store_rollback(s);
		return -1;
	}
	free(text);
	return store_commit(s, err, errlen);
}

int
store_plan_submit(struct store *s, const char *file, const char *yaml, size_t len,
    const char *actor, unsigned flags, int64_t *plan_id, struct plan_errors *errs,
    char *err, size_t errlen)
{
	json_t *details;
	struct store_plan existing;
	struct plan *p = NULL;
	char sha[STORE_HASH_HEX];
	int rc = -1, r;

	if (plan_load_buffer(file, yaml, len, &p, errs) != 0)
		return STORE_INVALID;
	if (store_begin(s, err, errlen) != 0)
		goto done;
	r = store_plan_find(s, p->name, &existing, err, errlen);
	if (r != 0 && r != STORE_NOT_FOUND)
		goto fail;
	if (r == 0 && (strcmp(existing.status, "running") == 0 ||
	    strcmp(existing.status, "failed") == 0)) {
		*plan_id = existing.id;
		snprintf(err, errlen, "plan '%s' is already running (id %lld); abort it or "
		    "let it finish first", p->name, (long long)existing.id);
		rc = STORE_RUNNING;
		goto fail;
	}
	/* A finished plan keeps its name until archived: status NAME and
	 * /metrics must never mix it with a new one. */
	if (r == 0 && existing.archived_ms == 0) {
		*plan_id = existing.id;
		snprintf(err, errlen, "plan '%s' (id %lld) is %s and still holds its name; "
		    "archive it first, or submit under another name", p->name,
		    (long long)existing.id, existing.status);
		rc = STORE_UNARCHIVED;
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
	details = json_pack("{s:s,s:i,s:s}", "file", file, "steps", (int)p->nsteps, "sha256",
	    sha);
	if (details != NULL && (flags & STORE_SUBMIT_NEW))
		json_object_set_new(details, "new", json_true());
	if (commit_with_event(s, *plan_id, actor, "plan.submitted", details, err,
	    errlen) != 0)
		goto done;
	log_event("info", p->name, NULL, "plan.submitted id=%lld steps=%zu",
	    (long long)*plan_id, p->nsteps);
	rc = 0;
	goto done;
fail:
	store_rollback(s);
done:
	plan_free(p);
	return rc;
}

int
store_plan_archive(struct store *s, int64_t plan_id, const char *actor,
    const char *comment, char *err, size_t errlen)
{
	struct store_plan p;
	int r;

	if (store_begin(s, err, errlen) != 0)
		return -1;
	if ((r = store_plan_get(s, plan_id, &p, err, errlen)) != 0) {
		if (r == STORE_NOT_FOUND)
			snprintf(err, errlen, "no plan %lld", (long long)plan_id);
		store_rollback(s);
		return r == STORE_NOT_FOUND ? STORE_REFUSED : -1;
	}
	if (p.archived_ms != 0)
		snprintf(err, errlen, "plan '%s' (id %lld) is archived already", p.name,
		    (long long)p.id);
	else if (strcmp(p.status, "succeeded") != 0 && strcmp(p.status, "aborted") != 0)
		snprintf(err, errlen, "plan '%s' (id %lld) is %s; only a finished plan "
		    "(succeeded or aborted) can be archived: let it finish or abort it",
		    p.name, (long long)p.id, p.status);
	else if (store_plan_set_archived(s, plan_id, clock_now_ms(), err, errlen) != 0) {
		store_rollback(s);
		return -1;
	} else {
		if (commit_with_event(s, plan_id, actor, "plan.archived", json_pack("{s:s}",
		    "comment", comment != NULL ? comment : ""), err, errlen) != 0)
			return -1;
		log_event("info", p.name, NULL, "plan.archived id=%lld by %s",
		    (long long)p.id, actor);
		return 0;
	}
	store_rollback(s);
	return STORE_REFUSED;
}

/* A plan's origin as store_plan_origin reads it. */
struct origin {
	bool *is_new, *earlier;
};

/* store__read's FN for store_plan_origin. */
static int
read_origin(sqlite3_stmt *st, void *arg)
{
	const struct origin *o = arg;

	*o->is_new = sqlite3_column_int(st, 0) != 0;
	*o->earlier = sqlite3_column_int(st, 1) != 0;
	return 0;
}

int
store_plan_origin(struct store *s, int64_t plan_id, bool *is_new, bool *earlier,
    char *err, size_t errlen)
{
	struct origin o = { is_new, earlier };

	*is_new = *earlier = false;
	return store__read_one(s, "reading the plan's origin", read_origin, &o, err, errlen,
	    "SELECT coalesce((SELECT json_extract(details_json, '$.new') FROM events"
	    "   WHERE plan_id = ?1 AND kind = 'plan.submitted' ORDER BY id LIMIT 1), 0),"
	    " EXISTS (SELECT 1 FROM plans o, plans p WHERE p.id = ?1"
	    "   AND o.name = p.name AND o.id < p.id)", "I", plan_id) == 0 ? 0 : -1;
}
