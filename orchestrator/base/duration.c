/* duration: parse and print durations ("500ms", "1.2s", "12d") as whole milliseconds. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <inttypes.h>

#include "duration.h"
#include "errbuf.h"

#define EXPECTED "expected a number immediately followed by ms, s, m, h or d " \
	"(e.g. 500ms, 1.5s, 90s, 15m, 2h, 12d)"

/* Largest number of significant fraction digits that can still come to a
 * whole millisecond: no unit's millisecond count (at most 86400000 =
 * 2^10 x 3^3 x 5^5) has 2 or 5 as a factor more than 10 times, and a
 * fraction whose last digit is not 0 lacks one of those factors, so more
 * digits can never divide out. 18 also keeps 10^digits inside uint64. */
#define FRACTION_DIGITS_MAX 18

struct unit {
	const char *name;
	int64_t ms;
};

static const struct unit units[] = {	/* largest first, for duration_format */
	{ "d", 86400000 },
	{ "h", 3600000 },
	{ "m", 60000 },
	{ "s", 1000 },
	{ "ms", 1 },
};

static bool
isdigitc(char c)
{
	return c >= '0' && c <= '9';
}

static uint64_t
gcd(uint64_t a, uint64_t b)
{
	uint64_t t;

	while (b != 0) {
		t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/* Says in ERR that TEXT is above DURATION_MAX_MS. Returns -1. */
static int
too_large(const char *text, char *err, size_t errlen)
{
	char max[32];

	duration_format(DURATION_MAX_MS, max, sizeof(max));
	errbuf_set(err, errlen, "duration \"%s\" is too large; expected at most %s "
	    "(100 years)", text, max);
	return -1;
}

/* Checks TEXT's outline: not empty, no whitespace, no sign, a digit first.
 * Returns 0, or -1 with ERR. */
static int
check_outline(const char *text, char *err, size_t errlen)
{
	if (text == NULL || text[0] == '\0') {
		errbuf_set(err, errlen, "duration is empty; " EXPECTED);
		return -1;
	}
	for (const char *p = text; *p != '\0'; p++) {
		if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' ||
		    *p == '\v' || *p == '\f') {
			errbuf_set(err, errlen, "duration \"%s\" contains whitespace; "
			    EXPECTED ", with no spaces", text);
			return -1;
		}
	}
	if (text[0] == '-' || text[0] == '+') {
		errbuf_set(err, errlen, "duration \"%s\" has a sign; expected a "
		    "non-negative number without one (e.g. 90s)", text);
		return -1;
	}
	if (!isdigitc(text[0])) {
		errbuf_set(err, errlen, "duration \"%s\" does not start with a digit; "
		    EXPECTED, text);
		return -1;
	}
	return 0;
}

/* Reads TEXT's number: the whole part into *WHOLE, the fraction's digits
 * (trailing zeros dropped) as *FRAC and *FDIGITS (0: none), and points
 * *END after it. Returns 0, or -1 with ERR. */
static int
read_number(const char *text, uint64_t *whole, const char **frac, size_t *fdigits,
    const char **end, char *err, size_t errlen)
{
	const char *p;

	/* Whole part; anything above DURATION_MAX_MS is too large in any unit. */
	for (p = text; isdigitc(*p); p++) {
		*whole = *whole * 10 + (uint64_t)(*p - '0');
		if (*whole > (uint64_t)DURATION_MAX_MS)
			return too_large(text, err, errlen);
	}
	if (*p == '.') {
		p++;
		if (!isdigitc(*p)) {
			errbuf_set(err, errlen, "duration \"%s\" has no digits after '.'; "
			    EXPECTED, text);
			return -1;
		}
		*frac = p;
		while (isdigitc(*p))
			p++;
		*fdigits = (size_t)(p - *frac);
		while (*fdigits > 0 && (*frac)[*fdigits - 1] == '0')
			(*fdigits)--;	/* "1.50s" is "1.5s" */
	}
	*end = p;
	return 0;
}

/* Finds the unit UNITNAME (the rest of TEXT) into *U. Returns 0, or -1
 * with ERR. */
static int
find_unit(const char *text, const char *unitname, const struct unit **u, char *err,
    size_t errlen)
{
	if (*unitname == '\0') {
		errbuf_set(err, errlen, "duration \"%s\" has no unit; expected ms, s, m, "
		    "h or d right after the number", text);
		return -1;
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(unitname, units[i].name) == 0) {
			*u = &units[i];
			return 0;
		}
	}
	errbuf_set(err, errlen, "duration \"%s\" has unknown unit \"%s\"; "
	    "expected ms, s, m, h or d right after the number", text, unitname);
	return -1;
}

