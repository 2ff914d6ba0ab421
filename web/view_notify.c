/* view_notify: GET /api/plans/{plan}/notifications and the deliveries
 * counted by notifier (view_notify.h). */
#include <stdio.h>

#include "store_notify.h"
#include "view_json.h"
#include "view_notify.h"

static int
one(const struct store_delivery *d, void *arg)
{
	json_t *tries = json_loads(d->attempts_json, 0, NULL), *row;

	row = json_pack("{s:I,s:o,s:o,s:o,s:I,s:o,s:o,s:i,s:I,s:o,s:o,s:o}",
	    "id", (json_int_t)d->id, "notifier", view_string(d->notifier),
	    "kind", view_string(d->kind), "event", view_string(d->event),
	    "event_id", (json_int_t)d->event_id, "history_kind", view_string(d->history_kind),
	    "status", view_string(d->status), "attempts", d->attempts,
	    "created_ms", (json_int_t)d->created_ms,
	    "done_ms", d->done_ms != 0 ? json_integer((json_int_t)d->done_ms) : json_null(),
	    "next_ms", d->status[0] == 'p' ? json_integer((json_int_t)d->next_ms) : json_null(),
	    "tries", tries != NULL ? tries : json_array());
	return json_array_append_new(arg, row) != 0;
}

int
view_notifications(struct store *s, int64_t id, json_t **out, char *err, size_t errlen)
{
	struct store_plan p;
	json_t *list;
	int r;

	*out = NULL;
	if ((r = store_plan_get(s, id, &p, err, errlen)) != 0)
		return r;
	if ((list = json_array()) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (store_notify_each(s, id, one, list, err, errlen) != 0) {
		json_decref(list);
		return -1;
	}
	if ((*out = json_pack("{s:I,s:o,s:o}", "plan", (json_int_t)p.id, "name",
	    view_string(p.name), "notifications", list)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

static int
count_one(const struct store_notify_count *c, void *arg)
{
	json_t *row = json_pack("{s:o,s:I,s:I,s:I}", "notifier", view_string(c->notifier),
	    "pending", (json_int_t)c->pending, "delivered", (json_int_t)c->delivered,
	    "failed", (json_int_t)c->failed);

	return row == NULL || json_array_append_new(arg, row) != 0;
}

int
view_notify_counts(struct store *s, int64_t id, json_t **out, char *err, size_t errlen)
{
	if ((*out = json_array()) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (store_notify_counts(s, id, VIEW_NOTIFIERS_MAX, count_one, *out, err,
	    errlen) != 0) {
		json_decref(*out);
		*out = NULL;
		return -1;
	}
	return 0;
}
