/* test_ladder: the ladder's arithmetic, names and patterns, and a routing model proving every delay arrives. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "ladder.h"

static void
mkladder(struct ladder *l, enum ladder_naming naming, const char *prefix,
    int64_t unit_ms, int levels)
{
	char err[256] = "";

	if (ladder_init(l, naming, prefix, unit_ms, levels, err, sizeof(err)) != 0)
		fail_msg("ladder_init: %s", err);
}

/* ---- An AMQP topic matcher, written independently of the ladder. ---- */

/* Length of the word starting at S. */
static size_t
wlen(const char *s)
{
	return strcspn(s, ".");
}

/* The word after the one at S, or NULL when S holds the last word. */
static const char *
wnext(const char *s)
{
	s += wlen(s);
	return *s == '.' ? s + 1 : NULL;
}

static int
isword(const char *s, const char *w)
{
	return wlen(s) == strlen(w) && memcmp(s, w, strlen(w)) == 0;
}

/* P and K point at their next word, NULL when no words are left. '*' is
 * exactly one word, '#' zero or more, anywhere in the pattern. */
static int
topic_words(const char *p, const char *k)
{
	if (p == NULL)
		return k == NULL;
	if (isword(p, "#")) {
		if (topic_words(wnext(p), k))
			return 1;
		return k != NULL && topic_words(p, wnext(k));
	}
	if (k == NULL)
		return 0;
	if (!isword(p, "*") && (wlen(p) != wlen(k) || memcmp(p, k, wlen(p)) != 0))
		return 0;
	return topic_words(wnext(p), wnext(k));
}

static int
topic_match(const char *pattern, const char *key)
{
	return topic_words(pattern, key);
}

static void
test_topic_matcher(void **state)
{
	(void)state;
	assert_true(topic_match("#", "a"));
	assert_true(topic_match("#", "a.b.c"));
	assert_true(topic_match("#", ""));
	assert_true(topic_match("*", "a"));
	assert_false(topic_match("*", "a.b"));
	assert_true(topic_match("a.b", "a.b"));
	assert_false(topic_match("a.b", "a.bb"));
	assert_false(topic_match("a.b", "a"));
	assert_false(topic_match("a", "a.b"));
	assert_true(topic_match("a.#", "a"));
	assert_true(topic_match("a.#", "a.b.c"));
	assert_false(topic_match("a.#", "b.a"));
	assert_true(topic_match("#.a", "a"));
	assert_true(topic_match("#.a", "x.y.a"));
	assert_false(topic_match("#.a", "a.x"));
	assert_true(topic_match("a.#.b", "a.b"));
	assert_true(topic_match("a.#.b", "a.x.b"));
	assert_true(topic_match("a.#.b", "a.x.y.b"));
	assert_true(topic_match("a.#.b", "a.b.b"));
	assert_false(topic_match("a.#.b", "a.x.c"));
	assert_false(topic_match("a.#.b", "a"));
	assert_false(topic_match("a.*.b", "a.b"));
	assert_true(topic_match("a.*.b", "a.x.b"));
	assert_true(topic_match("#.#", "a"));
	assert_false(topic_match("*.*", "a"));
	assert_true(topic_match("*.1.#", "0.1"));
	assert_true(topic_match("*.1.#", "0.1.x.y"));
	assert_false(topic_match("*.1.#", "1.0.x"));
	assert_false(topic_match("*.1.#", "1"));
	assert_true(topic_match("*.*.email", "0.1.email"));
	assert_false(topic_match("*.*.email", "0.1.x.email"));
}

/* ---- A model of the declared topology, built only from ladder_ functions. ---- */

#define MODEL_MAX 96
#define WAITS_MAX 64

struct mbinding {
	char source[LADDER_NAME_MAX];
	char pattern[LADDER_NAME_MAX];
	char target[LADDER_NAME_MAX];
	int toqueue;
};

struct mexchange {
	char name[LADDER_NAME_MAX];
	int fanout;
	char alternate[LADDER_NAME_MAX];	/* "" for none */
	int level;				/* -1 unless a level exchange */
};

struct mqueue {
	char name[LADDER_NAME_MAX];
	int64_t ttl_ms;				/* -1 for none */
	char dlx[LADDER_NAME_MAX];		/* "" for none */
	int level;				/* -1 unless a level queue */
};

struct model {
	struct mexchange ex[MODEL_MAX];
	int nex;
	struct mbinding b[MODEL_MAX];
	int nb;
	struct mqueue q[MODEL_MAX];
	int nq;
};

struct trace {
	int waits[WAITS_MAX];		/* levels waited in, in order */
	int nwaits;
	int64_t slept_ms;
	int finals;			/* queues the message rested in for good */
	char final[LADDER_NAME_MAX];
	int hops;
};

static void
addex(struct model *m, const char *name, int fanout, const char *alternate, int level)
{
	struct mexchange *e;

	assert_true(m->nex < MODEL_MAX);
	assert_true(name[0] != '\0');
	e = &m->ex[m->nex++];
	snprintf(e->name, sizeof(e->name), "%s", name);
	e->fanout = fanout;
	snprintf(e->alternate, sizeof(e->alternate), "%s", alternate);
	e->level = level;
}

static void
addq(struct model *m, const char *name, int64_t ttl_ms, const char *dlx, int level)
{
	struct mqueue *q;

	assert_true(m->nq < MODEL_MAX);
	assert_true(name[0] != '\0');
	q = &m->q[m->nq++];
	snprintf(q->name, sizeof(q->name), "%s", name);
	q->ttl_ms = ttl_ms;
	snprintf(q->dlx, sizeof(q->dlx), "%s", dlx);
	q->level = level;
}

static void
addb(struct model *m, const char *source, const char *pattern, const char *target,
    int toqueue)
{
	struct mbinding *b;

	assert_true(m->nb < MODEL_MAX);
	assert_true(source[0] != '\0' && target[0] != '\0');
	b = &m->b[m->nb++];
	snprintf(b->source, sizeof(b->source), "%s", source);
	snprintf(b->pattern, sizeof(b->pattern), "%s", pattern);
	snprintf(b->target, sizeof(b->target), "%s", target);
	b->toqueue = toqueue;
}

static struct model *
build_model(const struct ladder *l, const char **dests, int ndests)
{
	char name[LADDER_NAME_MAX], other[LADDER_NAME_MAX], pat[LADDER_NAME_MAX];
	char delivery[LADDER_NAME_MAX], parking[LADDER_NAME_MAX];
	struct model *m;
	int k, i;

	m = calloc(1, sizeof(*m));
	assert_non_null(m);
	ladder_delivery_exchange(l, delivery, sizeof(delivery));
	ladder_parking_exchange(l, parking, sizeof(parking));
	for (k = 0; k < l->levels; k++) {
		ladder_level_exchange(l, k, name, sizeof(name));
		addex(m, name, 0, "", k);
		ladder_level_queue(l, k, other, sizeof(other));
		addq(m, other, ladder_level_ttl_ms(l, k),
		    ladder_dead_letter_exchange(l, k, pat, sizeof(pat)), k);
		addb(m, name, ladder_wait_pattern(l, k, pat, sizeof(pat)), other, 1);
		addb(m, name, ladder_bypass_pattern(l, k, pat, sizeof(pat)),
		    ladder_dead_letter_exchange(l, k, other, sizeof(other)), 0);
	}
	addex(m, delivery, 0, parking, -1);
	for (i = 0; i < ndests; i++) {
		addq(m, dests[i], -1, "", -1);
		addb(m, delivery, ladder_destination_pattern(l, dests[i], pat,
		    sizeof(pat)), dests[i], 1);
	}
	addex(m, parking, 1, "", -1);
	addq(m, ladder_parking_queue(l, name, sizeof(name)), -1, "", -1);
	addb(m, parking, "", name, 1);
	return m;
}