/* The FDIGITS digits FRAC, a fraction of unit U, as whole milliseconds
 * into *FRACMS. Fraction f / 10^n of a unit is f x unit / 10^n ms; it is
 * whole only if 10^n / gcd(unit, 10^n) divides f. Computed that way
 * nothing overflows: the result is below one unit. Returns 0, or -1 with
 * ERR (TEXT is not a whole number of milliseconds). */
static int
fraction_ms(const char *text, const char *frac, size_t fdigits, const struct unit *u,
    uint64_t *fracms, char *err, size_t errlen)
{
	uint64_t f = 0, pow10 = 1, g, den, mul;

	*fracms = 0;
	if (fdigits == 0)
		return 0;
	if (fdigits > FRACTION_DIGITS_MAX)
		goto notwhole;
	for (size_t i = 0; i < fdigits; i++) {
		f = f * 10 + (uint64_t)(frac[i] - '0');
		pow10 *= 10;
	}
	g = gcd((uint64_t)u->ms, pow10);
	den = pow10 / g;
	mul = (uint64_t)u->ms / g;
	if (f % den != 0)
		goto notwhole;
	*fracms = f / den * mul;
	return 0;
notwhole:
	errbuf_set(err, errlen, "duration \"%s\" is not a whole number of "
	    "milliseconds; expected a multiple of 1ms", text);
	return -1;
}

int
duration_parse(const char *text, int64_t *ms, char *err, size_t errlen)
{
	const char *frac = NULL, *unitname;
	const struct unit *u = NULL;
	uint64_t whole = 0, fracms;
	size_t fdigits = 0;

	if (check_outline(text, err, errlen) != 0 ||
	    read_number(text, &whole, &frac, &fdigits, &unitname, err, errlen) != 0 ||
	    find_unit(text, unitname, &u, err, errlen) != 0 ||
	    fraction_ms(text, frac, fdigits, u, &fracms, err, errlen) != 0)
		return -1;
	if (whole > ((uint64_t)DURATION_MAX_MS - fracms) / (uint64_t)u->ms)
		return too_large(text, err, errlen);
	if (ms != NULL)
		*ms = (int64_t)(whole * (uint64_t)u->ms + fracms);
	return 0;
}

char *
duration_format(int64_t ms, char *out, size_t outlen)
{
	const char *sign = "";
	uint64_t mag;
	size_t i;
	int n;

	if (out == NULL || outlen == 0)
		return out;
	if (ms == 0) {
		n = snprintf(out, outlen, "0s");
		goto done;
	}
	if (ms < 0) {
		sign = "-";
		mag = (uint64_t)(-(ms + 1)) + 1;	/* INT64_MIN has no positive twin */
	} else
		mag = (uint64_t)ms;
	/* Largest unit that divides exactly; the last one, ms, always does. */
	for (i = 0; i + 1 < sizeof(units) / sizeof(units[0]); i++)
		if (mag % (uint64_t)units[i].ms == 0)
			break;
	n = snprintf(out, outlen, "%s%" PRIu64 "%s", sign,
	    mag / (uint64_t)units[i].ms, units[i].name);
done:
	if (n < 0 || (size_t)n >= outlen)
		out[0] = '\0';
	return out;
}

char *
duration_describe(int64_t ms, char *out, size_t outlen)
{
	static const struct { const char *unit; int64_t ms; } parts[] = {
		{ "d", 86400000 }, { "h", 3600000 }, { "m", 60000 },
	};
	size_t o = 0;

	if (outlen == 0)
		return out;
	out[0] = '\0';
	if (ms < 1000) {
		snprintf(out, outlen, "%lldms", (long long)ms);
		return out;
	}
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		if (ms < parts[i].ms)
			continue;
		if (o < outlen)
			o += (size_t)snprintf(out + o, outlen - o, "%s%lld%s", o ? " " : "",
			    (long long)(ms / parts[i].ms), parts[i].unit);
		ms %= parts[i].ms;
	}
	if (ms > 0 && o < outlen) {
		if (ms % 1000 == 0)
			snprintf(out + o, outlen - o, "%s%llds", o ? " " : "",
			    (long long)(ms / 1000));
		else if (ms % 100 == 0)
			snprintf(out + o, outlen - o, "%s%lld.%llds", o ? " " : "",
			    (long long)(ms / 1000), (long long)(ms % 1000 / 100));
		else
			snprintf(out + o, outlen - o, "%s%lld.%03llds", o ? " " : "",
			    (long long)(ms / 1000), (long long)(ms % 1000));
	}
	return out;
}
