/* view_holds: what holds a plan for a person, computed from the plan's
 * document (or a plan list entry) alone. A leaf: view.c calls it, it calls
 * only view_json.c. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "status.h"
#include "view_holds.h"
#include "view_json.h"

#define CANNOT_RUN	"plan_cannot_run"	/* store.h's STORE_ALERT_CANNOT_RUN */
#define WHAT_TO_DO	"; what to do: "	/* how engine_cannot_run.c splits its message */

static const char *
str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s != NULL ? s : "";
}

/* One hold; STEP 0 and ALERT 0 are null. Returns 0 or -1. */
static int
add(json_t *holds, const char *what, json_int_t step, const char *kind,
    json_int_t alert, const char *says, const char *todo)
{
	json_t *h = json_pack("{s:s,s:o,s:o,s:o,s:o,s:o}", "what", what,
	    "step", step > 0 ? json_integer(step) : json_null(),
	    "kind", view_string(kind),
	    "alert", alert > 0 ? json_integer(alert) : json_null(),
	    "says", view_string(says), "todo", view_string(todo));

	return h != NULL ? json_array_append_new(holds, h) : -1;
}

/* The step's recorded error, from DOC's steps when it carries them (the
 * plan list does not: its steps' errors can be long). */
static const char *
step_error(const json_t *doc, json_int_t n)
{
	const json_t *st = n > 0 ? json_array_get(json_object_get(doc, "steps"),
	    (size_t)(n - 1)) : NULL;

	return json_string_value(json_object_get(st, "error"));
}

/* The plan_cannot_run alert: what it says and what to do, split where the
 * engine joined them. */
static int
cannot_run(json_t *holds, const json_t *a)
{
	const char *msg = str(a, "message"), *at = strstr(msg, WHAT_TO_DO);
	char says[600];

	if (at == NULL)
		return add(holds, "cannot_run", 0, CANNOT_RUN,
		    json_integer_value(json_object_get(a, "id")),
		    msg, "see the alert: it closes by itself once the plan loads again");
	snprintf(says, sizeof(says), "the engine cannot run this plan: %.*s",
	    (int)(at - msg), msg);
	return add(holds, "cannot_run", 0, CANNOT_RUN,
	    json_integer_value(json_object_get(a, "id")), says, at + strlen(WHAT_TO_DO));
}

int
view_holds(json_t *doc)
{
	const json_t *cur = json_object_get(doc, "current"), *alerts, *a;
	const char *status = str(doc, "status"), *kind = str(cur, "kind"), *err;
	json_int_t n = json_integer_value(json_object_get(cur, "n")), id;
	json_t *holds = json_array();
	char says[800], todo[200];
	bool blocked = false, watching;
	size_t i;
	int rc = 0;

	if (holds == NULL)
		return -1;
	if (!json_is_null(json_object_get(doc, "archived_ms")) &&
	    json_object_get(doc, "archived_ms") != NULL)
		goto done;		/* filed away: nothing more to do */
	alerts = json_object_get(doc, "alerts");
	/* A plan the engine cannot run acts on no command: its gate or failed
	 * step waits for that first. */
	json_array_foreach(alerts, i, a)
		if (strcmp(str(a, "kind"), CANNOT_RUN) == 0) {
			rc |= cannot_run(holds, a);
			blocked = true;
		}
	if (!blocked && strcmp(status, "running") == 0 &&
	    strcmp(str(cur, "status"), "waiting_approval") == 0) {
		snprintf(says, sizeof(says), "step %lld (%s) waits for approval",
		    (long long)n, kind);
		snprintf(todo, sizeof(todo), "approve step %lld (%s)", (long long)n, kind);
		rc |= add(holds, "gate", n, kind, 0, says, todo);
	}
	if (!blocked && strcmp(status, "failed") == 0) {
		err = step_error(doc, n);
		if (n > 0) {
			snprintf(says, sizeof(says), "step %lld (%s) failed%s%s", (long long)n,
			    kind, err != NULL ? ": " : "", err != NULL ? err : "");
			snprintf(todo, sizeof(todo), "retry step %lld (%s) once the cause is "
			    "fixed, or abort the plan", (long long)n, kind);
		} else {
			snprintf(says, sizeof(says), "the plan failed");
			snprintf(todo, sizeof(todo), "abort the plan");
		}
		rc |= add(holds, "failed", n > 0 ? n : 0, n > 0 ? kind : NULL, 0, says, todo);
	}
	/* The watch does not end while an alert is open: say so where it holds. */
	watching = strcmp(status, "running") == 0 && strcmp(kind, "watch") == 0 &&
	    strcmp(str(cur, "status"), "running") == 0;
	json_array_foreach(alerts, i, a) {
		if (strcmp(str(a, "kind"), CANNOT_RUN) == 0)
			continue;
		id = json_integer_value(json_object_get(a, "id"));
		snprintf(says, sizeof(says), "alert %lld (%s) is open%s: %s", (long long)id,
		    str(a, "kind"), watching ? ", and the watch does not end while it is" :
		    "", str(a, "message"));
		snprintf(todo, sizeof(todo), "acknowledge alert %lld (%s) once understood",
		    (long long)id, str(a, "kind"));
		rc |= add(holds, "alert", watching ? n : 0, str(a, "kind"), id, says, todo);
	}
done:
	if (rc != 0) {
		json_decref(holds);
		return -1;
	}
	json_object_set_new(doc, "needs_person", json_boolean(json_array_size(holds) > 0));
	json_object_set_new(doc, "holds", holds);
	return 0;
}

enum view_hold_rank
view_holds_rank(const json_t *doc)
{
	const json_t *holds = json_object_get(doc, "holds");
	const json_t *archived = json_object_get(doc, "archived_ms");
	const char *what = json_string_value(json_object_get(json_array_get(holds, 0),
	    "what"));

	/* view_holds puts the most pressing first */
	if (what == NULL)
		return plan_status_of(str(doc, "status")) == PLAN_STATUS_RUNNING &&
		    (archived == NULL || json_is_null(archived)) ?
		    VIEW_HOLD_RUNNING : VIEW_HOLD_FINISHED;
	if (strcmp(what, "gate") == 0)
		return VIEW_HOLD_GATE;
	if (strcmp(what, "alert") == 0)
		return VIEW_HOLD_ALERT;
	return VIEW_HOLD_FAILED;
}

const char *
view_holds_rank_name(enum view_hold_rank rank)
{
	static const char *const names[VIEW_HOLD_RANKS] = {
		[VIEW_HOLD_GATE] = "approval", [VIEW_HOLD_FAILED] = "failed",
		[VIEW_HOLD_ALERT] = "alert", [VIEW_HOLD_RUNNING] = "running",
		[VIEW_HOLD_FINISHED] = "finished",
	};

	return (unsigned)rank < VIEW_HOLD_RANKS ? names[rank] : "finished";
}