static const struct mexchange *
findex(const struct model *m, const char *name)
{
	int i;

	for (i = 0; i < m->nex; i++)
		if (strcmp(m->ex[i].name, name) == 0)
			return &m->ex[i];
	fail_msg("exchange \"%s\" is not declared", name);
	return NULL;
}

static const struct mqueue *
findq(const struct model *m, const char *name)
{
	int i;

	for (i = 0; i < m->nq; i++)
		if (strcmp(m->q[i].name, name) == 0)
			return &m->q[i];
	fail_msg("queue \"%s\" is not declared", name);
	return NULL;
}

static void publish(const struct model *m, const char *exchange, const char *key,
    struct trace *t);

static void
enqueue(const struct model *m, const char *queue, const char *key, struct trace *t)
{
	const struct mqueue *q = findq(m, queue);

	if (q->dlx[0] == '\0') {
		t->finals++;
		snprintf(t->final, sizeof(t->final), "%s", q->name);
		return;
	}
	/* A level queue: the message waits out the TTL, then dead-letters with
	 * its routing key unchanged. */
	assert_true(q->level >= 0);
	assert_true(t->nwaits < WAITS_MAX);
	t->waits[t->nwaits++] = q->level;
	t->slept_ms += q->ttl_ms;
	publish(m, q->dlx, key, t);
}

static void
publish(const struct model *m, const char *exchange, const char *key, struct trace *t)
{
	const struct mexchange *e = findex(m, exchange);
	int i, matched = 0, first = -1;

	if (++t->hops > 1000)
		fail_msg("routing loop at %s with key %s", exchange, key);
	for (i = 0; i < m->nb; i++) {
		if (strcmp(m->b[i].source, e->name) != 0)
			continue;
		if (!e->fanout && !topic_match(m->b[i].pattern, key))
			continue;
		if (matched++ == 0)
			first = i;
	}
	if (matched > 1)
		fail_msg("exchange %s routes key %s to %d targets; expected one",
		    e->name, key, matched);
	if (matched == 0) {
		if (e->alternate[0] == '\0')
			fail_msg("exchange %s drops key %s", e->name, key);
		publish(m, e->alternate, key, t);
		return;
	}
	if (m->b[first].toqueue)
		enqueue(m, m->b[first].target, key, t);
	else
		publish(m, m->b[first].target, key, t);
}

/* Publishes N units to DEST as a producer would and checks the whole path. */
static void
route_and_check(const struct ladder *l, const struct model *m, uint64_t n,
    const char *dest, const char *expect_final)
{
	char key[LADDER_KEY_MAX + 1], entry[LADDER_NAME_MAX], err[256] = "";
	struct trace t;
	int k, w = 0;

	memset(&t, 0, sizeof(t));
	if (ladder_routing_key(l, n, dest, key, sizeof(key), err, sizeof(err)) != 0)
		fail_msg("routing key of %" PRIu64 " to %s: %s", n, dest, err);
	ladder_entry_exchange(l, n, entry, sizeof(entry));
	publish(m, entry, key, &t);
	for (k = l->levels - 1; k >= 0; k--) {
		if (!((n >> k) & 1))
			continue;
		if (w >= t.nwaits || t.waits[w] != k)
			fail_msg("%" PRIu64 " units to %s: wait %d was level %d; "
			    "expected level %d", n, dest, w,
			    w < t.nwaits ? t.waits[w] : -1, k);
		w++;
	}
	if (w != t.nwaits)
		fail_msg("%" PRIu64 " units to %s waited in %d queues; expected %d",
		    n, dest, t.nwaits, w);
	if (t.slept_ms != (int64_t)n * l->unit_ms)
		fail_msg("%" PRIu64 " units to %s slept %" PRId64 "ms; expected %"
		    PRId64, n, dest, t.slept_ms, (int64_t)n * l->unit_ms);
	if (t.finals != 1 || strcmp(t.final, expect_final) != 0)
		fail_msg("%" PRIu64 " units to %s ended in %s (%d queues); expected "
		    "only %s", n, dest, t.final, t.finals, expect_final);
}

static const char *bound[] = {
	"delivery", "email.delivery", "x.email.delivery", "email", "billing.retry",
};
static const char *unbound[] = {
	"nobody.home", "y.delivery", "email.delivery.x", "x",
};
#define NBOUND ((int)(sizeof(bound) / sizeof(bound[0])))
#define NUNBOUND ((int)(sizeof(unbound) / sizeof(unbound[0])))

static void
route_all(const struct ladder *l, uint64_t step)
{
	char parking[LADDER_NAME_MAX];
	struct model *m;
	uint64_t n, max = ladder_max_units(l);
	int i;

	m = build_model(l, bound, NBOUND);
	ladder_parking_queue(l, parking, sizeof(parking));
	for (n = 0;; n += step) {
		if (n > max)
			n = max;
		for (i = 0; i < NBOUND; i++)
			route_and_check(l, m, n, bound[i], bound[i]);
		for (i = 0; i < NUNBOUND; i++)
			route_and_check(l, m, n, unbound[i], parking);
		if (n == max)
			break;
	}
	free(m);
}

static void
test_routing_cutover_12(void **state)
{
	struct ladder l;

	(void)state;
	mkladder(&l, LADDER_NAMING_CUTOVER, "delay", 1000, 12);
	route_all(&l, 1);	/* every n in [0, 4095] */
}

static void
test_routing_other_styles(void **state)
{
	struct ladder l;

	(void)state;
	mkladder(&l, LADDER_NAMING_KOMBU, NULL, 1000, 6);
	route_all(&l, 1);
	mkladder(&l, LADDER_NAMING_NSERVICEBUS, NULL, 250, 6);
	route_all(&l, 1);
	mkladder(&l, LADDER_NAMING_CUTOVER, "a.b-c_d", 7, 1);
	route_all(&l, 1);
	/* The libraries' full 28 levels, sampled, ending at the maximum. */
	mkladder(&l, LADDER_NAMING_KOMBU, NULL, 1000, 28);
	route_all(&l, 999983);
	mkladder(&l, LADDER_NAMING_NSERVICEBUS, NULL, 1000, 28);
	route_all(&l, 999983);
	mkladder(&l, LADDER_NAMING_CUTOVER, "delay", 1, 32);
	route_all(&l, 99999989);
}

static void
test_unbound_destination_parks(void **state)
{
	char parking[LADDER_NAME_MAX], key[LADDER_KEY_MAX + 1], err[256];
	struct ladder l;
	struct model *m;
	struct trace t;

	(void)state;
	mkladder(&l, LADDER_NAMING_CUTOVER, "delay", 1000, 12);
	m = build_model(&l, bound, NBOUND);
	assert_string_equal(ladder_parking_queue(&l, parking, sizeof(parking)),
	    "delay.parking");
	route_and_check(&l, m, 0, "nobody.home", parking);
	route_and_check(&l, m, 42, "nobody.home", parking);
	route_and_check(&l, m, 4095, "nobody.home", parking);

	/* Straight into the delivery exchange, as level 0's dead letters are. */
	memset(&t, 0, sizeof(t));
	assert_int_equal(ladder_routing_key(&l, 7, "unknown", key, sizeof(key),
	    err, sizeof(err)), 0);
	publish(m, "delay.delivery", key, &t);
	assert_int_equal(t.finals, 1);
	assert_string_equal(t.final, "delay.parking");
	assert_int_equal(t.nwaits, 0);
	free(m);
}

