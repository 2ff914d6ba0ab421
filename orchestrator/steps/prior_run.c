/* prior_run: before a plan's first measurement, whether the broker and
 * the flag service show an earlier run of this plan that the database
 * holds no record of: its flag reads on beside its ladder, its ladder's
 * levels hold messages, or fences of its name are set. That is what a database lost
 * under a plan that had flipped looks like (the file removed, a fresh one
 * started in its place); starting again from an empty record would drop
 * the history of the flip and leave the operator unaware. Refused unless
 * the plan was submitted as new (--new, ?new=1), this database holds an
 * earlier plan of the same name (then the record of that run is here), or
 * it was restored from a backup (then the run is this plan's own, gone on
 * after the backup: the flip reads the flag before any switch). */
#include <stdio.h>
#include <string.h>

#include "errbuf.h"
#include "flag.h"
#include "ladder.h"
#include "old_path.h"
#include "sentences.h"
#include "step.h"
#include "store_admit.h"

/* Adds to S (SLEN bytes) what the ladder's level queues hold (none:
 * nothing); *EXIST gets how many of them exist. Each level is read by a
 * passive declare (exact, current), not from a listing of the vhost:
 * where the old path's thousands of queues share it, a listing would
 * cost measure_horizon as much again as its own. Returns 0, or -1 with
 * ERR when a level could not be read. */
static int
levels_holding(struct step_ctx *c, char *s, size_t slen, int *exist, char *err,
    size_t errlen)
{
	const struct ladder *l = &c->plan->ladder;
	struct broker_queue_info qi;
	int64_t total = 0;
	int held = 0, r;
	char name[LADDER_NAME_MAX], why[512];

	*exist = 0;
	for (int k = 0; k < l->levels; k++) {
		ladder_level_queue(l, k, name, sizeof(name));
		r = broker_queue_inspect(c->amqp, name, &qi, why, sizeof(why));
		if (r == BROKER_NOT_FOUND)
			continue;
		if (r != 0) {
			errbuf_set(err, errlen, "reading level queue '%s': %s", name, why);
			return -1;
		}
		(*exist)++;
		if (qi.messages > 0) {
			total += qi.messages;
			held++;
		}
	}
	if (held > 0)
		sentences_add(s, slen, "%d of its ladder's %d level queues hold %lld messages "
		    "(producers publish into the ladder)", held, l->levels, (long long)total);
	return 0;
}

/* Adds to S the fences of plan NAME that are set. Returns 0, or -1. */
static int
fences_set(struct step_ctx *c, char *s, size_t slen, char *err, size_t errlen)
{
	struct mgmt_policy_list pl = { 0 };
	char prefix[128];
	size_t n = 0;

	snprintf(prefix, sizeof(prefix), "%s%s=", OLD_FENCE_PREFIX, c->plan->name);
	if (mgmt_list_policies(c->old_mgmt, &pl, err, errlen) != 0)
		return -1;
	for (size_t i = 0; i < pl.n; i++)
		n += strncmp(pl.v[i].name, prefix, strlen(prefix)) == 0;
	mgmt_policy_list_free(&pl);
	if (n > 0)
		sentences_add(s, slen, "%zu fence policies named '%s...' are set (remove_old "
		    "had begun)", n, prefix);
	return 0;
}

int
step_prior_run(struct step_ctx *c, char *err, size_t errlen)
{
	bool is_new, earlier;
	char why[800], desc[400], found[1500] = "";
	int exist = 0;

	if (c->store == NULL)
		return 0;	/* by hand: no database to hold a record */
	if (store_plan_origin(c->store, c->plan_id, &is_new, &earlier, err, errlen) != 0)
		return -1;
	if (is_new || earlier)
		return 0;
	if (step_restored(c, err, errlen) != 0)
		return -1;
	if (c->restored_ms > 0)
		return 0;
	if (levels_holding(c, found, sizeof(found), &exist, err, errlen) != 0 ||
	    fences_set(c, found, sizeof(found), err, errlen) != 0)
		return -1;
	/* A flag that reads on is a run's mark only beside its ladder: a
	 * flip is made on a verified ladder, and an abort turns the flag
	 * off. On without one, no run of this plan flipped it (a flag
	 * shared with something else, or turned on by hand): nothing to
	 * resume, and the flip will read it back as it is. */
	if (exist > 0 && flag_configured(c->plan) &&
	    step_flag_check(c->plan, why, sizeof(why)) == STEP_FLAG_ON)
		sentences_add(found, sizeof(found), "its flag %s reads on beside its "
		    "ladder (%d of %d level queues exist)", step_flag_describe(c->plan,
		    desc, sizeof(desc)), exist, c->plan->ladder.levels);
	if (found[0] == '\0')
		return 0;
	errbuf_set(err, errlen, "plan '%s' has no earlier record in this database, yet the "
	    "broker and the flag service show a run of it: %s. Its database may have been "
	    "lost: to resume that run, restore the database it ran from and run cutover "
	    "on it; to start this plan anew on purpose, abort and archive it (cutover "
	    "abort, cutover archive) and submit it again with --new (cutover run --new, "
	    "cutover submit --new, POST /api/plans?new=1)", c->plan->name, found);
	return -1;
}
