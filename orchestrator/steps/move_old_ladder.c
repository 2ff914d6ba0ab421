/* move_old_ladder: what move_old needs to know of an old path that is a
 * delay ladder (old.ladder): what a message in one of its levels still
 * owes, where its key sends it, and that every destination the old
 * ladder delivers to is one the new ladder has. */
#include <stdio.h>
#include <string.h>

#include "errbuf.h"
#include "ladder.h"
#include "move_old_int.h"
#include "sentences.h"

int
move_old__level_key(const struct plan *p, int level, const char *key, int64_t *rest_ms,
    char *why, size_t whylen)
{
	char dest[LADDER_KEY_MAX + 1], err[256];
	uint64_t units;

	*rest_ms = 0;
	if (ladder_parse_key(&p->old.ladder, key != NULL ? key : "", &units, dest,
	    sizeof(dest), err, sizeof(err)) != 0) {
		snprintf(why, whylen, "routing key '%.200s' is no key of old.ladder: %s",
		    key != NULL ? key : "", err);
		return -1;
	}
	*rest_ms = (int64_t)(units & (((uint64_t)1 << level) - 1)) *
	    p->old.ladder.unit_ms;
	for (size_t i = 0; i < p->ndestinations; i++)
		if (strcmp(p->destinations[i], dest) == 0)
			return (int)i;
	snprintf(why, whylen, "its destination '%.200s' is not in ladder.destinations",
	    dest);
	return -1;
}


/* The destination whose binding on the old ladder's delivery exchange has
 * KEY, by the old ladder's naming: its index among P's destinations, or
 * -1. */
static int
dest_of_binding(const struct plan *p, const char *key)
{
	char want[LADDER_KEY_MAX + 1];

	for (size_t i = 0; i < p->ndestinations; i++)
		if (strcmp(ladder_destination_pattern(&p->old.ladder, p->destinations[i],
		    want, sizeof(want)), key) == 0)
			return (int)i;
	return -1;
}

int
move_old__ladder_dests(struct step_ctx *c, char *err, size_t errlen)
{
	const struct plan *p = c->plan;
	struct mgmt_binding_list bl = { 0 };
	char x[LADDER_NAME_MAX], why[768];
	int r, rc = -1;

	ladder_delivery_exchange(&p->old.ladder, x, sizeof(x));
	r = mgmt_list_bindings_from(c->old_mgmt, x, &bl, why, sizeof(why));
	if (r == MGMT_NOT_FOUND)
		return 0;	/* it delivers nowhere: each key is judged alone */
	if (r != 0) {
		errbuf_set(err, errlen, "reading the bindings of old.ladder's delivery "
		    "exchange '%s': %s", x, why);
		return -1;
	}
	err[0] = '\0';
	for (size_t i = 0; i < bl.n; i++) {
		const struct mgmt_binding *b = &bl.v[i];
		const char *key = b->routing_key != NULL ? b->routing_key : "";

		/* cutover's own probe, canary and statistics queues come and
		 * go with the plans that made them: none is a destination. */
		if (b->destination == NULL || strncmp(b->destination, "cutover.", 8) == 0 ||
		    dest_of_binding(p, key) >= 0)
			continue;
		sentences_add(err, errlen, "old.ladder's delivery exchange '%s' delivers "
		    "to %s '%s' (binding key '%s'), which no destination of "
		    "ladder.destinations is: its messages would have nowhere to go in "
		    "the new ladder; add that destination to ladder.destinations (%s) "
		    "and run again", x, b->destination_type == MGMT_DEST_QUEUE ? "queue" :
		    "exchange", b->destination, key, p->has_target ? "it must exist on "
		    "the target broker" : "it must exist");
	}
	rc = err[0] == '\0' ? 0 : -1;
	mgmt_binding_list_free(&bl);
	return rc;
}