/* ---- Arithmetic. ---- */

static void
test_naming_names(void **state)
{
	enum ladder_naming n;

	(void)state;
	assert_string_equal(ladder_naming_name(LADDER_NAMING_CUTOVER), "cutover");
	assert_string_equal(ladder_naming_name(LADDER_NAMING_KOMBU), "kombu");
	assert_string_equal(ladder_naming_name(LADDER_NAMING_NSERVICEBUS), "nservicebus");
	assert_int_equal(ladder_naming_parse("cutover", &n), 0);
	assert_int_equal(n, LADDER_NAMING_CUTOVER);
	assert_int_equal(ladder_naming_parse("kombu", &n), 0);
	assert_int_equal(n, LADDER_NAMING_KOMBU);
	assert_int_equal(ladder_naming_parse("nservicebus", &n), 0);
	assert_int_equal(n, LADDER_NAMING_NSERVICEBUS);
	assert_int_equal(ladder_naming_parse("Kombu", &n), -1);
	assert_int_equal(ladder_naming_parse("", &n), -1);
	assert_int_equal(ladder_naming_parse(NULL, &n), -1);
	assert_int_equal(ladder_naming_parse("celery", &n), -1);
}

/* Every row of the naming table is one a plan can use: its name parses
 * back to it, its fixed levels and unit come together, it takes a prefix
 * (and has a valid default one) exactly when it says so, its objects have distinct, non-empty names, and
 * its ladder routes every delay to its destination or parking. */
static void
test_naming_rows(void **state)
{
	const struct ladder_style *s;
	struct ladder l, q;
	enum ladder_naming n;
	char err[256], lv0[LADDER_NAME_MAX], lv1[LADDER_NAME_MAX], other[LADDER_NAME_MAX];
	char dx[LADDER_NAME_MAX], px[LADDER_NAME_MAX], start[LADDER_PREFIX_MAX + 8];
	int i;

	(void)state;
	assert_null(ladder_style((enum ladder_naming)-1));
	for (i = 0; (s = ladder_style((enum ladder_naming)i)) != NULL; i++) {
		assert_non_null(s->name);
		assert_int_equal(ladder_naming_parse(s->name, &n), 0);
		assert_int_equal((int)n, i);
		assert_string_equal(ladder_naming_name(n), s->name);
		assert_int_equal(s->fixed_levels == 0, s->fixed_unit_ms == 0);
		assert_true(s->fixed_levels >= 0 && s->fixed_levels <= LADDER_MAX_LEVELS);
		assert_non_null(s->joiner);
		assert_non_null(s->destination_word);
		mkladder(&l, n, "p", 1000, 6);
		mkladder(&q, n, "q", 1000, 6);
		ladder_level_exchange(&l, 0, lv0, sizeof(lv0));
		ladder_level_exchange(&l, 1, lv1, sizeof(lv1));
		ladder_delivery_exchange(&l, dx, sizeof(dx));
		ladder_parking_exchange(&l, px, sizeof(px));
		assert_true(lv0[0] != '\0' && lv1[0] != '\0' && dx[0] != '\0' &&
		    px[0] != '\0');
		assert_string_not_equal(lv0, lv1);
		assert_string_not_equal(lv0, dx);
		assert_string_not_equal(lv0, px);
		assert_string_not_equal(dx, px);
		ladder_level_exchange(&q, 0, other, sizeof(other));
		if (s->prefix == LADDER_PREFIX_REQUIRED) {
			assert_int_equal(ladder_init(&q, n, NULL, 1000, 6, err,
			    sizeof(err)), -1);
			assert_non_null(strstr(err, s->name));
			assert_non_null(s->default_prefix);
			assert_int_equal(ladder_init(&q, n, s->default_prefix, 1000, 6,
			    err, sizeof(err)), 0);
			snprintf(start, sizeof(start), "p%s", s->joiner);
			assert_int_equal(strncmp(lv0, start, strlen(start)), 0);
			assert_string_not_equal(lv0, other);
			assert_string_equal(l.prefix, "p");
		} else if (s->prefix == LADDER_PREFIX_OPTIONAL) {
			/* With a prefix, PREFIX JOINER NAME; without, NAME alone. */
			snprintf(start, sizeof(start), "p%s", s->joiner);
			assert_int_equal(strncmp(lv0, start, strlen(start)), 0);
			assert_string_not_equal(lv0, other);
			assert_string_equal(l.prefix, "p");
			mkladder(&q, n, NULL, 1000, 6);
			ladder_level_exchange(&q, 0, other, sizeof(other));
			assert_string_equal(lv0 + strlen(start), other);
			mkladder(&q, n, "", 1000, 6);
			assert_string_equal(q.prefix, "");
		} else {
			assert_string_equal(lv0, other);
			assert_string_equal(l.prefix, "");
		}
		route_all(&l, 1);
	}
	assert_true(i >= 3);
	assert_string_equal(ladder_naming_name((enum ladder_naming)i), "unknown");
	assert_int_equal(ladder_naming_parse("unknown", &n), -1);
}

/* The list of styles, as messages and the usage line print it. */
static void
test_naming_list(void **state)
{
	char out[64], tiny[8];

	(void)state;
	assert_string_equal(ladder_naming_list(", ", " or ", out, sizeof(out)),
	    "cutover, kombu or nservicebus");
	assert_string_equal(ladder_naming_list("|", "|", out, sizeof(out)),
	    "cutover|kombu|nservicebus");
	assert_string_equal(ladder_naming_list(", ", " or ", tiny, sizeof(tiny)), "");
	assert_null(ladder_naming_list(", ", " or ", NULL, 0));
}

static void
test_levels_for(void **state)
{
	(void)state;
	assert_int_equal(ladder_levels_for(0), 1);
	assert_int_equal(ladder_levels_for(1), 1);
	assert_int_equal(ladder_levels_for(2), 2);
	assert_int_equal(ladder_levels_for(3), 2);
	assert_int_equal(ladder_levels_for(4), 3);
	assert_int_equal(ladder_levels_for(4095), 12);
	assert_int_equal(ladder_levels_for(4096), 13);
	assert_int_equal(ladder_levels_for(((uint64_t)1 << 28) - 1), 28);
	assert_int_equal(ladder_levels_for(((uint64_t)1 << 32) - 1), 32);
	assert_int_equal(ladder_levels_for((uint64_t)1 << 32), -1);
	assert_int_equal(ladder_levels_for(UINT64_MAX), -1);
}

