/* flag_provider: a kind of feature-flag service, as a struct of
 * operations (DESIGN §4: extension points are tables). flag.c holds the
 * table of providers, found by the name a plan's flag.kind gives; each
 * provider is one file (flag_unleash.c, flag_http.c) defining one const
 * struct flag_provider. Its plan section is read by its row in
 * plans/plan_flag.c, on the plan side, so that what admits plans (web/,
 * state/) never links the flag client. Adding a provider is one new file
 * here and a row in each table. Internal to the flag module: callers use
 * flag.h. */
#ifndef CUTOVER_FLAG_PROVIDER_H
#define CUTOVER_FLAG_PROVIDER_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "plan.h"

struct flag_call;

struct flag_provider {
	/* As written in a plan's flag.kind ("unleash"). */
	const char *name;

	/* Checks P's flag section before anything is sent; with SWITCHING,
	 * what the switch to ON needs too. Returns 0 or FLAG_ERR_ARG with
	 * ERR naming the plan field. */
	int (*check)(const struct plan *p, bool switching, bool on,
	    char *err, size_t errlen);

	/* Resolves the secrets of C's plan (flag_resolve, so that they are
	 * redacted) and builds C->hdr_write and C->hdr_read. Returns 0 or a
	 * negative FLAG_ERR_* code with ERR set. */
	int (*headers)(struct flag_call *c, char *err, size_t errlen);

	/* Sends the switch to ON (one flag_send, role "write"); LABEL names
	 * the call in messages. Returns 0 on a 2xx answer, else a negative
	 * FLAG_ERR_* code with ERR set. */
	int (*set)(struct flag_call *c, bool on, const char *label,
	    char *err, size_t errlen);

	/* Reads the flag into *STATE (1 on, 0 off, -1 neither) and records
	 * the read-back in C's result (flag_record_read). Returns 0 when it
	 * could be read, else a negative FLAG_ERR_* code with ERR set. */
	int (*read)(struct flag_call *c, const char *label, int *state,
	    char *err, size_t errlen);

	/* The message for a read-back that found FOUND (a value's text)
	 * after a switch to ON, into ERR. */
	void (*mismatch)(const struct plan *p, bool on, const char *label,
	    const char *found, char *err, size_t errlen);

	/* P's flag in words, for messages ("Unleash feature 'F' (...)"),
	 * into OUT. Never a secret. */
	void (*describe)(const struct plan *p, char *out, size_t outlen);

	/* P's flag as a new JSON object for the history ({"kind": name,
	 * ...}), or NULL when out of memory. Never a secret. */
	json_t *(*history)(const struct plan *p);
};

/* The provider named NAME, or NULL when there is none. */
const struct flag_provider *flag_provider_find(const char *name);


#endif
