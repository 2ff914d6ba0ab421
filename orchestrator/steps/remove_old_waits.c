/* remove_old_waits: the waits a queue of remove_old can be given, a row
 * each: the name its entry keeps, whether it runs a TTL or a baseline
 * window, and what its deadline is made of. Internal to remove_old. */
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "old_path.h"
#include "remove_old_int.h"

/* The waits, by kind: the name the step's state keeps, and whether the
 * wait runs one TTL (+ allowance) or one baseline window. */
static const struct wait_row {
	enum wait_kind kind;
	const char *name;
	bool ttl;
	const char *basis;	/* what its deadline is made of, with the
				 * wait's start */
} waits[] = {
	{ WAIT_DEADLINE, "deadline", false, "its deadline, as of" },
	{ WAIT_NEW, "new", true, "first seen by remove_old (it appeared after "
	    "the watch's last look), + TTL + allowance:" },
	{ WAIT_USED, "used", true, "a publish into it seen, + TTL + allowance:" },
	{ WAIT_HELD, "held", true, "messages found in it past its deadline, + TTL "
	    "+ allowance:" },
	{ WAIT_BASELINE, "baseline", false, "a fresh baseline of the publish "
	    "counters, + its window:" },
};

#define NWAITS (sizeof(waits) / sizeof(waits[0]))

/* The row of wait kind K, or NULL. */
static const struct wait_row *
wait_row(enum wait_kind k)
{
	for (size_t i = 0; i < NWAITS; i++)
		if (waits[i].kind == k)
			return &waits[i];
	return NULL;
}

const char *
rm_wait_name(enum wait_kind k)
{
	return wait_row(k) != NULL ? wait_row(k)->name : "none";
}

const char *
rm_wait_basis(enum wait_kind k)
{
	return wait_row(k) != NULL ? wait_row(k)->basis : "";
}

bool
rm_wait_runs_ttl(enum wait_kind k)
{
	return wait_row(k) != NULL && wait_row(k)->ttl;
}

enum wait_kind
rm_wait_of(const char *name)
{
	for (size_t i = 0; name != NULL && i < NWAITS; i++)
		if (strcmp(waits[i].name, name) == 0)
			return waits[i].kind;
	return WAIT_NONE;
}
