/* move_entry: when a message waiting in an old queue may come out, and
 * the delay that keeps that moment when it is moved into the ladder. */
#include <stdio.h>
#include <string.h>

#include "move_entry.h"
#include "old_path.h"

static const char *const verdicts[] = {
	[MOVE_GO] = "moved",
	[MOVE_LEAVE_TOO_LONG] = "too_long",
	[MOVE_LEAVE_UNKNOWN] = "unknown_entry",
};

const char *
move_verdict_name(enum move_verdict v)
{
	return (unsigned)v < sizeof(verdicts) / sizeof(verdicts[0]) ? verdicts[v] : "?";
}

/* The entry time M gives under FROM, or -1 with WHY. */
static int64_t
entry_of(enum move_from from, const struct move_stamp *m, char *why, size_t whylen)
{
	char perr[200];
	int64_t ms;

	switch (from) {
	case MOVE_FROM_TIMESTAMP:
		if (!m->has_timestamp) {
			snprintf(why, whylen, "no timestamp property");
			return -1;
		}
		/* The property holds whole seconds: the message entered at
		 * some moment of that second, so its end is the one moment
		 * that can never be too early. */
		if (m->timestamp_s < (uint64_t)OLD_TIME_MIN_MS / 1000 ||
		    m->timestamp_s > (uint64_t)(INT64_MAX / 1000 - 1)) {
			snprintf(why, whylen, "timestamp %llu is not a time after 2000 in "
			    "seconds", (unsigned long long)m->timestamp_s);
			return -1;
		}
		return ((int64_t)m->timestamp_s + 1) * 1000;
	case MOVE_FROM_HEADER:
		if (!m->has_header) {
			snprintf(why, whylen, "no entry header");
			return -1;
		}
		if (m->header_is_int) {
			if (m->header_num < OLD_TIME_MIN_MS ||
			    m->header_num > INT64_MAX / 4) {
				snprintf(why, whylen, "entry header %lld is not epoch "
				    "milliseconds after 2000", (long long)m->header_num);
				return -1;
			}
			return m->header_num;
		}
		if (m->header_str == NULL) {
			snprintf(why, whylen, "entry header is neither a number nor text");
			return -1;
		}
		if (old_time_parse(m->header_str, &ms, perr, sizeof(perr)) != 0) {
			snprintf(why, whylen, "entry header: %s", perr);
			return -1;
		}
		return ms;
	case MOVE_FROM_ARRIVAL:
		if (!m->has_arrival) {
			snprintf(why, whylen, "no arrival stamp the broker overwrites");
			return -1;
		}
		if (m->arrival_ms < OLD_TIME_MIN_MS || m->arrival_ms > INT64_MAX / 4) {
			snprintf(why, whylen, "arrival stamp %lld is not epoch milliseconds "
			    "after 2000", (long long)m->arrival_ms);
			return -1;
		}
		return m->arrival_ms;
	case MOVE_FROM_DEATH:
		if (!m->has_death) {
			snprintf(why, whylen, "no x-death time");
			return -1;
		}
		if (m->death_count != 1) {
			snprintf(why, whylen, "x-death count %lld: the time is its first "
			    "death there", (long long)m->death_count);
			return -1;
		}
		if (m->death_s < OLD_TIME_MIN_MS / 1000 || m->death_s > INT64_MAX / 4000) {
			snprintf(why, whylen, "x-death time %lld is not a time after 2000 "
			    "in seconds", (long long)m->death_s);
			return -1;
		}
		/* Whole seconds, as the timestamp property: the end of it. */
		return (m->death_s + 1) * 1000;
	default:
		return -1;
	}
}

int
move_decide(const struct move_rule *r, const struct move_stamp *m, int64_t now_ms,
    struct move_decision *out)
{
	int64_t e, left, units;

	memset(out, 0, sizeof(*out));
	out->entry_ms = -1;
	if (r->unit_ms <= 0 || r->ttl_ms < 0 || r->ttl_ms > INT64_MAX / 4 ||
	    r->rest_ms < 0 || r->rest_ms > INT64_MAX / 4 ||
	    now_ms <= 0 || now_ms > INT64_MAX / 4) {
		snprintf(out->why, sizeof(out->why), "no usable rule (unit %lld ms, TTL "
		    "%lld ms)", (long long)r->unit_ms, (long long)r->ttl_ms);
		return -1;
	}
	e = r->from == MOVE_FROM_UNKNOWN ? -1 :
	    entry_of(r->from, m, out->why, sizeof(out->why));
	out->used = e >= 0 ? r->from : MOVE_FROM_UNKNOWN;
	if (e < 0 && r->from != MOVE_FROM_UNKNOWN && r->then != MOVE_FROM_UNKNOWN) {
		/* The second source, and both reasons when it fails too. */
		char first[sizeof(out->why)], second[sizeof(out->why)];

		snprintf(first, sizeof(first), "%s", out->why);
		second[0] = '\0';
		if ((e = entry_of(r->then, m, second, sizeof(second))) >= 0) {
			out->used = r->then;
			out->why[0] = '\0';
		} else
			snprintf(out->why, sizeof(out->why), "%.90s; %.90s", first, second);
	}
	out->entry_ms = e;
	if (e < 0) {
		/* It entered when it was first seen at the latest (an earlier
		 * look that took it and gave it back), else at NOW: that + TTL
		 * is never early, and up to TTL late. */
		int64_t by = m->seen_ms >= OLD_TIME_MIN_MS && m->seen_ms < now_ms ?
		    m->seen_ms : now_ms;

		out->not_before_ms = by + r->ttl_ms + r->rest_ms;
		if (r->ttl_ms > r->unknown_max_lateness_ms) {
			out->verdict = MOVE_LEAVE_UNKNOWN;
			if (out->why[0] == '\0')
				snprintf(out->why, sizeof(out->why), "entry time unknown");
			snprintf(out->why + strlen(out->why), sizeof(out->why) -
			    strlen(out->why), "; TTL %lld ms is over "
			    "unknown_entry_max_lateness %lld ms", (long long)r->ttl_ms,
			    (long long)r->unknown_max_lateness_ms);
			return 0;
		}
	} else
		out->not_before_ms = e + r->ttl_ms + r->rest_ms;
	left = out->not_before_ms - now_ms;
	/* Already due: the shortest path, never held back. */
	units = left <= 0 ? 0 : (left - 1) / r->unit_ms + 1;
	if (units > r->max_delay_ms / r->unit_ms) {
		out->verdict = MOVE_LEAVE_TOO_LONG;
		snprintf(out->why, sizeof(out->why), "remaining delay %lld ms is beyond "
		    "the ladder's largest, %lld ms", (long long)left,
		    (long long)r->max_delay_ms);
		return 0;
	}
	out->delay_ms = units * r->unit_ms;
	out->verdict = MOVE_GO;
	return 0;
}