static void
test_levels_for_12d(void **state)
{
	char err[256] = "";
	struct ladder l;
	int64_t ms;
	uint64_t units;
	int levels;

	(void)state;
	assert_int_equal(duration_parse("12d", &ms, err, sizeof(err)), 0);
	assert_int_equal(ms, 1036800000);
	levels = ladder_levels_for((uint64_t)(ms / 1000));
	assert_int_equal(levels, 20);
	mkladder(&l, LADDER_NAMING_CUTOVER, "delay", 1000, levels);
	assert_int_equal(ladder_encode(&l, ms, &units, err, sizeof(err)), 0);
	assert_int_equal(units, 1036800);
	assert_int_equal(ladder_max_units(&l), 1048575);
	assert_int_equal(ladder_max_delay_ms(&l), 1048575000);
	/* 19 levels are not enough. */
	mkladder(&l, LADDER_NAMING_CUTOVER, "delay", 1000, 19);
	assert_int_equal(ladder_encode(&l, ms, &units, err, sizeof(err)), -1);
	assert_string_equal(err, "delay 12d is beyond the ladder's maximum of "
	    "524287s (19 levels of 1s)");
}

/* A plan's max_delay limits ladder_encode below the ladder's maximum. */
static void
test_limit(void **state)
{
	char err[256] = "";
	struct ladder l;
	uint64_t units;

	(void)state;
	mkladder(&l, LADDER_NAMING_KOMBU, NULL, 1000, 28);
	assert_int_equal(ladder_limit_ms(&l), ladder_max_delay_ms(&l));
	assert_int_equal(ladder_set_limit(&l, 30 * 86400000LL, err, sizeof(err)), 0);
	assert_int_equal(ladder_limit_ms(&l), 30 * 86400000LL);
	assert_int_equal(ladder_encode(&l, 30 * 86400000LL, &units, err, sizeof(err)), 0);
	assert_int_equal(units, 30 * 86400);
	assert_int_equal(ladder_encode(&l, 31 * 86400000LL, &units, err, sizeof(err)), -1);
	assert_string_equal(err, "delay 31d is beyond max_delay 30d (the ladder "
	    "itself reaches 268435455s); expected at most 30d");
	assert_int_equal(ladder_encode(&l, 30 * 86400000LL + 1, &units, err,
	    sizeof(err)), -1);
	/* A limit is at least 1 ms and at most what the ladder reaches. */
	assert_int_equal(ladder_set_limit(&l, 0, err, sizeof(err)), -1);
	assert_int_equal(ladder_set_limit(&l, ladder_max_delay_ms(&l) + 1, err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, "expected 1ms to 268435455s"));
	assert_int_equal(ladder_limit_ms(&l), 30 * 86400000LL);
}

static void
test_init_checks(void **state)
{
	char err[256], prefix[80];
	struct ladder l;

	(void)state;
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "delay", 1000, 12,
	    err, sizeof(err)), 0);
	assert_int_equal(l.naming, LADDER_NAMING_CUTOVER);
	assert_string_equal(l.prefix, "delay");
	assert_int_equal(l.unit_ms, 1000);
	assert_int_equal(l.levels, 12);

	/* Prefix: [A-Za-z0-9_-] words separated by '.', 1 .. 64 characters. */
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "orders.delay",
	    1000, 12, err, sizeof(err)), 0);
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "A-z_9.x", 1000,
	    12, err, sizeof(err)), 0);
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, NULL, 1000, 12,
	    err, sizeof(err)), -1);
	assert_non_null(strstr(err, "prefix"));
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "", 1000, 12,
	    err, sizeof(err)), -1);
	memset(prefix, 'p', 64);
	prefix[64] = '\0';
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, prefix, 1000, 12,
	    err, sizeof(err)), 0);
	assert_string_equal(l.prefix, prefix);
	prefix[64] = 'p';
	prefix[65] = '\0';
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, prefix, 1000, 12,
	    err, sizeof(err)), -1);
	assert_non_null(strstr(err, "65"));
	assert_non_null(strstr(err, "64"));
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "a..b", 1000, 12,
	    err, sizeof(err)), -1);
	assert_non_null(strstr(err, "empty word"));
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, ".a", 1000, 12,
	    err, sizeof(err)), -1);
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "a.", 1000, 12,
	    err, sizeof(err)), -1);
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, ".", 1000, 12,
	    err, sizeof(err)), -1);
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "a b", 1000, 12,
	    err, sizeof(err)), -1);
	assert_non_null(strstr(err, "position 2"));
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "a/b", 1000, 12,
	    err, sizeof(err)), -1);
	assert_non_null(strstr(err, "'/'"));
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "a*", 1000, 12,
	    err, sizeof(err)), -1);
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "a#", 1000, 12,
	    err, sizeof(err)), -1);

	/* The library styles ignore the prefix. */
	assert_int_equal(ladder_init(&l, LADDER_NAMING_KOMBU, NULL, 1000, 28,
	    err, sizeof(err)), 0);
	assert_int_equal(ladder_init(&l, LADDER_NAMING_NSERVICEBUS, "a..b", 1000,
	    28, err, sizeof(err)), 0);
	assert_int_equal(ladder_init(&l, (enum ladder_naming)7, "delay", 1000, 12,
	    err, sizeof(err)), -1);

	/* Levels and unit. */
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "d", 1000, 0,
	    err, sizeof(err)), -1);
	assert_non_null(strstr(err, "0 levels"));
	assert_non_null(strstr(err, "1 to 32"));
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "d", 1000, 33,
	    err, sizeof(err)), -1);
	assert_non_null(strstr(err, "33 levels"));
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "d", 1000, -1,
	    err, sizeof(err)), -1);
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "d", 1, 1,
	    err, sizeof(err)), 0);
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "d", 1, 32,
	    err, sizeof(err)), 0);
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "d", 0, 12,
	    err, sizeof(err)), -1);
	assert_non_null(strstr(err, "0ms"));
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "d", -1000, 12,
	    err, sizeof(err)), -1);
	assert_non_null(strstr(err, "-1000ms"));
	assert_int_equal(ladder_init(NULL, LADDER_NAMING_CUTOVER, "d", 1000, 12,
	    err, sizeof(err)), -1);
	/* A NULL error buffer is allowed. */
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "d", 0, 12,
	    NULL, 0), -1);
}

