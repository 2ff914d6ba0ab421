/* notify_body: what a notifier POSTs for one delivery — the generic JSON
 * document of a webhook, or a Slack incoming webhook's {"text": ...} —
 * built from the delivery's event alone (pure: no I/O). */
#ifndef CUTOVER_NOTIFY_BODY_H
#define CUTOVER_NOTIFY_BODY_H

#include <stddef.h>
#include <stdint.h>

#include "serve_config.h"
#include "store_notify.h"

/* The body of delivery D for a notifier of KIND, a malloc'ed JSON text
 * the caller frees. Returns 0, or -1 with ERR. */
int notify_body(enum notify_kind kind, const struct store_delivery *d, char **out,
    char *err, size_t errlen);

/* The body of a notification of the service itself (notify_service):
 * EVENT at TS_MS (epoch ms), TEXT saying what, for a notifier of KIND; no
 * plan. A malloc'ed JSON text the caller frees. Returns 0, or -1 with ERR. */
int notify_service_body(enum notify_kind kind, const char *event, const char *text,
    int64_t ts_ms, char **out, char *err, size_t errlen);

/* One line saying what happened, e.g. "cutover: plan orders waits for
 * approval of step 5, flip", into BUF. Returns BUF. */
char *notify_text(const struct store_delivery *d, char *buf, size_t len);

#endif
