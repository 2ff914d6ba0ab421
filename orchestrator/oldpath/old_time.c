/* old_time: the old path's times: the step's clock, a queue's deadline
 * and the whole path's horizon (with the rule for when move_old's horizon
 * stands), and epoch milliseconds to and from RFC 3339 UTC (old_path.h). */
#define _XOPEN_SOURCE 700	/* strptime */
#define _DEFAULT_SOURCE		/* timegm */
#include <sys/types.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "old_path.h"

int64_t
old_now_ms(const struct step_ctx *c)
{
	if (c != NULL && c->now_ms != 0)
		return c->now_ms;
	return clock_now_ms();
}

int64_t
old_deadline_ms(int64_t last_entry_ms, int64_t ttl_ms, int64_t allowance_ms)
{
	if (last_entry_ms <= 0 || ttl_ms < 0)
		return -1;
	return last_entry_ms + ttl_ms + (allowance_ms > 0 ? allowance_ms : 0);
}

bool
old_moved_stands(const json_t *moved, int64_t last_entry_ms)
{
	const json_t *h = json_object_get(moved, "horizon_ms");
	const json_t *at = json_object_get(moved, "pass_started_ms");

	return json_is_true(json_object_get(moved, "ok")) && json_is_integer(h) &&
	    json_integer_value(h) > 0 && json_is_integer(at) &&
	    json_integer_value(at) > 0 && last_entry_ms <= json_integer_value(at);
}

int64_t
old_horizon_ms(const json_t *measured, int64_t last_entry_ms, int64_t allowance_ms)
{
	const json_t *ttl = json_object_get(json_object_get(measured, "summary"),
	    "max_ttl_ms");

	/* measure_horizon's largest TTL (a chain's where longer), null when
	 * a queue has none. */
	return old_deadline_ms(last_entry_ms, json_is_integer(ttl) ? json_integer_value(ttl) :
	    -1, allowance_ms);
}

char *
old_time_format(int64_t ms, char *out, size_t outlen)
{
	char date[32];
	time_t secs;
	struct tm tm;
	int64_t frac;

	frac = ms % 1000;
	if (frac < 0)
		frac += 1000;
	secs = (time_t)((ms - frac) / 1000);
	if (gmtime_r(&secs, &tm) == NULL ||
	    strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm) == 0) {
		snprintf(out, outlen, "%lld ms", (long long)ms);
		return out;
	}
	if (frac != 0)
		snprintf(out, outlen, "%s.%03dZ", date, (int)frac);
	else
		snprintf(out, outlen, "%sZ", date);
	return out;
}

/* RFC 3339's date and time without fraction or offset, as old_time_parse
 * takes it: 'd' a digit, 'T' either case of the letter, the rest itself. */
static const char stamp_shape[] = "dddd-dd-ddTdd:dd:dd";

/* Whether the first bytes of P have stamp_shape (strptime alone would take
 * fewer digits, spaces and signs). */
static bool
has_stamp_shape(const char *p)
{
	for (size_t i = 0; stamp_shape[i] != '\0'; i++) {
		char c = p[i], want = stamp_shape[i];

		if (want == 'd' ? (c < '0' || c > '9') :
		    want == 'T' ? (c != 'T' && c != 't') : c != want)
			return false;
	}
	return true;
}

int
old_time_parse(const char *text, int64_t *ms, char *err, size_t errlen)
{
	char stamp[sizeof(stamp_shape)], when[40];
	const char *p;
	struct tm tm, back;
	time_t secs;
	int frac = 0, nfrac = 0;
	int64_t v;
	size_t i;

	if (text == NULL || *text == '\0')
		goto bad;
	for (i = 0; text[i] >= '0' && text[i] <= '9'; i++)
		;
	if (text[i] == '\0') {
		if (i > 15)		/* past year 33658: not a time */
			goto bad;
		v = strtoll(text, NULL, 10);
		if (v <= 0)
			goto bad;
		if (v < OLD_TIME_MIN_MS) {
			snprintf(err, errlen, "'%s' is %s as epoch milliseconds, before "
			    "2000: an epoch in seconds? expected milliseconds (e.g. "
			    "%s000)", text, old_time_format(v, when, sizeof(when)), text);
			return -1;
		}
		*ms = v;
		return 0;
	}
	if (!has_stamp_shape(text))
		goto bad;
	memcpy(stamp, text, sizeof(stamp) - 1);
	stamp[sizeof(stamp) - 1] = '\0';
	stamp[10] = 'T';
	memset(&tm, 0, sizeof(tm));
	p = strptime(stamp, "%Y-%m-%dT%H:%M:%S", &tm);
	if (p == NULL || *p != '\0' || tm.tm_year < 70)
		goto bad;
	p = text + sizeof(stamp) - 1;
	if (*p == '.') {
		p++;
		while (*p >= '0' && *p <= '9') {
			if (nfrac == 3)
				goto bad;	/* finer than a millisecond */
			frac = frac * 10 + (*p++ - '0');
			nfrac++;
		}
		if (nfrac == 0)
			goto bad;
		while (nfrac++ < 3)
			frac *= 10;
	}
	if ((*p != 'Z' && *p != 'z') || p[1] != '\0')
		goto bad;
	/* timegm carries a day, hour or second past its range into the next
	 * (February 30th is March 2nd, 23:59:60 is the next minute): a time
	 * that does not come back as written is refused. */
	back = tm;
	secs = timegm(&back);
	if (secs == (time_t)-1 || back.tm_year != tm.tm_year ||
	    back.tm_mon != tm.tm_mon || back.tm_mday != tm.tm_mday ||
	    back.tm_hour != tm.tm_hour || back.tm_min != tm.tm_min ||
	    back.tm_sec != tm.tm_sec)
		goto bad;
	v = (int64_t)secs * 1000 + frac;
	if (v < OLD_TIME_MIN_MS) {
		snprintf(err, errlen, "'%.80s' is before 2000: no message entered "
		    "the old path then, and every deadline from it is long past", text);
		return -1;
	}
	*ms = v;
	return 0;
bad:
	snprintf(err, errlen, "'%.80s' is not a time: expected epoch milliseconds "
	    "(e.g. 1795003200000) or RFC 3339 UTC (e.g. 2026-11-30T12:00:00Z)",
	    text ? text : "");
	return -1;
}
