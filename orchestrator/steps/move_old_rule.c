/* move_old_rule: which of the plan's move_old.entry rules governs an old
 * queue (how its messages' entry time is read). */
#include <stdbool.h>

#include "errbuf.h"
#include "move_old_int.h"
#include "pattern.h"

int
move_old__entry_for(const struct plan *p, const char *name, char *err, size_t errlen)
{
	char why[256];

	for (size_t i = 0; i < p->move_old.nentries; i++) {
		struct pattern *re = NULL;
		bool m;
		int r;

		if (pattern_compile(p->move_old.entries[i].match, &re, why,
		    sizeof(why)) != 0) {
			errbuf_set(err, errlen, "move_old.entry[%zu].queues.match: %s", i, why);
			return -2;
		}
		r = pattern_match(re, name, &m, why, sizeof(why));
		pattern_free(re);
		if (r < 0) {
			errbuf_set(err, errlen, "move_old.entry[%zu].queues.match cannot decide "
			    "for queue '%s' (%s)", i, name, why);
			return -2;
		}
		if (m)
			return (int)i;
	}
	return -1;
}

bool
move_old__uses_arrival(const struct plan *p)
{
	for (size_t i = 0; i < p->move_old.nentries; i++)
		if (p->move_old.entries[i].from == MOVE_FROM_ARRIVAL ||
		    p->move_old.entries[i].then == MOVE_FROM_ARRIVAL)
			return true;
	return false;
}
