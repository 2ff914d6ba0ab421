/* engine_cannot_run: what serve says of a plan it cannot run (the alert
 * plan_cannot_run and the event plan.cannot_run, once per reason) and
 * the closing of that alert once the plan runs again, under serve or
 * `cutover run`. It needs no plan's run: only the store and the engine's
 * alert writes (engine_transition.c), so both loops call it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clock.h"
#include "engine_int.h"
#include "log.h"

/* The entry of U for plan ID, added empty when there is none; NULL when
 * out of memory. */
static char *
unrunnable_why(struct unrunnable *u, int64_t id)
{
	size_t i;

	for (i = 0; i < u->n && u->v[i].id != id; i++)
		;
	if (i < u->n)
		return u->v[i].why;
	if (u->n == u->cap) {
		size_t cap = u->cap ? 2 * u->cap : 8;
		void *v = realloc(u->v, cap * sizeof(*u->v));

		if (v == NULL)
			return NULL;
		u->v = v;
		u->cap = cap;
	}
	u->v[u->n].id = id;
	u->v[u->n].why[0] = '\0';
	return u->v[u->n++].why;
}

/* Serve cannot run plan ID because of WHY: the first time, and whenever
 * the reason changes, says so once in the log and in the store — the
 * alert plan_cannot_run with what to do (the page and /metrics show it)
 * and the event plan.cannot_run — never at every turn. Unless the
 * process already said it, an open alert with that message (an earlier
 * process's) is kept as it is. */
void
engine__plan_cannot_run(struct store *s, struct unrunnable *u, int64_t id, const char *why)
{
	struct engine_open_alert open = { .kind = STORE_ALERT_CANNOT_RUN };
	struct store_plan p;
	char message[512], err[512], *said = unrunnable_why(u, id), *text = NULL;
	const char *name = NULL;
	json_t *details = NULL;
	int64_t alert = 0;
	bool raised = false;
	int room;

	if (said != NULL && strcmp(said, why) == 0)
		return;
	if (said != NULL)
		snprintf(said, sizeof(u->v[0].why), "%s", why);
	if (store_plan_get(s, id, &p, err, sizeof(err)) == 0)
		name = p.name;
	log_event("error", name, NULL, "plan %lld cannot run: %s; what to do: %s",
	    (long long)id, why, STORE_CANNOT_RUN_ACTION);
	/* An alert's message is at most 511 bytes: the reason is cut to leave
	 * room for what to do (the event and the log have it whole). */
	room = (int)(sizeof(message) - 1 - strlen("; what to do: ") -
	    strlen(STORE_CANNOT_RUN_ACTION));
	snprintf(message, sizeof(message), "%.*s%s; what to do: %s",
	    (int)strlen(why) > room ? room - 3 : room, why,
	    (int)strlen(why) > room ? "..." : "", STORE_CANNOT_RUN_ACTION);
	if (engine__alert_find_open(s, id, &open, err, sizeof(err)) != 0)
		goto failed;
	if (open.id != 0 && strcmp(open.message, message) == 0)
		goto done;
	if ((details = json_pack("{s:s,s:s}", "error", why, "what_to_do",
	    STORE_CANNOT_RUN_ACTION)) == NULL ||
	    (text = json_dumps(details, JSON_COMPACT)) == NULL) {
		snprintf(err, sizeof(err), "out of memory");
		goto failed;
	}
	if (store_begin(s, err, sizeof(err)) != 0)
		goto failed;
	if (store_alert_raise(s, id, STORE_ALERT_CANNOT_RUN, message, clock_now_ms(),
	    &alert, &raised, err, sizeof(err)) != 0 ||
	    store_append_event(s, id, clock_now_ms(), ACTOR, "plan.cannot_run", text, NULL,
	    err, sizeof(err)) != 0) {
		store_rollback(s);
		goto failed;
	}
	if (store_commit(s, err, sizeof(err)) == 0)
		goto done;
failed:
	log_event("error", name, NULL, "recording that plan %lld cannot run: %s",
	    (long long)id, err);
done:
	free(text);
	json_decref(details);
}

/* Plan ID runs (again), under serve (U: what serve said of the plans it
 * could not run) or `cutover run` (U NULL): what plan_cannot_run said of
 * it is over, and its open plan_cannot_run alert, if any, closes with a
 * word in the history (alert.acked by the engine) — commands for the
 * plan are then taken again. */
void
engine__plan_can_run(struct store *s, struct unrunnable *u, int64_t id)
{
	size_t i;

	for (i = 0; u != NULL && i < u->n && u->v[i].id != id; i++)
		;
	if (u != NULL && i < u->n)
		u->v[i] = u->v[--u->n];
	engine__alert_close(s, id, NULL, STORE_ALERT_CANNOT_RUN, "the stored plan loads again");
}

void
engine__unrunnable_free(struct unrunnable *u)
{
	free(u->v);
	u->v = NULL;
	u->n = u->cap = 0;
}
