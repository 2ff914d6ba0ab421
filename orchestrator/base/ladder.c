/* ladder: levels, encoding, routing keys, object names and binding patterns of the delay ladder. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <inttypes.h>

#include "duration.h"
#include "errbuf.h"
#include "ladder.h"

/* Writes with snprintf; on truncation or failure leaves OUT empty rather
 * than holding a cut name that would address the wrong object. */
static char *putname(char *out, size_t outlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static char *
putname(char *out, size_t outlen, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (out == NULL || outlen == 0)
		return out;
	va_start(ap, fmt);
	n = vsnprintf(out, outlen, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= outlen)
		out[0] = '\0';
	return out;
}

static char *
emptyname(char *out, size_t outlen)
{
	if (out != NULL && outlen > 0)
		out[0] = '\0';
	return out;
}

/* 2^levels - 1; levels must be 1 .. LADDER_MAX_LEVELS. */
static uint64_t
units_max(int levels)
{
	return ((uint64_t)1 << levels) - 1;
}

/* A ladder whose fields ladder_init would accept (callers may build one by
 * hand, so every function re-checks what its arithmetic relies on). */
static bool
valid(const struct ladder *l)
{
	if (l == NULL || l->levels < 1 || l->levels > LADDER_MAX_LEVELS)
		return false;
	if (l->unit_ms <= 0)
		return false;
	if ((uint64_t)l->unit_ms > (uint64_t)INT64_MAX / units_max(l->levels))
		return false;
	return true;
}

static int
badladder(const struct ladder *l, char *err, size_t errlen)
{
	if (l == NULL)
		errbuf_set(err, errlen, "no ladder given");
	else
		errbuf_set(err, errlen, "ladder is not valid (levels %d, unit %" PRId64
		    "ms); expected one built by ladder_init", l->levels, l->unit_ms);
	return -1;
}

int
ladder_levels_for(uint64_t max_units)
{
	int bits = 0;

	while (max_units != 0) {
		bits++;
		max_units >>= 1;
	}
	if (bits == 0)
		bits = 1;
	if (bits > LADDER_MAX_LEVELS)
		return -1;
	return bits;
}

static bool
prefixchar(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '_' || c == '-';
}

static int
check_prefix(const struct ladder_style *style, const char *prefix, char *err,
    size_t errlen)
{
	size_t i, len, wordlen = 0;

	if (prefix == NULL || prefix[0] == '\0') {
		errbuf_set(err, errlen, "%s naming needs a prefix; expected 1 to %d "
		    "characters of [A-Za-z0-9_-] words separated by '.'",
		    style->name, LADDER_PREFIX_MAX);
		return -1;
	}
	len = strlen(prefix);
	if (len > LADDER_PREFIX_MAX) {
		errbuf_set(err, errlen, "prefix \"%.*s...\" is %zu characters long; "
		    "expected at most %d", 20, prefix, len, LADDER_PREFIX_MAX);
		return -1;
	}
	for (i = 0; i < len; i++) {
		if (prefix[i] == '.') {
			if (wordlen == 0)
				goto emptyword;
			wordlen = 0;
			continue;
		}
		if (!prefixchar(prefix[i])) {
			if (prefix[i] > ' ' && prefix[i] < 0x7f)
				errbuf_set(err, errlen, "prefix \"%s\" has '%c' at position "
				    "%zu; expected [A-Za-z0-9_-] words separated by '.'",
				    prefix, prefix[i], i + 1);
			else
				errbuf_set(err, errlen, "prefix \"%s\" has byte 0x%02x at "
				    "position %zu; expected [A-Za-z0-9_-] words separated "
				    "by '.'", prefix, (unsigned char)prefix[i], i + 1);
			return -1;
		}
		wordlen++;
	}
	if (wordlen == 0)
		goto emptyword;
	return 0;
emptyword:
	errbuf_set(err, errlen, "prefix \"%s\" has an empty word (leading, trailing or "
	    "doubled '.'); expected [A-Za-z0-9_-] words separated by '.'", prefix);
	return -1;
}

int
ladder_init(struct ladder *l, enum ladder_naming naming, const char *prefix,
    int64_t unit_ms, int levels, char *err, size_t errlen)
{
	const struct ladder_style *style = ladder_style(naming);
	char unit[32], names[128];

	if (l == NULL) {
		errbuf_set(err, errlen, "no ladder to fill");
		return -1;
	}
	if (style == NULL) {
		errbuf_set(err, errlen, "unknown naming style %d; expected %s", (int)naming,
		    ladder_naming_list(", ", " or ", names, sizeof(names)));
		return -1;
	}
	if (style->prefix == LADDER_PREFIX_OPTIONAL && (prefix == NULL || *prefix == '\0'))
		prefix = "";
	else if (style->prefix != LADDER_PREFIX_NONE &&
	    check_prefix(style, prefix, err, errlen) == -1)
		return -1;
	if (unit_ms <= 0) {
		errbuf_set(err, errlen, "ladder unit is %" PRId64 "ms; expected at "
		    "least 1ms", unit_ms);
		return -1;
	}
	if (levels < 1 || levels > LADDER_MAX_LEVELS) {
		errbuf_set(err, errlen, "ladder has %d levels; expected 1 to %d",
		    levels, LADDER_MAX_LEVELS);
		return -1;
	}
	/* The largest delay (2^L - 1) x unit bounds the largest level TTL
	 * 2^(L-1) x unit too, so one check covers both. */
	if ((uint64_t)unit_ms > (uint64_t)INT64_MAX / units_max(levels)) {
		errbuf_set(err, errlen, "a ladder of %d levels of %s reaches %" PRIu64
		    " units x %" PRId64 "ms, which overflows 64-bit milliseconds; "
		    "expected a unit of at most %" PRIu64 "ms for %d levels",
		    levels, duration_format(unit_ms, unit, sizeof(unit)),
		    units_max(levels), unit_ms,
		    (uint64_t)INT64_MAX / units_max(levels), levels);
		return -1;
	}
	memset(l, 0, sizeof(*l));
	l->naming = naming;
	if (style->prefix != LADDER_PREFIX_NONE)
		memcpy(l->prefix, prefix, strlen(prefix) + 1);
	l->unit_ms = unit_ms;
	l->levels = levels;
	return 0;
}

uint64_t
ladder_max_units(const struct ladder *l)
{
	if (!valid(l))
		return 0;
	return units_max(l->levels);
}

int64_t
ladder_max_delay_ms(const struct ladder *l)
{
	if (!valid(l))
		return -1;
	return (int64_t)units_max(l->levels) * l->unit_ms;
}

int
ladder_set_limit(struct ladder *l, int64_t limit_ms, char *err, size_t errlen)
{
	char a[32], b[32];

	if (!valid(l))
		return badladder(l, err, errlen);
	if (limit_ms < 1 || limit_ms > ladder_max_delay_ms(l)) {
		errbuf_set(err, errlen, "a limit of %s on a ladder that reaches %s; "
		    "expected 1ms to %s", duration_format(limit_ms, a, sizeof(a)),
		    duration_format(ladder_max_delay_ms(l), b, sizeof(b)), b);
		return -1;
	}
	l->limit_ms = limit_ms;
	return 0;
}

int64_t
ladder_limit_ms(const struct ladder *l)
{
	if (!valid(l))
		return -1;
	if (l->limit_ms > 0 && l->limit_ms < ladder_max_delay_ms(l))
		return l->limit_ms;
	return ladder_max_delay_ms(l);
}

int64_t
ladder_level_ttl_ms(const struct ladder *l, int k)
{
	if (!valid(l) || k < 0 || k >= l->levels)
		return -1;
	if (l->unit_ms > INT64_MAX >> k)
		return -1;
	return ((int64_t)1 << k) * l->unit_ms;
}

int
ladder_encode(const struct ladder *l, int64_t delay_ms, uint64_t *units,
    char *err, size_t errlen)
{
	char delay[32], max[32], unit[32];
	uint64_t n;

	if (!valid(l))
		return badladder(l, err, errlen);
	if (delay_ms < 0) {
		errbuf_set(err, errlen, "delay %" PRId64 "ms is negative; expected 0 "
		    "or more", delay_ms);
		return -1;
	}
	/* Ceiling without overflow: the quotient is at most delay_ms, so
	 * adding one for a remainder stays inside uint64. */
	n = (uint64_t)(delay_ms / l->unit_ms);
	if (delay_ms % l->unit_ms != 0)
		n++;
	if (n > units_max(l->levels)) {
		duration_format(delay_ms, delay, sizeof(delay));
		duration_format(ladder_max_delay_ms(l), max, sizeof(max));
		duration_format(l->unit_ms, unit, sizeof(unit));
		if (delay_ms % l->unit_ms != 0)
			errbuf_set(err, errlen, "delay %s rounds up to %" PRIu64 " units "
			    "of %s, beyond the ladder's maximum of %s (%d levels of %s)",
			    delay, n, unit, max, l->levels, unit);
		else
			errbuf_set(err, errlen, "delay %s is beyond the ladder's maximum "
			    "of %s (%d levels of %s)", delay, max, l->levels, unit);
		return -1;
	}
	if (delay_ms > ladder_limit_ms(l)) {
		errbuf_set(err, errlen, "delay %s is beyond max_delay %s (the ladder "
		    "itself reaches %s); expected at most %s",
		    duration_format(delay_ms, delay, sizeof(delay)),
		    duration_format(ladder_limit_ms(l), unit, sizeof(unit)),
		    duration_format(ladder_max_delay_ms(l), max, sizeof(max)), unit);
		return -1;
	}
	if (units != NULL)
		*units = n;
	return 0;
}

int
ladder_entry_level(uint64_t units)
{
	int k = -1;

	while (units != 0) {
		k++;
		units >>= 1;
	}
	return k;
}

int
ladder_check_destination(const struct ladder *l, const char *dest,
    char *err, size_t errlen)
{
	size_t i, len, keylen, wordlen = 0;

	if (!valid(l))
		return badladder(l, err, errlen);
	if (dest == NULL || dest[0] == '\0') {
		errbuf_set(err, errlen, "destination is empty; expected one or more "
		    "words separated by '.'");
		return -1;
	}
	len = strlen(dest);
	for (i = 0; i < len; i++) {
		if (dest[i] == '*' || dest[i] == '#') {
			errbuf_set(err, errlen, "destination \"%.64s%s\" has '%c' at byte "
			    "%zu; expected no wildcards ('*' or '#') in a destination",
			    dest, len > 64 ? "..." : "", dest[i], i + 1);
			return -1;
		}
		if (dest[i] == '.') {
			if (wordlen == 0)
				goto emptyword;
			wordlen = 0;
			continue;
		}
		wordlen++;
	}
	if (wordlen == 0)
		goto emptyword;
	keylen = 2 * (size_t)l->levels + len;
	if (keylen > LADDER_KEY_MAX) {
		errbuf_set(err, errlen, "destination \"%.32s...\" is %zu bytes, which "
		    "makes a %zu-byte routing key with %d level words; expected at "
		    "most %d bytes, so a destination of at most %zu bytes",
		    dest, len, keylen, l->levels, LADDER_KEY_MAX,
		    (size_t)LADDER_KEY_MAX - 2 * (size_t)l->levels);
		return -1;
	}
	return 0;
emptyword:
	errbuf_set(err, errlen, "destination \"%.64s%s\" has an empty word (leading, "
	    "trailing or doubled '.'); expected non-empty words separated by '.'",
	    dest, len > 64 ? "..." : "");
	return -1;
}

int
ladder_routing_key(const struct ladder *l, uint64_t units, const char *dest,
    char *out, size_t outlen, char *err, size_t errlen)
{
	size_t need, pos = 0;
	int k;

	if (!valid(l))
		return badladder(l, err, errlen);
	if (units > units_max(l->levels)) {
		errbuf_set(err, errlen, "%" PRIu64 " units do not fit %d levels; expected "
		    "at most %" PRIu64, units, l->levels, units_max(l->levels));
		return -1;
	}
	if (ladder_check_destination(l, dest, err, errlen) == -1)
		return -1;
	need = 2 * (size_t)l->levels + strlen(dest) + 1;
	if (out == NULL || outlen < need) {
		errbuf_set(err, errlen, "routing key needs %zu bytes; the buffer has %zu",
		    need, out == NULL ? (size_t)0 : outlen);
		return -1;
	}
	for (k = l->levels - 1; k >= 0; k--) {
		out[pos++] = (units >> k) & 1 ? '1' : '0';
		out[pos++] = '.';
	}
	memcpy(out + pos, dest, strlen(dest) + 1);
	return 0;
}

int
ladder_parse_key(const struct ladder *l, const char *key, uint64_t *units,
    char *dest, size_t destlen, char *err, size_t errlen)
{
	const char *p, *end;
	uint64_t n = 0;
	size_t keylen, wlen;
	int word;

	if (!valid(l))
		return badladder(l, err, errlen);
	if (key == NULL) {
		errbuf_set(err, errlen, "no routing key given");
		return -1;
	}
	keylen = strlen(key);
	if (keylen > LADDER_KEY_MAX) {
		errbuf_set(err, errlen, "routing key is %zu bytes; expected at most %d",
		    keylen, LADDER_KEY_MAX);
		return -1;
	}
	p = key;
	for (word = 1; word <= l->levels; word++) {
		end = strchr(p, '.');
		if (end == NULL) {
			errbuf_set(err, errlen, "routing key \"%s\" has too few words: "
			    "expected %d bit words then a destination", key, l->levels);
			return -1;
		}
		wlen = (size_t)(end - p);
		if (wlen != 1 || (p[0] != '0' && p[0] != '1')) {
			errbuf_set(err, errlen, "routing key \"%s\": word %d is \"%.*s\"; "
			    "expected \"0\" or \"1\"", key, word, (int)wlen, p);
			return -1;
		}
		n = n << 1 | (uint64_t)(p[0] - '0');
		p = end + 1;
	}
	if (*p == '\0') {
		errbuf_set(err, errlen, "routing key \"%s\" has no destination after "
		    "its %d bit words", key, l->levels);
		return -1;
	}
	if (ladder_check_destination(l, p, err, errlen) == -1)
		return -1;
	if (dest != NULL) {
		if (destlen < strlen(p) + 1) {
			errbuf_set(err, errlen, "destination of routing key \"%s\" needs "
			    "%zu bytes; the buffer has %zu", key, strlen(p) + 1, destlen);
			return -1;
		}
		memcpy(dest, p, strlen(p) + 1);
	}
	if (units != NULL)
		*units = n;
	return 0;
}

/* L's style, or NULL for a ladder that is not valid or has none. */
static const struct ladder_style *
style_of(const struct ladder *l)
{
	return valid(l) ? ladder_style(l->naming) : NULL;
}

/* Name STEM of L in STYLE (NULL: none): after the prefix and joiner for a
 * style that takes them, then K zero padded to the style's level digits
 * when K >= 0. Returns OUT, empty without a style. */
static char *
stylename(const struct ladder *l, const struct ladder_style *style,
    const char *stem, int k, char *out, size_t outlen)
{
	const char *prefix = "", *joiner = "";

	if (style == NULL)
		return emptyname(out, outlen);
	if (style->prefix != LADDER_PREFIX_NONE && l->prefix[0] != '\0') {
		prefix = l->prefix;
		joiner = style->joiner;
	}
	if (k < 0)
		return putname(out, outlen, "%s%s%s", prefix, joiner, stem);
	return putname(out, outlen, "%s%s%s%0*d", prefix, joiner, stem,
	    style->level_digits, k);
}

char *
ladder_level_exchange(const struct ladder *l, int k, char *out, size_t outlen)
{
	const struct ladder_style *style = style_of(l);

	if (style == NULL || k < 0 || k >= l->levels)
		return emptyname(out, outlen);
	return stylename(l, style, style->level, k, out, outlen);
}

/* Every style names a level's queue after its exchange. */
char *
ladder_level_queue(const struct ladder *l, int k, char *out, size_t outlen)
{
	return ladder_level_exchange(l, k, out, outlen);
}

char *
ladder_delivery_exchange(const struct ladder *l, char *out, size_t outlen)
{
	const struct ladder_style *style = style_of(l);

	return stylename(l, style, style != NULL ? style->delivery : "", -1,
	    out, outlen);
}

/* Kombu and NServiceBus have no parking path; their rows name one after
 * each library's pattern. */
char *
ladder_parking_exchange(const struct ladder *l, char *out, size_t outlen)
{
	const struct ladder_style *style = style_of(l);

	return stylename(l, style, style != NULL ? style->parking : "", -1,
	    out, outlen);
}

char *
ladder_parking_queue(const struct ladder *l, char *out, size_t outlen)
{
	return ladder_parking_exchange(l, out, outlen);
}

char *
ladder_entry_exchange(const struct ladder *l, uint64_t units, char *out, size_t outlen)
{
	int k;

	if (!valid(l) || units > units_max(l->levels))
		return emptyname(out, outlen);
	k = ladder_entry_level(units);
	if (k < 0)
		return ladder_delivery_exchange(l, out, outlen);
	return ladder_level_exchange(l, k, out, outlen);
}

char *
ladder_dead_letter_exchange(const struct ladder *l, int k, char *out, size_t outlen)
{
	if (!valid(l) || k < 0 || k >= l->levels)
		return emptyname(out, outlen);
	if (k == 0)
		return ladder_delivery_exchange(l, out, outlen);
	return ladder_level_exchange(l, k - 1, out, outlen);
}

/* WORD and "." x COUNT, then TAIL. */
static char *
words(const char *word, int count, const char *tail, char *out, size_t outlen)
{
	size_t need, pos = 0, wlen = strlen(word);
	int i;

	if (out == NULL || outlen == 0)
		return out;
	need = (wlen + 1) * (size_t)count + strlen(tail) + 1;
	if (outlen < need)
		return emptyname(out, outlen);
	for (i = 0; i < count; i++) {
		memcpy(out + pos, word, wlen);
		pos += wlen;
		out[pos++] = '.';
	}
	memcpy(out + pos, tail, strlen(tail) + 1);
	return out;
}

char *
ladder_wait_pattern(const struct ladder *l, int k, char *out, size_t outlen)
{
	if (!valid(l) || k < 0 || k >= l->levels)
		return emptyname(out, outlen);
	return words("*", l->levels - 1 - k, "1.#", out, outlen);
}

char *
ladder_bypass_pattern(const struct ladder *l, int k, char *out, size_t outlen)
{
	if (!valid(l) || k < 0 || k >= l->levels)
		return emptyname(out, outlen);
	return words("*", l->levels - 1 - k, "0.#", out, outlen);
}

char *
ladder_destination_pattern(const struct ladder *l, const char *dest, char *out, size_t outlen)
{
	const struct ladder_style *style = style_of(l);

	if (style == NULL || ladder_check_destination(l, dest, NULL, 0) == -1)
		return emptyname(out, outlen);
	return words(style->destination_word, l->levels, dest, out, outlen);
}