static void
test_overflow_guards(void **state)
{
	const uint64_t max32 = ((uint64_t)1 << 32) - 1;
	char err[512];
	struct ladder l;
	uint64_t units;
	int64_t unit;

	(void)state;
	/* One level of the largest unit: 1 x INT64_MAX fits. */
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "d", INT64_MAX, 1,
	    err, sizeof(err)), 0);
	assert_int_equal(ladder_max_delay_ms(&l), INT64_MAX);
	assert_int_equal(ladder_level_ttl_ms(&l, 0), INT64_MAX);
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "d", INT64_MAX, 2,
	    err, sizeof(err)), -1);
	assert_non_null(strstr(err, "overflows"));

	/* 32 levels: the unit may be at most INT64_MAX / (2^32 - 1). */
	unit = (int64_t)((uint64_t)INT64_MAX / max32);
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "d", unit, 32,
	    err, sizeof(err)), 0);
	assert_true(ladder_max_delay_ms(&l) > 0);
	assert_int_equal(ladder_max_delay_ms(&l), (int64_t)max32 * unit);
	assert_int_equal(ladder_level_ttl_ms(&l, 31), ((int64_t)1 << 31) * unit);
	assert_int_equal(ladder_encode(&l, INT64_MAX, &units, err, sizeof(err)), -1);
	assert_int_equal(ladder_encode(&l, ladder_max_delay_ms(&l), &units, err,
	    sizeof(err)), 0);
	assert_int_equal(units, max32);
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "d", unit + 1, 32,
	    err, sizeof(err)), -1);
	assert_non_null(strstr(err, "32 levels"));
	assert_non_null(strstr(err, "4294967295 units"));
	{
		char figure[32];

		snprintf(figure, sizeof(figure), "at most %" PRId64 "ms", unit);
		assert_non_null(strstr(err, figure));
	}

	/* Largest delay on a 1 ms ladder, and the ceiling at INT64_MAX. */
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "d", 1, 32,
	    err, sizeof(err)), 0);
	assert_int_equal(ladder_encode(&l, INT64_MAX, &units, err, sizeof(err)), -1);
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "d", 3, 1,
	    err, sizeof(err)), 0);
	assert_int_equal(ladder_encode(&l, INT64_MAX, &units, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "rounds up to 3074457345618258603 units"));

	/* A hand-built ladder that ladder_init would refuse is refused. */
	memset(&l, 0, sizeof(l));
	l.naming = LADDER_NAMING_CUTOVER;
	snprintf(l.prefix, sizeof(l.prefix), "d");
	l.unit_ms = INT64_MAX;
	l.levels = 32;
	assert_int_equal(ladder_max_units(&l), 0);
	assert_int_equal(ladder_max_delay_ms(&l), -1);
	assert_int_equal(ladder_level_ttl_ms(&l, 31), -1);
	assert_int_equal(ladder_encode(&l, 1, &units, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not valid"));
	l.unit_ms = 1000;
	l.levels = 40;
	assert_int_equal(ladder_encode(&l, 1, &units, err, sizeof(err)), -1);
	assert_int_equal(ladder_max_delay_ms(NULL), -1);
	assert_int_equal(ladder_encode(NULL, 1, &units, err, sizeof(err)), -1);
}

static void
test_max_and_ttl(void **state)
{
	struct ladder l;

	(void)state;
	mkladder(&l, LADDER_NAMING_CUTOVER, "delay", 1000, 12);
	assert_int_equal(ladder_max_units(&l), 4095);
	assert_int_equal(ladder_max_delay_ms(&l), 4095000);
	assert_int_equal(ladder_level_ttl_ms(&l, 0), 1000);
	assert_int_equal(ladder_level_ttl_ms(&l, 1), 2000);
	assert_int_equal(ladder_level_ttl_ms(&l, 11), 2048000);
	assert_int_equal(ladder_level_ttl_ms(&l, 12), -1);
	assert_int_equal(ladder_level_ttl_ms(&l, -1), -1);
	mkladder(&l, LADDER_NAMING_KOMBU, NULL, 1000, 28);
	assert_int_equal(ladder_max_units(&l), 268435455);
	assert_int_equal(ladder_level_ttl_ms(&l, 27), INT64_C(134217728000));
	mkladder(&l, LADDER_NAMING_CUTOVER, "d", 1, 32);
	assert_int_equal(ladder_max_units(&l), UINT64_C(4294967295));
	mkladder(&l, LADDER_NAMING_CUTOVER, "d", 250, 1);
	assert_int_equal(ladder_max_units(&l), 1);
	assert_int_equal(ladder_max_delay_ms(&l), 250);
}

static void
test_encode_boundaries(void **state)
{
	char err[256];
	struct ladder l;
	uint64_t u;

	(void)state;
	mkladder(&l, LADDER_NAMING_CUTOVER, "delay", 1000, 12);
	assert_int_equal(ladder_encode(&l, 0, &u, err, sizeof(err)), 0);
	assert_int_equal(u, 0);
	assert_int_equal(ladder_encode(&l, 1, &u, err, sizeof(err)), 0);
	assert_int_equal(u, 1);			/* sub-unit rounds up, never down */
	assert_int_equal(ladder_encode(&l, 999, &u, err, sizeof(err)), 0);
	assert_int_equal(u, 1);
	assert_int_equal(ladder_encode(&l, 1000, &u, err, sizeof(err)), 0);
	assert_int_equal(u, 1);
	assert_int_equal(ladder_encode(&l, 1001, &u, err, sizeof(err)), 0);
	assert_int_equal(u, 2);
	assert_int_equal(ladder_encode(&l, 1200, &u, err, sizeof(err)), 0);
	assert_int_equal(u, 2);
	assert_int_equal(ladder_encode(&l, 2000, &u, err, sizeof(err)), 0);
	assert_int_equal(u, 2);
	assert_int_equal(ladder_encode(&l, 42000, &u, err, sizeof(err)), 0);
	assert_int_equal(u, 42);
	assert_int_equal(ladder_encode(&l, 4094001, &u, err, sizeof(err)), 0);
	assert_int_equal(u, 4095);
	assert_int_equal(ladder_encode(&l, 4095000, &u, err, sizeof(err)), 0);
	assert_int_equal(u, 4095);		/* 2^L - 1 */
	assert_int_equal(ladder_encode(&l, 4095000, NULL, err, sizeof(err)), 0);

	u = 77;
	assert_int_equal(ladder_encode(&l, 4095001, &u, err, sizeof(err)), -1);
	assert_int_equal(u, 77);		/* untouched on error */
	assert_string_equal(err, "delay 4095001ms rounds up to 4096 units of 1s, "
	    "beyond the ladder's maximum of 4095s (12 levels of 1s)");
	assert_int_equal(ladder_encode(&l, 4096000, &u, err, sizeof(err)), -1);
	assert_string_equal(err, "delay 4096s is beyond the ladder's maximum of "
	    "4095s (12 levels of 1s)");
	assert_int_equal(ladder_encode(&l, 5000000, &u, err, sizeof(err)), -1);
	assert_string_equal(err, "delay 5000s is beyond the ladder's maximum of "
	    "4095s (12 levels of 1s)");
	assert_int_equal(ladder_encode(&l, -1, &u, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "-1ms is negative"));
	assert_int_equal(ladder_encode(&l, INT64_MIN, &u, err, sizeof(err)), -1);
	assert_int_equal(ladder_encode(&l, INT64_MAX, &u, err, sizeof(err)), -1);

	/* A 250 ms unit. */
	mkladder(&l, LADDER_NAMING_CUTOVER, "delay", 250, 4);
	assert_int_equal(ladder_encode(&l, 251, &u, err, sizeof(err)), 0);
	assert_int_equal(u, 2);
	assert_int_equal(ladder_encode(&l, 3750, &u, err, sizeof(err)), 0);
	assert_int_equal(u, 15);
	assert_int_equal(ladder_encode(&l, 3751, &u, err, sizeof(err)), -1);
	assert_string_equal(err, "delay 3751ms rounds up to 16 units of 250ms, "
	    "beyond the ladder's maximum of 3750ms (4 levels of 250ms)");
}

static void
test_entry_level_and_exchange(void **state)
{
	char name[LADDER_NAME_MAX];
	struct ladder l;

	(void)state;
	assert_int_equal(ladder_entry_level(0), -1);
	assert_int_equal(ladder_entry_level(1), 0);
	assert_int_equal(ladder_entry_level(2), 1);
	assert_int_equal(ladder_entry_level(3), 1);
	assert_int_equal(ladder_entry_level(42), 5);
	assert_int_equal(ladder_entry_level(4095), 11);
	assert_int_equal(ladder_entry_level(4096), 12);
	assert_int_equal(ladder_entry_level(UINT64_MAX), 63);

	mkladder(&l, LADDER_NAMING_CUTOVER, "delay", 1000, 12);
	assert_string_equal(ladder_entry_exchange(&l, 0, name, sizeof(name)),
	    "delay.delivery");
	assert_string_equal(ladder_entry_exchange(&l, 1, name, sizeof(name)),
	    "delay.level.00");
	assert_string_equal(ladder_entry_exchange(&l, 42, name, sizeof(name)),
	    "delay.level.05");
	assert_string_equal(ladder_entry_exchange(&l, 4095, name, sizeof(name)),
	    "delay.level.11");
	assert_string_equal(ladder_entry_exchange(&l, 4096, name, sizeof(name)), "");
}

static void
test_round_trip_all(void **state)
{
	char key[LADDER_KEY_MAX + 1], dest[LADDER_NAME_MAX], err[256] = "";
	struct ladder l;
	uint64_t n, back;
	int k;

	(void)state;
	mkladder(&l, LADDER_NAMING_CUTOVER, "delay", 1000, 12);
	for (n = 0; n <= 4095; n++) {
		if (ladder_routing_key(&l, n, "email.delivery", key, sizeof(key),
		    err, sizeof(err)) != 0)
			fail_msg("key of %" PRIu64 ": %s", n, err);
		assert_int_equal(strlen(key), 24 + strlen("email.delivery"));
		for (k = 0; k < 12; k++) {
			assert_int_equal(key[2 * k], (n >> (11 - k)) & 1 ? '1' : '0');
			assert_int_equal(key[2 * k + 1], '.');
		}
		back = UINT64_MAX;
		dest[0] = '\0';
		if (ladder_parse_key(&l, key, &back, dest, sizeof(dest), err,
		    sizeof(err)) != 0)
			fail_msg("parse of %s: %s", key, err);
		assert_int_equal(back, n);
		assert_string_equal(dest, "email.delivery");
	}
	/* The extremes of the widest ladder. */
	mkladder(&l, LADDER_NAMING_CUTOVER, "delay", 1, 32);
	assert_int_equal(ladder_routing_key(&l, UINT64_C(4294967295), "d", key,
	    sizeof(key), err, sizeof(err)), 0);
	assert_int_equal(ladder_parse_key(&l, key, &back, dest, sizeof(dest), err,
	    sizeof(err)), 0);
	assert_int_equal(back, UINT64_C(4294967295));
	assert_int_equal(ladder_routing_key(&l, UINT64_C(4294967296), "d", key,
	    sizeof(key), err, sizeof(err)), -1);
	assert_non_null(strstr(err, "4294967296 units"));
	assert_non_null(strstr(err, "4294967295"));
}

static void
test_routing_key_examples(void **state)
{
	char key[LADDER_KEY_MAX + 1], err[256];
	struct ladder l;

	(void)state;
	mkladder(&l, LADDER_NAMING_CUTOVER, "delay", 1000, 6);
	assert_int_equal(ladder_routing_key(&l, 42, "email.delivery", key,
	    sizeof(key), err, sizeof(err)), 0);
	assert_string_equal(key, "1.0.1.0.1.0.email.delivery");
	assert_int_equal(ladder_routing_key(&l, 0, "q", key, sizeof(key), err,
	    sizeof(err)), 0);
	assert_string_equal(key, "0.0.0.0.0.0.q");
	assert_int_equal(ladder_routing_key(&l, 63, "q", key, sizeof(key), err,
	    sizeof(err)), 0);
	assert_string_equal(key, "1.1.1.1.1.1.q");
	assert_int_equal(ladder_routing_key(&l, 64, "q", key, sizeof(key), err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, "64 units"));
	assert_non_null(strstr(err, "at most 63"));
	assert_int_equal(ladder_routing_key(&l, 1, "a..b", key, sizeof(key), err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, "empty word"));

	/* The buffer must hold the whole key; no key is ever cut short. */
	assert_int_equal(ladder_routing_key(&l, 1, "email", key, 17, err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, "18 bytes"));
	assert_int_equal(ladder_routing_key(&l, 1, "email", key, 18, err,
	    sizeof(err)), 0);
	assert_string_equal(key, "0.0.0.0.0.1.email");
	assert_int_equal(ladder_routing_key(&l, 1, "email", NULL, 0, err,
	    sizeof(err)), -1);
}

static void
test_destinations(void **state)
{
	char dest[300], key[300], got[LADDER_NAME_MAX], err[512];
	struct ladder l;
	uint64_t u;

	(void)state;
	mkladder(&l, LADDER_NAMING_CUTOVER, "delay", 1000, 12);
	assert_int_equal(ladder_check_destination(&l, "email", err, sizeof(err)), 0);
	assert_int_equal(ladder_check_destination(&l, "email.delivery", err,
	    sizeof(err)), 0);
	assert_int_equal(ladder_check_destination(&l, "a-b_c.d:e", err,
	    sizeof(err)), 0);
	assert_int_equal(ladder_check_destination(&l, "", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "empty"));
	assert_int_equal(ladder_check_destination(&l, NULL, err, sizeof(err)), -1);
	assert_int_equal(ladder_check_destination(&l, ".email", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "empty word"));
	assert_int_equal(ladder_check_destination(&l, "email.", err, sizeof(err)), -1);
	assert_int_equal(ladder_check_destination(&l, "a..b", err, sizeof(err)), -1);
	assert_int_equal(ladder_check_destination(&l, ".", err, sizeof(err)), -1);
	assert_int_equal(ladder_check_destination(&l, "*", err, sizeof(err)), -1);
	assert_int_equal(ladder_check_destination(&l, "email.*", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "'*' at byte 7"));
	assert_int_equal(ladder_check_destination(&l, "#.email", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "'#' at byte 1"));
	assert_int_equal(ladder_check_destination(&l, "em#ail", err, sizeof(err)), -1);

	/* 12 levels take 24 bytes of the 255: a destination of 231 fits. */
	memset(dest, 'a', 231);
	dest[231] = '\0';
	dest[100] = '.';
	assert_int_equal(ladder_check_destination(&l, dest, err, sizeof(err)), 0);
	assert_int_equal(ladder_routing_key(&l, 4095, dest, key, LADDER_KEY_MAX + 1,
	    err, sizeof(err)), 0);
	assert_int_equal(strlen(key), 255);
	assert_int_equal(ladder_parse_key(&l, key, &u, got, sizeof(got), err,
	    sizeof(err)), 0);
	assert_int_equal(u, 4095);
	assert_string_equal(got, dest);
	dest[231] = 'a';
	dest[232] = '\0';
	assert_int_equal(ladder_check_destination(&l, dest, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "232 bytes"));
	assert_non_null(strstr(err, "256-byte routing key"));
	assert_non_null(strstr(err, "at most 255"));
	assert_non_null(strstr(err, "at most 231"));
	assert_int_equal(ladder_routing_key(&l, 1, dest, key, sizeof(key), err,
	    sizeof(err)), -1);
	/* The same 256-byte key is refused when parsed. */
	memcpy(key, "0.0.0.0.0.0.0.0.0.0.0.1.", 24);
	memcpy(key + 24, dest, 233);
	assert_int_equal(strlen(key), 256);
	assert_int_equal(ladder_parse_key(&l, key, &u, got, sizeof(got), err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, "256 bytes"));
	assert_non_null(strstr(err, "at most 255"));

	/* 32 levels take 64 bytes: 191 is the limit. */
	mkladder(&l, LADDER_NAMING_CUTOVER, "delay", 1, 32);
	dest[191] = '\0';
	assert_int_equal(ladder_check_destination(&l, dest, err, sizeof(err)), 0);
	dest[191] = 'a';
	dest[192] = '\0';
	assert_int_equal(ladder_check_destination(&l, dest, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "at most 191"));
}

static void
test_parse_malformed(void **state)
{
	static const char *bad[] = {
		"",			/* no words */
		"0.1",			/* too few words */
		"0.1.0",		/* bit words only, no destination */
		"0.1.0.",		/* empty destination */
		"2.0.0.d",		/* bit word not 0/1 */
		"0.1.2.d",
		"01.0.0.d",		/* two digits */
		"0.10.0.d",
		"00.0.d",
		"..0.0.d",		/* empty bit word */
		"0..0.d",
		"0.1.0.d.",		/* trailing dot */
		"0.1.0.d..e",		/* empty word in destination */
		"0.1.0..d",		/* empty first destination word */
		"0.1.0.d*",		/* wildcard in destination */
		"0.1.0.#",
		"a.b.c.d",
		" 0.1.0.d",
	};
	char dest[LADDER_NAME_MAX], err[256];
	struct ladder l;
	uint64_t u;
	size_t i;

	(void)state;
	mkladder(&l, LADDER_NAMING_CUTOVER, "delay", 1000, 3);
	assert_int_equal(ladder_parse_key(&l, "1.0.1.d", &u, dest, sizeof(dest),
	    err, sizeof(err)), 0);
	assert_int_equal(u, 5);
	assert_string_equal(dest, "d");
	assert_int_equal(ladder_parse_key(&l, "1.1.1.a.b.c", &u, NULL, 0, err,
	    sizeof(err)), 0);
	assert_int_equal(u, 7);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		u = 99;
		err[0] = '\0';
		if (ladder_parse_key(&l, bad[i], &u, dest, sizeof(dest), err,
		    sizeof(err)) != -1)
			fail_msg("key \"%s\" was accepted", bad[i]);
		assert_int_equal(u, 99);
		assert_true(err[0] != '\0');
	}
	assert_int_equal(ladder_parse_key(&l, "0.1", &u, dest, sizeof(dest), err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, "too few words"));
	assert_non_null(strstr(err, "3 bit words"));
	assert_int_equal(ladder_parse_key(&l, "0.1.2.d", &u, dest, sizeof(dest),
	    err, sizeof(err)), -1);
	assert_non_null(strstr(err, "word 3 is \"2\""));
	assert_non_null(strstr(err, "expected \"0\" or \"1\""));
	assert_int_equal(ladder_parse_key(&l, "01.0.0.d", &u, dest, sizeof(dest),
	    err, sizeof(err)), -1);
	assert_non_null(strstr(err, "word 1 is \"01\""));
	assert_int_equal(ladder_parse_key(&l, "0..0.d", &u, dest, sizeof(dest),
	    err, sizeof(err)), -1);
	assert_non_null(strstr(err, "word 2 is \"\""));
	assert_int_equal(ladder_parse_key(&l, "0.1.0.", &u, dest, sizeof(dest),
	    err, sizeof(err)), -1);
	assert_non_null(strstr(err, "no destination"));
	assert_int_equal(ladder_parse_key(&l, "0.1.0.d.", &u, dest, sizeof(dest),
	    err, sizeof(err)), -1);
	assert_non_null(strstr(err, "empty word"));
	assert_int_equal(ladder_parse_key(&l, NULL, &u, dest, sizeof(dest),
	    err, sizeof(err)), -1);
	/* A destination buffer too small is an error, not a cut name. */
	assert_int_equal(ladder_parse_key(&l, "0.1.0.email", &u, dest, 5,
	    err, sizeof(err)), -1);
	assert_non_null(strstr(err, "6 bytes"));
	assert_int_equal(ladder_parse_key(&l, "0.1.0.email", &u, dest, 6,
	    err, sizeof(err)), 0);
	assert_string_equal(dest, "email");
}

