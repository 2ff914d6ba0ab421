/* page: the status page and /metrics of `cutover serve` — the page's files
 * (web/assets, compiled into the binary by web/embed.cmake) and the
 * Prometheus text rendering of the store (metrics.c).
 *
 *   GET /                      the page (index.html)
 *   GET /assets/NAME           its script and style sheet
 *   GET /metrics               Prometheus text format (read-only)
 *
 * The page reads and writes only through the JSON API (api.h); it loads
 * nothing from anywhere else. */
#ifndef CUTOVER_PAGE_H
#define CUTOVER_PAGE_H

#include <stddef.h>

#include <microhttpd.h>

#include "store.h"

/* One embedded file: its name under web/assets and its bytes. */
struct page_asset {
	const char *name;
	const unsigned char *data;
	size_t len;
};

/* Generated at build time; ends with a NULL name. */
extern const struct page_asset page_assets[];

enum page_kind {
	PAGE_NONE = 0,		/* not the page's: the API's */
	PAGE_ASSET,
	PAGE_METRICS
};

struct page_target {
	enum page_kind kind;
	const struct page_asset *asset;		/* PAGE_ASSET */
};

/* Matches the decoded PATH: fills T and returns its kind, or PAGE_NONE. */
enum page_kind page_route(const char *path, struct page_target *t);

/* The embedded asset called NAME, or NULL. */
const struct page_asset *page_asset(const char *name);

/* Queues the answer to T on C; S is a store connection for PAGE_METRICS
 * (NULL otherwise). Sets *STATUS to the HTTP status queued. */
enum MHD_Result page_respond(struct MHD_Connection *c, const struct page_target *t,
    struct store *s, int *status);

#endif
