/* alert_kinds: the alert kinds' table (alert_kinds.def) made into rows,
 * and the look-ups every side uses (alert_kinds.h). */
#include <stdio.h>
#include <string.h>

#include "alert_kinds.h"

static const struct alert_kind kinds[] = {
#define X(NAME, CLOSES, MEANS, CHECK, CLEAR) { #NAME, CLOSES, MEANS, CHECK, CLEAR },
#include "alert_kinds.def"
#undef X
};

#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

const struct alert_kind *
alert_kind_find(const char *name)
{
	for (size_t i = 0; name != NULL && i < NKINDS; i++)
		if (strcmp(kinds[i].name, name) == 0)
			return &kinds[i];
	return NULL;
}

const struct alert_kind *
alert_kind_at(size_t i)
{
	return i < NKINDS ? &kinds[i] : NULL;
}

bool
alert_kind_tracks_cause(const char *name)
{
	const struct alert_kind *k = alert_kind_find(name);

	return k != NULL && k->closes != ALERT_CLOSES_NEVER;
}

/* What each value of enum alert_closes says, in its order. */
static const char *const closes_text[] = {
	[ALERT_CLOSES_NEVER] = "a person acknowledges it once understood; the engine "
	    "does not close it",
	[ALERT_CLOSES_SELF] = "the engine closes it by itself once it sees the cause "
	    "gone (alert.acked by the engine, with the reason)",
	[ALERT_CLOSES_FOLLOWED] = "a person acknowledges it; the engine follows its "
	    "cause: acknowledged while the cause is still there, it returns at the "
	    "watch's next look, saying so, until the cause is cleared; once the cause "
	    "is gone it says so (alert.cause_gone in the history, cause_present false) "
	    "and waits for an acknowledgement",
};

const char *
alert_closes_text(enum alert_closes closes)
{
	return (size_t)closes < sizeof(closes_text) / sizeof(closes_text[0]) ?
	    closes_text[closes] : "";
}

char *
alert_still_there(const struct alert_kind *k, long long id, char *buf, size_t len)
{
	snprintf(buf, len, "the cause of alert %lld (%s) is still there: acknowledged, "
	    "it returns while the engine still sees it, until the cause is cleared "
	    "(%s); %s", id, k->name, k->clear, k->closes == ALERT_CLOSES_SELF ?
	    "then it closes by itself" : "once it is cleared, acknowledge the alert "
	    "that returned");
	return buf;
}