/* ---- Names and patterns. ---- */

static void
test_names_cutover(void **state)
{
	char n[LADDER_NAME_MAX];
	struct ladder l;

	(void)state;
	mkladder(&l, LADDER_NAMING_CUTOVER, "delay", 1000, 12);
	assert_string_equal(ladder_level_exchange(&l, 0, n, sizeof(n)), "delay.level.00");
	assert_string_equal(ladder_level_queue(&l, 0, n, sizeof(n)), "delay.level.00");
	assert_string_equal(ladder_level_exchange(&l, 7, n, sizeof(n)), "delay.level.07");
	assert_string_equal(ladder_level_queue(&l, 11, n, sizeof(n)), "delay.level.11");
	assert_string_equal(ladder_level_exchange(&l, 12, n, sizeof(n)), "");
	assert_string_equal(ladder_level_exchange(&l, -1, n, sizeof(n)), "");
	assert_string_equal(ladder_delivery_exchange(&l, n, sizeof(n)), "delay.delivery");
	assert_string_equal(ladder_parking_exchange(&l, n, sizeof(n)), "delay.parking");
	assert_string_equal(ladder_parking_queue(&l, n, sizeof(n)), "delay.parking");
	assert_string_equal(ladder_dead_letter_exchange(&l, 0, n, sizeof(n)),
	    "delay.delivery");
	assert_string_equal(ladder_dead_letter_exchange(&l, 1, n, sizeof(n)),
	    "delay.level.00");
	assert_string_equal(ladder_dead_letter_exchange(&l, 11, n, sizeof(n)),
	    "delay.level.10");
	assert_string_equal(ladder_dead_letter_exchange(&l, 12, n, sizeof(n)), "");

	mkladder(&l, LADDER_NAMING_CUTOVER, "orders.delay", 1000, 32);
	assert_string_equal(ladder_level_exchange(&l, 31, n, sizeof(n)),
	    "orders.delay.level.31");
	assert_string_equal(ladder_delivery_exchange(&l, n, sizeof(n)),
	    "orders.delay.delivery");

	/* A name that does not fit is left empty, never cut short. */
	assert_string_equal(ladder_level_exchange(&l, 31, n, 21), "");
	assert_string_equal(ladder_level_exchange(&l, 31, n, 22),
	    "orders.delay.level.31");
	assert_string_equal(ladder_delivery_exchange(&l, n, 5), "");
	assert_null(ladder_delivery_exchange(&l, NULL, 0));
}

