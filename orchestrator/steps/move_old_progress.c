/* move_old_progress: how far move_old's pass has come, for the page and
 * /metrics: the messages it has still to take from the old queues, how
 * fast it takes them in this run, and when at that pace it will have
 * taken them all.
 *
 * The count starts from the old queues' depths in the listing the pass
 * began with and is corrected by every basic.get, which says exactly how
 * many messages its queue still holds ready; a queue whose pass is over
 * (emptied, skipped, or ended at the held limit) counts no more. The pace
 * is this run's (a resumed run starts its own), messages taken per second
 * whether they moved or stayed, since every one of them must be taken. */
#include <stdlib.h>

#include "clock.h"
#include "move_old_int.h"

void
move_old__progress_start(struct move_progress *pg)
{
	pg->remaining = 0;
	pg->taken = 0;
	pg->t0_mono = clock_mono_ms();
}

void
move_old__progress_queue(struct move_progress *pg, int64_t *had, int64_t now_holds)
{
	if (now_holds < 0)
		now_holds = 0;
	pg->remaining += now_holds - *had;
	if (pg->remaining < 0)
		pg->remaining = 0;
	*had = now_holds;
}

void
move_old__progress_write(const struct move_progress *pg, json_t *state)
{
	int64_t ms = clock_mono_ms() - pg->t0_mono;
	double per_s = ms > 0 ? (double)pg->taken * 1000.0 / (double)ms : 0.0;
	json_t *o = json_object();

	if (o == NULL)
		return;
	json_object_set_new(o, "remaining", json_integer(pg->remaining));
	json_object_set_new(o, "taken", json_integer(pg->taken));
	json_object_set_new(o, "per_s", json_real(per_s));
	/* Only a pace measured over some messages says anything. */
	json_object_set_new(o, "eta_ms", pg->remaining == 0 ? json_integer(0) :
	    pg->taken > 0 && per_s > 0 ? json_integer((json_int_t)((double)pg->remaining *
	    1000.0 / per_s)) : json_null());
	json_object_set_new(o, "updated_ms", json_integer(clock_now_ms()));
	json_object_set_new(state, "progress", o);
}
