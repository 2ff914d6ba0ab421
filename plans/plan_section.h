/* plan_section: what a plan section loader that lives outside plan_load.c
 * reads its section with — a flag kind's (plan_flag.h), called by
 * plan_load.c through the flag kind table. A struct plan_section is one
 * mapping of the plan being loaded (such as flag), with its path for
 * messages; it is the loader's (plan_load_int.h; plan_section.c implements
 * this header) and only valid during the call it is given to. Every error
 * is recorded with FILE:LINE:COL as the loader's own are; nothing here
 * returns an error to handle. */
#ifndef CUTOVER_PLAN_SECTION_H
#define CUTOVER_PLAN_SECTION_H

#include <stdbool.h>

#include "plan.h"

struct plan_section;

/* The plan being loaded, to store what the section holds. */
struct plan *plan_section_plan(const struct plan_section *ps);

/* Reports keys of the section that are not scalars, repeated, or not
 * among KEYS (NULL-terminated). */
void plan_section_keys(const struct plan_section *ps,
    const char *const *keys);

/* KEY of the section as a string into *OUT (a new copy): EXPECT says what
 * it should hold. A missing KEY is reported when REQUIRED. */
void plan_section_text(const struct plan_section *ps, const char *key,
    bool required, const char *expect, char **out);

/* KEY of the section as an env:NAME reference into *OUT (EXAMPLE such as
 * "env:UNLEASH_TOKEN"); a literal secret is an error. */
void plan_section_secret(const struct plan_section *ps, const char *key,
    bool required, const char *example, char **out);

/* KEY of the section as an http(s) URL into *OUT; with BASE, one that
 * paths are appended to (no query). */
void plan_section_url(const struct plan_section *ps, const char *key,
    bool required, bool base, char **out);

/* KEY of the section as an HTTP call { method, url, body } into *CALL;
 * PATH ("flag.on") names it in messages. Required. */
void plan_section_http_call(const struct plan_section *ps, const char *key,
    const char *path, struct plan_http_call *call);

struct plan_flag_http;

/* The section's read: { url, pointer, on, off } into H's read_url,
 * read_pointer, read_on and read_off. Required. */
void plan_section_flag_read(const struct plan_section *ps,
    struct plan_flag_http *h);

/* The section's optional headers: { Name: value or env:NAME } into H's
 * headers; a literal credential is an error. */
void plan_section_flag_headers(const struct plan_section *ps,
    struct plan_flag_http *h);

/* The section's optional tls map (tls.h) into the plan's flag.tls,
 * refused when none of URLS (N of them, NULLs skipped: the kind's own, as
 * already loaded) is https://. */
void plan_section_flag_tls(const struct plan_section *ps,
    const char *const *urls, size_t n);

/* The section's optional settle (a duration) into the plan's
 * flag.settle_ms, refused below PLAN_MIN_FLAG_SETTLE_MS. */
void plan_section_flag_settle(const struct plan_section *ps);

#endif