static void
test_names_kombu(void **state)
{
	char n[LADDER_NAME_MAX];
	struct ladder l;

	(void)state;
	mkladder(&l, LADDER_NAMING_KOMBU, NULL, 1000, 28);
	assert_string_equal(ladder_level_exchange(&l, 0, n, sizeof(n)), "celery_delayed_0");
	assert_string_equal(ladder_level_queue(&l, 0, n, sizeof(n)), "celery_delayed_0");
	assert_string_equal(ladder_level_exchange(&l, 9, n, sizeof(n)), "celery_delayed_9");
	assert_string_equal(ladder_level_queue(&l, 10, n, sizeof(n)), "celery_delayed_10");
	assert_string_equal(ladder_level_exchange(&l, 27, n, sizeof(n)), "celery_delayed_27");
	assert_string_equal(ladder_level_exchange(&l, 28, n, sizeof(n)), "");
	assert_string_equal(ladder_delivery_exchange(&l, n, sizeof(n)),
	    "celery_delayed_delivery");
	assert_string_equal(ladder_parking_exchange(&l, n, sizeof(n)),
	    "celery_delayed_parking");
	assert_string_equal(ladder_parking_queue(&l, n, sizeof(n)),
	    "celery_delayed_parking");
	assert_string_equal(ladder_dead_letter_exchange(&l, 0, n, sizeof(n)),
	    "celery_delayed_delivery");
	assert_string_equal(ladder_dead_letter_exchange(&l, 27, n, sizeof(n)),
	    "celery_delayed_26");
	assert_string_equal(ladder_entry_exchange(&l, 268435455, n, sizeof(n)),
	    "celery_delayed_27");
	/* Kombu's prefix P (native_delayed_delivery.py):
	 * P_celery_delayed_K and P_celery_delayed_delivery. */
	mkladder(&l, LADDER_NAMING_KOMBU, "p", 1000, 28);
	assert_string_equal(ladder_level_exchange(&l, 3, n, sizeof(n)), "p_celery_delayed_3");
	assert_string_equal(ladder_level_queue(&l, 27, n, sizeof(n)), "p_celery_delayed_27");
	assert_string_equal(ladder_delivery_exchange(&l, n, sizeof(n)),
	    "p_celery_delayed_delivery");
	assert_string_equal(ladder_dead_letter_exchange(&l, 0, n, sizeof(n)),
	    "p_celery_delayed_delivery");
	assert_string_equal(ladder_parking_queue(&l, n, sizeof(n)),
	    "p_celery_delayed_parking");
	/* An empty prefix is none, as in Kombu. */
	mkladder(&l, LADDER_NAMING_KOMBU, "", 1000, 28);
	assert_string_equal(ladder_level_exchange(&l, 3, n, sizeof(n)), "celery_delayed_3");
}

