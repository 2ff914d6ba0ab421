/* metrics: the store as Prometheus text (exposition format 0.0.4), read
 * only. One set of series per plan name (its newest plan). Labels come
 * only from bounded sets: plan (a plan's name), step (a step kind), level
 * (a ladder level number), path (old, ladder, parking), outcome (a fixed
 * word per family), notifier (a notifier's name in serve.yaml, at most 64
 * of them), and le for the histogram's fixed buckets. Never a routing key,
 * queue name, raw delay or a notifier's URL. */
#ifndef CUTOVER_METRICS_H
#define CUTOVER_METRICS_H

#include <stddef.h>

#include "store.h"

/* Renders every series into *TEXT (malloc'd, LEN bytes). Returns 0, or -1
 * with ERR (and *TEXT NULL). */
int metrics_render(struct store *s, char **text, size_t *len, char *err,
    size_t errlen);

#endif
