/* view_notify: a plan's notifications as the API serves them — each
 * delivery to a notifier (by its name, never its URL) with its status and
 * every attempt — and the deliveries counted by notifier, as the plan and
 * the plan list show them. Read-only. */
#ifndef CUTOVER_VIEW_NOTIFY_H
#define CUTOVER_VIEW_NOTIFY_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "store.h"

/* Plan ID's notifications: {plan,name,notifications:[{id,notifier,kind,
 * event,event_id,history_kind,status,attempts,created_ms,done_ms,
 * next_ms,tries:[{attempt,ts_ms,http_status,error}]}]}, oldest first.
 * Returns 0 and *OUT, 1 when there is no such plan, -1 with ERR. */
int view_notifications(struct store *s, int64_t id, json_t **out, char *err,
    size_t errlen);

#define VIEW_NOTIFIERS_MAX	64	/* notifiers counted: serve has at most 16,
					 * the rest are ones it had before */

/* The deliveries counted by notifier, of plan ID or of every plan when ID
 * is 0 (then also each notifier serve knows with none yet):
 * [{notifier,pending,delivered,failed}], by name, at most
 * VIEW_NOTIFIERS_MAX. Returns 0 and *OUT, or -1 with ERR. */
int view_notify_counts(struct store *s, int64_t id, json_t **out, char *err,
    size_t errlen);

#endif