static void
test_names_nservicebus(void **state)
{
	char n[LADDER_NAME_MAX];
	struct ladder l;

	(void)state;
	mkladder(&l, LADDER_NAMING_NSERVICEBUS, NULL, 1000, 28);
	assert_string_equal(ladder_level_exchange(&l, 0, n, sizeof(n)),
	    "nsb.v2.delay-level-00");
	assert_string_equal(ladder_level_queue(&l, 0, n, sizeof(n)),
	    "nsb.v2.delay-level-00");
	assert_string_equal(ladder_level_exchange(&l, 9, n, sizeof(n)),
	    "nsb.v2.delay-level-09");
	assert_string_equal(ladder_level_queue(&l, 27, n, sizeof(n)),
	    "nsb.v2.delay-level-27");
	assert_string_equal(ladder_delivery_exchange(&l, n, sizeof(n)),
	    "nsb.v2.delay-delivery");
	assert_string_equal(ladder_parking_exchange(&l, n, sizeof(n)),
	    "nsb.v2.delay-parking");
	assert_string_equal(ladder_parking_queue(&l, n, sizeof(n)),
	    "nsb.v2.delay-parking");
	assert_string_equal(ladder_dead_letter_exchange(&l, 0, n, sizeof(n)),
	    "nsb.v2.delay-delivery");
	assert_string_equal(ladder_dead_letter_exchange(&l, 10, n, sizeof(n)),
	    "nsb.v2.delay-level-09");
}

static void
test_patterns(void **state)
{
	char p[LADDER_NAME_MAX];
	struct ladder l;

	(void)state;
	mkladder(&l, LADDER_NAMING_CUTOVER, "delay", 1000, 6);
	assert_string_equal(ladder_wait_pattern(&l, 5, p, sizeof(p)), "1.#");
	assert_string_equal(ladder_wait_pattern(&l, 4, p, sizeof(p)), "*.1.#");
	assert_string_equal(ladder_wait_pattern(&l, 0, p, sizeof(p)), "*.*.*.*.*.1.#");
	assert_string_equal(ladder_bypass_pattern(&l, 5, p, sizeof(p)), "0.#");
	assert_string_equal(ladder_bypass_pattern(&l, 0, p, sizeof(p)), "*.*.*.*.*.0.#");
	assert_string_equal(ladder_wait_pattern(&l, 6, p, sizeof(p)), "");
	assert_string_equal(ladder_bypass_pattern(&l, -1, p, sizeof(p)), "");
	assert_string_equal(ladder_destination_pattern(&l, "email.delivery", p,
	    sizeof(p)), "*.*.*.*.*.*.email.delivery");
	assert_string_equal(ladder_destination_pattern(&l, "q", p, sizeof(p)),
	    "*.*.*.*.*.*.q");
	assert_string_equal(ladder_destination_pattern(&l, "a..b", p, sizeof(p)), "");
	assert_string_equal(ladder_destination_pattern(&l, "#", p, sizeof(p)), "");
	assert_string_equal(ladder_destination_pattern(&l, NULL, p, sizeof(p)), "");
	assert_string_equal(ladder_destination_pattern(&l, "q", p, 14), "*.*.*.*.*.*.q");
	assert_string_equal(ladder_destination_pattern(&l, "q", p, 13), "");

	mkladder(&l, LADDER_NAMING_CUTOVER, "delay", 1, 32);
	assert_int_equal(strlen(ladder_wait_pattern(&l, 0, p, sizeof(p))), 65);
	assert_string_equal(ladder_wait_pattern(&l, 31, p, sizeof(p)), "1.#");

	/* The patterns as a broker reads them: level 3 of 6 looks at word 3. */
	mkladder(&l, LADDER_NAMING_CUTOVER, "delay", 1000, 6);
	ladder_wait_pattern(&l, 3, p, sizeof(p));
	assert_true(topic_match(p, "0.0.1.0.0.0.q"));
	assert_false(topic_match(p, "1.1.0.1.1.1.q"));
	ladder_bypass_pattern(&l, 3, p, sizeof(p));
	assert_true(topic_match(p, "1.1.0.1.1.1.q"));
	ladder_destination_pattern(&l, "delivery", p, sizeof(p));
	assert_true(topic_match(p, "0.0.0.0.0.0.delivery"));
	assert_false(topic_match(p, "0.0.0.0.0.0.email.delivery"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_topic_matcher),
		cmocka_unit_test(test_naming_names),
		cmocka_unit_test(test_levels_for),
		cmocka_unit_test(test_levels_for_12d),
		cmocka_unit_test(test_limit),
		cmocka_unit_test(test_init_checks),
		cmocka_unit_test(test_overflow_guards),
		cmocka_unit_test(test_max_and_ttl),
		cmocka_unit_test(test_encode_boundaries),
		cmocka_unit_test(test_entry_level_and_exchange),
		cmocka_unit_test(test_round_trip_all),
		cmocka_unit_test(test_routing_key_examples),
		cmocka_unit_test(test_destinations),
		cmocka_unit_test(test_parse_malformed),
		cmocka_unit_test(test_naming_rows),
		cmocka_unit_test(test_naming_list),
		cmocka_unit_test(test_names_cutover),
		cmocka_unit_test(test_names_kombu),
		cmocka_unit_test(test_names_nservicebus),
		cmocka_unit_test(test_patterns),
		cmocka_unit_test(test_routing_cutover_12),
		cmocka_unit_test(test_routing_other_styles),
		cmocka_unit_test(test_unbound_destination_parks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
