/* view_gate: what a plan's gated steps will do, for the page to say before
 * they are approved, and the plan's figures the page reads the watch with. */
#ifndef CUTOVER_VIEW_GATE_H
#define CUTOVER_VIEW_GATE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "store.h"

/* Sets "flip" (what the flip will do: {provider, host, feature,
 * environment, project, value, sentence} for unleash, {provider, host,
 * method, body, read, value, sentence} for http, or null without a flag) and
 * "facts" ({watch_interval_ms, allowance_ms, probe_every_ms,
 * max_lateness_ms, levels}) on DOC from plan ID's stored YAML. URLs are
 * reduced to their host (never a credential or a query); secrets are
 * references and never read. A stored plan that no longer loads sets
 * nothing. Returns 0, or -1 with ERR when the store failed. */
int view_gate_facts(struct store *s, int64_t id, json_t *doc, char *err,
    size_t errlen);

/* The host[:port] of URL into OUT, without "user:password@", path, query
 * or fragment; "" for NULL. */
void view_url_host(const char *url, char *out, size_t outlen);

#endif
