/* test_ladder_routing: a routing model, built only from ladder_ functions
 * and an AMQP topic matcher written independently of the ladder, proving
 * that every delay arrives at its destination on time in every naming
 * style, that a destination no binding reaches parks, and that the
 * ladder's binding patterns match the keys they must. */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm.h"
#include "duration.h"
#include "ladder.h"
#include "lt.h"

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
	lt_ladder(&l, LADDER_NAMING_CUTOVER, "delay", 1000, 12);
	route_all(&l, 1);	/* every n in [0, 4095] */
}

static void
test_routing_other_styles(void **state)
{
	struct ladder l;

	(void)state;
	lt_ladder(&l, LADDER_NAMING_KOMBU, NULL, 1000, 6);
	route_all(&l, 1);
	lt_ladder(&l, LADDER_NAMING_NSERVICEBUS, NULL, 250, 6);
	route_all(&l, 1);
	lt_ladder(&l, LADDER_NAMING_CUTOVER, "a.b-c_d", 7, 1);
	route_all(&l, 1);
	/* The libraries' full 28 levels, sampled, ending at the maximum. */
	lt_ladder(&l, LADDER_NAMING_KOMBU, NULL, 1000, 28);
	route_all(&l, 999983);
	lt_ladder(&l, LADDER_NAMING_NSERVICEBUS, NULL, 1000, 28);
	route_all(&l, 999983);
	lt_ladder(&l, LADDER_NAMING_CUTOVER, "delay", 1, 32);
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
	lt_ladder(&l, LADDER_NAMING_CUTOVER, "delay", 1000, 12);
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
		lt_ladder(&l, n, "p", 1000, 6);
		lt_ladder(&q, n, "q", 1000, 6);
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
			lt_ladder(&q, n, NULL, 1000, 6);
			ladder_level_exchange(&q, 0, other, sizeof(other));
			assert_string_equal(lv0 + strlen(start), other);
			lt_ladder(&q, n, "", 1000, 6);
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

static void
test_patterns(void **state)
{
	char p[LADDER_NAME_MAX];
	struct ladder l;

	(void)state;
	lt_ladder(&l, LADDER_NAMING_CUTOVER, "delay", 1000, 6);
	assert_string_equal(ladder_destination_pattern(&l, "email.delivery", p,
	    sizeof(p)), "*.*.*.*.*.*.email.delivery");
	assert_string_equal(ladder_destination_pattern(&l, "q", p, sizeof(p)),
	    "*.*.*.*.*.*.q");
	assert_string_equal(ladder_destination_pattern(&l, "a..b", p, sizeof(p)), "");
	assert_string_equal(ladder_destination_pattern(&l, "#", p, sizeof(p)), "");
	assert_string_equal(ladder_destination_pattern(&l, NULL, p, sizeof(p)), "");
	assert_string_equal(ladder_destination_pattern(&l, "q", p, 14), "*.*.*.*.*.*.q");
	assert_string_equal(ladder_destination_pattern(&l, "q", p, 13), "");

	lt_ladder(&l, LADDER_NAMING_CUTOVER, "delay", 1, 32);
	assert_int_equal(strlen(ladder_wait_pattern(&l, 0, p, sizeof(p))), 65);
	assert_string_equal(ladder_wait_pattern(&l, 31, p, sizeof(p)), "1.#");

	/* The patterns as a broker reads them: level 3 of 6 looks at word 3. */
	lt_ladder(&l, LADDER_NAMING_CUTOVER, "delay", 1000, 6);
	ladder_wait_pattern(&l, 3, p, sizeof(p));
	assert_true(topic_match(p, "0.0.1.0.0.0.q"));
	assert_false(topic_match(p, "1.1.0.1.1.1.q"));
	ladder_bypass_pattern(&l, 3, p, sizeof(p));
	assert_true(topic_match(p, "1.1.0.1.1.1.q"));
	ladder_destination_pattern(&l, "delivery", p, sizeof(p));
	assert_true(topic_match(p, "0.0.0.0.0.0.delivery"));
	assert_false(topic_match(p, "0.0.0.0.0.0.email.delivery"));
}

CM_MAIN(NULL, NULL,
	cmocka_unit_test(test_topic_matcher),
	cmocka_unit_test(test_naming_rows),
	cmocka_unit_test(test_patterns),
	cmocka_unit_test(test_routing_cutover_12),
	cmocka_unit_test(test_routing_other_styles),
	cmocka_unit_test(test_unbound_destination_parks))
