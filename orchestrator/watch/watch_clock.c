/* watch_clock: the watch's time — the step clock a tick reads, the
 * watch's age on the monotonic clock across ticks and reboots (struct
 * wclock, persisted as "clock"), and the probes' stamps on both clocks.
 * A leaf: it calls no other file of the watch (watch_int.h). */
#include "watch_int.h"

/* The step clock: C->now_ms when set (tests), else the real time, in epoch
 * milliseconds. It is the old-path library's (old_now_ms), which the
 * old-path steps read, so that the deadline the watch persists and the one
 * remove_old works out are on one clock; the watch's files read it only
 * here. */
int64_t
watch_clock_now(const struct step_ctx *c)
{
	return old_now_ms(c);
}

/* A new watch's age: not measured yet (the first tick takes it from the
 * wall clock). */
void
watch_clock_init(struct wclock *k)
{
	k->elapsed_ms = -1;
}

/* Brings W's monotonic age to this tick (wall clock WALL, monotonic MONO):
 * adds the monotonic time since the last tick to the watch's age. Across a
 * reboot (another boot id, or a clock behind the last tick's) monotonic
 * stamps mean nothing: the age grows by the wall clock's difference
 * instead (never by less than zero). Writes W->clock only. Returns whether
 * the last tick's monotonic stamps still hold; when false the caller has
 * every part rebase its own (watch_probe_rebase, watch_levels_rebase, the
 * next look at the level queues' places). */
bool
watch_clock_tick(struct wstate *w, int64_t wall, int64_t mono)
{
	struct wclock *k = &w->clock;
	char boot[sizeof(k->boot_id)];
	bool same;

	(void)clock_boot_id(boot, sizeof(boot));
	same = strcmp(k->boot_id, boot) == 0 && k->mono_last_ms > 0 &&
	    mono >= k->mono_last_ms;
	if (k->elapsed_ms < 0) {
		/* The first tick (or a state from before): the flip and the
		 * last entry are known only on the wall clock. */
		k->elapsed_ms = wall > w->flip_ms ? wall - w->flip_ms : 0;
		k->entry_elapsed_ms = w->last_old_entry_ms > w->flip_ms ?
		    w->last_old_entry_ms - w->flip_ms : 0;
	} else if (same)
		k->elapsed_ms += mono - k->mono_last_ms;
	else if (wall > w->last_tick_ms)
		k->elapsed_ms += wall - w->last_tick_ms;
	snprintf(k->boot_id, sizeof(k->boot_id), "%s", boot);
	k->mono_last_ms = mono;
	return same;
}

/* The last entry into the old path was seen this tick: its monotonic age
 * is the watch's now. */
void
watch_clock_entry(struct wclock *k)
{
	k->entry_elapsed_ms = k->elapsed_ms;
}

/* The integer members of the persisted "clock". */
static const struct jfield clock_fields[] = {
	JFIELD(struct wclock, mono_last_ms, "mono_last_ms", 0),
	JFIELD(struct wclock, elapsed_ms, "elapsed_ms", -1),
	JFIELD(struct wclock, entry_elapsed_ms, "entry_elapsed_ms", 0),
};

/* The persisted "clock" member: {"boot_id", "mono_last_ms", "elapsed_ms",
 * "entry_elapsed_ms"}, a new reference. */
json_t *
watch_clock_json(const struct wclock *k)
{
	json_t *j = json_pack("{s:s}", "boot_id", k->boot_id);

	if (j != NULL)
		jint_fields_put(j, k, clock_fields, JFIELDS_N(clock_fields));
	return j;
}

/* Reads the persisted "clock" member J (NULL: a state from before it was
 * kept, whose age is then taken from the wall clock at the next tick). */
void
watch_clock_load(struct wclock *k, const json_t *j)
{
	const char *boot = json_string_value(json_object_get(j, "boot_id"));

	snprintf(k->boot_id, sizeof(k->boot_id), "%s", boot ? boot : "");
	jint_fields(k, j, clock_fields, JFIELDS_N(clock_fields));
}

/* One probe's stamps, as persisted: {"seq", "sent_ms", "not_before_ms",
 * "sent_mono_ms", "not_before_mono_ms"}, a new reference. */
json_t *
watch_clock_stamp_json(const struct probe *p)
{
	return json_pack("{s:I,s:I,s:I,s:I,s:I}", "seq", (json_int_t)p->seq,
	    "sent_ms", (json_int_t)p->sent_ms, "not_before_ms",
	    (json_int_t)p->not_before_ms, "sent_mono_ms", (json_int_t)p->sent_mono,
	    "not_before_mono_ms", (json_int_t)p->not_before_mono);
}

/* Reads one probe's stamps O (watch_clock_stamp_json's form) into P. */
void
watch_clock_stamp_load(struct probe *p, const json_t *o)
{
	p->seq = jint(o, "seq", -1);
	p->sent_ms = jint(o, "sent_ms", 0);
	p->not_before_ms = jint(o, "not_before_ms", 0);
	p->sent_mono = jint(o, "sent_mono_ms", 0);
	p->not_before_mono = jint(o, "not_before_mono_ms", 0);
}

/* Moves P's monotonic stamps to this boot, from its wall-clock ones (WALL
 * and MONO: now). */
void
watch_clock_stamp_rebase(struct probe *p, int64_t wall, int64_t mono)
{
	p->sent_mono = mono + (p->sent_ms - wall);
	p->not_before_mono = mono + (p->not_before_ms - wall);
}

/* The last time the probe queue was seen empty, CHECKED on the last boot's
 * monotonic clock, moved to this boot's (WALL and MONO: now). It was seen
 * so during the last tick, which began at LAST_TICK_WALL: that moment on
 * this boot's clock, before the boot when the machine was down longer
 * than it has been up (a negative stamp, as the probes' own rebased
 * ones). PROBE_NEVER_CHECKED when it never was (CHECKED 0): the boot's
 * start (0) would stand for a look the watch never made, and date every
 * probe sent before the boot as arrived after it. */
int64_t
watch_clock_checked_rebase(int64_t checked, int64_t last_tick_wall, int64_t wall,
    int64_t mono)
{
	if (checked == 0 || checked == PROBE_NEVER_CHECKED || last_tick_wall <= 0)
		return PROBE_NEVER_CHECKED;
	return mono + (last_tick_wall - wall);
}

/* The bounds of probe P's lateness when read at OBS (monotonic): above
 * *LO, from the last time the probe queue was seen empty (CHECKED) or P's
 * sending when later, and at most *UP. */
void
watch_clock_lateness(int64_t checked, const struct probe *p, int64_t obs, int64_t *lo,
    int64_t *up)
{
	*lo = (checked > p->sent_mono ? checked : p->sent_mono) - p->not_before_mono;
	*up = obs - p->not_before_mono;
}
