/* mgmt_test: the management API calls only tests and bench make, on the
 * client of orchestrator/broker/mgmt.h (same return codes and error
 * messages): the overview, paginated queue listings, timeouts, and putting
 * and deleting queues, exchanges and bindings to set up a broker or
 * introduce drift. cutover itself does not link them. */
#ifndef CUTOVER_MGMT_TEST_H
#define CUTOVER_MGMT_TEST_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "broker/mgmt.h"

/* Sets the connect timeout and the whole-request timeout, in ms (> 0;
 * other values leave that timeout as it was). */
void mgmt_set_timeouts(struct mgmt *m, long connect_ms, long total_ms);

/* Up to how many queues in the broker M's mgmt_list_queues_all reads
 * them in one request (MGMT_ONE_LISTING_MAX; 0: never, always by name). */
void mgmt_set_one_listing_max(struct mgmt *m, long max);

/* Calls HOOK(ARG, REQUEST) after each request of M's mgmt_list_queues_all
 * (1: the first, the names' listing when it reads them by name; NULL:
 * none): what a test does there happens between two requests. */
void mgmt_set_listing_hook(struct mgmt *m, void (*hook)(void *arg, size_t request),
    void *arg);

/* ---- overview ---- */

struct mgmt_overview {
	char rabbitmq_version[32];	/* "3.10.8" */
	char management_version[32];
	char erlang_version[32];
	char cluster_name[256];
	char node[256];			/* the node that answered */
};

/* GET /api/overview: a health check that also says the broker version.
 * Fills *OV (strings truncated to fit, "" when absent). Returns 0 or a
 * negative code. */
int mgmt_overview(struct mgmt *m, struct mgmt_overview *ov,
    char *err, size_t errlen);

/* What a paginated listing said about the whole result. */
struct mgmt_page {
	int page;			/* 1-based */
	int page_size;
	int page_count;			/* pages of the filtered list */
	long item_count;		/* items on this page */
	long filtered_count;		/* queues matching the name */
	long total_count;		/* queues in the vhost */
};

/* One page of queues whose name matches NAME_REGEX (an Erlang re / PCRE
 * regex, matched by the broker and case-insensitively: "^delay" also
 * matches "Delay.1"; NULL or "" for all), PAGE_SIZE 1..500:
 * GET /api/queues/{vhost}?page=P&page_size=S&name=R&use_regex=true&
 * columns=...; statistics are on, so consumers and policy_message_ttl (the
 * effective policy definition's message-ttl, operator policies included)
 * come per queue, but lag, and a queue too new to have statistics has
 * messages and consumers -1.
 *
 * Slower at scale: every page request makes the broker read, filter and
 * sort the whole queue list of the vhost before it cuts out its page, so
 * reading all N queues costs N / page_size full walks plus statistics
 * (measured on 3.10.8 with 10,000 queues: about 9 s in pages of 500,
 * against 1 s for mgmt_list_queues); cutover reads in pages only past
 * MGMT_ONE_LISTING_MAX queues, and joins them (mgmt_list_queues_all).
 * The broker honours name and use_regex only together with page.
 *
 * Returns 0, fills *OUT (free with mgmt_queue_list_free) and, if PG is
 * not NULL, *PG; a page past the last is an HTTP 400 error from the
 * broker, except page 1 of an empty result, which is an empty list. */
int mgmt_list_queues_page(struct mgmt *m, const char *name_regex, int page,
    int page_size, struct mgmt_queue_list *out, struct mgmt_page *pg,
    char *err, size_t errlen);

/* Every page of mgmt_list_queues_page, as one list. Returns 0 or a
 * negative code, like it. */
int mgmt_list_queues_paged(struct mgmt *m, const char *name_regex,
    int page_size, struct mgmt_queue_list *out, char *err, size_t errlen);

/* Binds SOURCE to DEST (a queue or an exchange) with ROUTING_KEY and
 * ARGUMENTS (object, borrowed; NULL for none): POST /api/bindings/{vhost}/
 * e/{source}/q|e/{dest}. Binding twice is not an error. Returns 0 or a
 * negative code (e.g. HTTP 404 when either end does not exist). */
int mgmt_add_binding(struct mgmt *m, const char *source, enum mgmt_dest kind,
    const char *dest, const char *routing_key, const json_t *arguments,
    char *err, size_t errlen);

/* Deletes one binding, named by PROPERTIES_KEY as a listing gave it:
 * DELETE /api/bindings/{vhost}/e/{source}/q|e/{dest}/{props} (the key is
 * encoded again as a path segment). Returns 0, MGMT_NOT_FOUND, or a
 * negative code. */
int mgmt_delete_binding(struct mgmt *m, const char *source,
    enum mgmt_dest kind, const char *dest, const char *properties_key,
    char *err, size_t errlen);

/* Declares queue NAME: PUT /api/queues/{vhost}/{name} with {"durable",
 * "auto_delete": false, "arguments"} (ARGUMENTS borrowed, NULL for none).
 * Idempotent for the same arguments; other arguments than an existing
 * queue's are refused (HTTP 400). Returns 0 or a negative code. */
int mgmt_put_queue(struct mgmt *m, const char *name, bool durable,
    const json_t *arguments, char *err, size_t errlen);

#define MGMT_IF_EMPTY	0x1	/* delete only an empty queue */
#define MGMT_IF_UNUSED	0x2	/* delete only one without consumers */

/* Deletes queue NAME (with ?if-empty=true / if-unused=true per FLAGS).
 * Returns 0, MGMT_NOT_FOUND, or a negative code (a condition in FLAGS
 * not met is an HTTP 400 from the broker). */
int mgmt_delete_queue(struct mgmt *m, const char *name, int flags,
    char *err, size_t errlen);

/* Declares exchange NAME of TYPE: PUT /api/exchanges/{vhost}/{name} with
 * {"type", "durable", "auto_delete": false, "internal": false,
 * "arguments"} (borrowed, NULL for none). Returns 0 or a negative code. */
int mgmt_put_exchange(struct mgmt *m, const char *name, const char *type,
    bool durable, const json_t *arguments, char *err, size_t errlen);

/* Deletes exchange NAME. Returns 0, MGMT_NOT_FOUND, or a negative code. */
int mgmt_delete_exchange(struct mgmt *m, const char *name,
    char *err, size_t errlen);

#endif /* CUTOVER_MGMT_TEST_H */
