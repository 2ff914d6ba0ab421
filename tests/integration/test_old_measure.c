/* test_old_measure (integration): measure_horizon on real old queues: sixty
 * measured detail by detail, a dead-letter chain counted end to end (by
 * the queues' arguments, or by a policy, whose chain also holds back
 * remove_old), and old queues that expire before their horizon refused. */
#include "itest_old.h"

/* Checks the measured entry of queue NAME. SOURCE "" means "argument". */
static void
check_queue(const json_t *r, const char *name, const char *type, int64_t ttl_ms,
    const char *source, int64_t messages, int64_t consumers)
{
	const json_t *q = iold_entry(r, "queues", name);
	char want[160];

	if (q == NULL)
		fail_msg("queue %s%s not measured", iold_prefix, name);
	assert_string_equal(iold_str_of(q, "type"), type);
	if (ijson_int(q, "ttl_ms") != ttl_ms)
		fail_msg("%s: ttl_ms %lld, expected %lld", name,
		    (long long)ijson_int(q, "ttl_ms"),
		    (long long)ttl_ms);
	if (strncmp(source, "policy:", 7) == 0 || strncmp(source, "operator-policy:", 16) == 0)
		snprintf(want, sizeof(want), "%.*s%s%s", (int)(strchr(source, ':') - source + 1),
		    source, iold_prefix, strchr(source, ':') + 1);
	else
		snprintf(want, sizeof(want), "%s", source);
	if (strcmp(iold_str_of(q, "ttl_source"), want) != 0)
		fail_msg("%s: ttl_source '%s', expected '%s'", name, iold_str_of(q, "ttl_source"),
		    want);
	assert_int_equal(ijson_int(q, "messages"), messages);
	assert_int_equal(ijson_int(q, "consumers"), consumers);
}

/* The sixty old queues m.00 .. m.59 (see test_measure_sixty_old_queues). */
static int64_t
m_ttl(int i)
{
	if (i < 30)
		return (i + 1) * 1000;              /* argument 1s .. 30s */
	if (i < 35)
		return -1;                          /* policy pol-a */
	switch (i) {
	case 35: return 10 * MIN_MS;                /* policy pol-b is lower */
	case 36: return MIN_MS;                     /* operator policy is lower */
	case 37: return 90 * 1000;                  /* with x-expires */
	case 38: return 5 * MIN_MS;                 /* quorum */
	case 39: return 15 * MIN_MS;                /* quorum */
	}
	if (i < 45)
		return 30 * MIN_MS + i * 1000;      /* non-empty */
	if (i == 45)
		return 5000;                        /* has a consumer */
	if (i < 55)
		return i * 7000;
	return -1;                                  /* no TTL at all */
}

static void
test_measure_sixty_old_queues(void **state)
{
	struct plan *p, *p2, *pe;
	struct step_ctx c, c2;
	struct broker *consumer = NULL;
	json_t *r = NULL;
	char name[160], err[2048];
	const json_t *q, *sum;
	int64_t before, after, total = 0;
	int i, tries;

	(void)state;
	iold_set_prefix();
	p = iold_match_plan("m", NULL, "45s");
	itest_ctx_open(&c, p);
	iold_drop_policies(c.mgmt);
	for (i = 0; i < 60; i++) {
		snprintf(name, sizeof(name), "m.%02d", i);
		iold_make_queue(c.amqp, name, m_ttl(i), i == 37 ? HOUR_MS : -1, i == 38 || i == 39);
	}
	/* Similar names outside the selection. */
	iold_make_queue(c.amqp, "m.7", 1000, -1, false);
	iold_make_queue(c.amqp, "m.07x", 1000, -1, false);
	iold_make_queue(c.amqp, "mm.07", 1000, -1, false);
	iold_put_policy(c.mgmt, false, "pol-a", "m\\.3[0-4]$", 45 * 1000);
	iold_put_policy(c.mgmt, false, "pol-b", "m\\.35$", 2 * MIN_MS);
	iold_put_policy(c.mgmt, true, "op", "m\\.36$", 20 * 1000);
	for (i = 40; i < 45; i++) {
		snprintf(name, sizeof(name), "m.%02d", i);
		for (int k = 0; k <= i - 40; k++)
			iold_publish_to(c.amqp, name, "waiting");
		total += i - 40 + 1;
	}
	if (broker_open(getenv("CUTOVER_TEST_AMQP"), getenv("CUTOVER_TEST_USER"),
	    "env:CUTOVER_TEST_PASSWORD", 10000, &consumer, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	snprintf(name, sizeof(name), "%sm.45", iold_prefix);
	assert_int_equal(broker_consume(consumer, name, 1, err, sizeof(err)), 0);

	/* Without max_message_ttl the five queues without a TTL fail it, by name. */
	assert_int_not_equal(step_measure_horizon(&c, &r, err, sizeof(err)), 0);
	for (i = 55; i < 60; i++) {
		snprintf(name, sizeof(name), "'%sm.%02d'", iold_prefix, i);
		if (strstr(err, name) == NULL)
			fail_msg("the error does not name %s: %s", name, err);
	}
	assert_non_null(strstr(err, "old.max_message_ttl"));
	assert_false(json_is_true(json_object_get(r, "ok")));
	assert_int_equal(json_array_size(json_object_get(r, "queues")), 60);
	assert_true(json_is_null(json_object_get(json_object_get(r, "summary"),
	    "horizon_ms")));
	json_decref(r);
	r = NULL;

	/* With it, the measure succeeds. Depth and consumers come from the
	 * management statistics, which lag: wait until they show. */
	p2 = iold_match_plan("m", "3h", "45s");
	c2 = c;
	c2.plan = p2;
	for (tries = 0; ; tries++) {
		before = now_ms();
		if (step_measure_horizon(&c2, &r, err, sizeof(err)) != 0)
			fail_msg("%s", err);
		after = now_ms();
		sum = json_object_get(r, "summary");
		q = iold_entry(r, "queues", "m.45");
		if (ijson_int(sum, "total_messages") == total && q != NULL &&
		    ijson_int(q, "consumers") == 1)
			break;
		if (tries == 40)
			fail_msg("statistics never showed %lld messages and the consumer",
			    (long long)total);
		json_decref(r);
		sleep(1);
	}
	assert_true(json_is_true(json_object_get(r, "ok")));
	assert_int_equal(json_array_size(json_object_get(r, "queues")), 60);
	assert_null(iold_entry(r, "queues", "m.7"));
	assert_null(iold_entry(r, "queues", "m.07x"));
	assert_null(iold_entry(r, "queues", "mm.07"));
	for (i = 0; i < 60; i++) {
		int64_t ttl = m_ttl(i), msgs = i >= 40 && i < 45 ? i - 40 + 1 : 0;
		const char *src = "argument", *type = i == 38 || i == 39 ? "quorum" : "classic";

		if (i >= 30 && i < 35) {
			ttl = 45 * 1000;
			src = "policy:pol-a";
		} else if (i == 35) {
			ttl = 2 * MIN_MS;
			src = "policy:pol-b";
		} else if (i == 36) {
			ttl = 20 * 1000;
			src = "operator-policy:op";
		} else if (i >= 55) {
			ttl = 3 * HOUR_MS;
			src = "max_message_ttl";
		}
		snprintf(name, sizeof(name), "m.%02d", i);
		check_queue(r, name, type, ttl, src, msgs, i == 45 ? 1 : 0);
		q = iold_entry(r, "queues", name);
		if (i == 37)
			assert_int_equal(ijson_int(q, "expires_ms"), HOUR_MS);
		else
			assert_true(json_is_null(json_object_get(q, "expires_ms")));
	}
	/* The notes. */
	assert_non_null(strstr(iold_str_of(iold_entry(r, "queues", "m.45"), "note"),
	    "has 1 consumer: probably not a delay queue"));
	assert_non_null(strstr(iold_str_of(iold_entry(r, "queues", "m.35"), "note"),
	    "message-ttl 2m is lower than its x-message-ttl 10m"));
	assert_non_null(strstr(iold_str_of(iold_entry(r, "queues", "m.36"), "note"),
	    "lowers its TTL to 20s"));
	assert_non_null(strstr(iold_str_of(iold_entry(r, "queues", "m.37"), "note"),
	    "expires after 1h unused"));
	assert_non_null(strstr(iold_str_of(iold_entry(r, "queues", "m.57"), "note"),
	    "old.max_message_ttl (3h)"));
	assert_true(json_is_null(json_object_get(iold_entry(r, "queues", "m.00"), "note")));
	/* The summary and the horizon. */
	sum = json_object_get(r, "summary");
	assert_int_equal(ijson_int(sum, "queues"), 60);
	assert_int_equal(ijson_int(sum, "non_empty"), 5);
	assert_int_equal(ijson_int(sum, "total_messages"), total);
	assert_int_equal(ijson_int(sum, "max_ttl_ms"), 3 * HOUR_MS);
	snprintf(name, sizeof(name), "%sm.55", iold_prefix);
	assert_string_equal(iold_str_of(sum, "max_ttl_queue"), name);
	assert_true(ijson_int(sum, "measured_at_ms") >= before &&
	    ijson_int(sum, "measured_at_ms") <= after);
	assert_int_equal(ijson_int(sum, "allowance_ms"), 45 * 1000);
	assert_int_equal(ijson_int(sum, "horizon_ms"), ijson_int(sum, "measured_at_ms") +
	    3 * HOUR_MS + 45 * 1000);
	assert_non_null(strstr(iold_str_of(sum, "reasoning"), "60 old queues, 5 non-empty "
	    "holding 15 messages; the largest TTL is 3h"));
	assert_non_null(strstr(iold_str_of(sum, "reasoning"), "+ 3h + allowance 45s"));
	/* The engine's re-evaluation from the last entry into the old path. */
	assert_int_equal(old_horizon_ms(r, 1000000, 45 * 1000), 1000000 + 3 * HOUR_MS +
	    45 * 1000);
	assert_int_equal(old_horizon_ms(r, 0, 45 * 1000), -1);
	json_decref(r);
	r = NULL;

	/* An empty selection is an error, not a horizon of zero. */
	pe = iold_match_plan("none", "3h", "45s");
	c2.plan = pe;
	assert_int_not_equal(step_measure_horizon(&c2, &r, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "selects no queue"));
	json_decref(r);

	broker_close(consumer);
	iold_drop_policies(c.mgmt);
	for (i = 0; i < 60; i++) {
		snprintf(name, sizeof(name), "m.%02d", i);
		iold_drop_queue(c.amqp, name);
	}
	iold_drop_queue(c.amqp, "m.7");
	iold_drop_queue(c.amqp, "m.07x");
	iold_drop_queue(c.amqp, "mm.07");
	step_ctx_close(&c);
	plan_free(p);
	plan_free(p2);
	plan_free(pe);
}

/* Declares PREFIX NAME (classic, TTL_MS) dead-lettering to exchange DLX
 * (PREFIX added unless "") with routing key PREFIX DLRK. */
static void
make_dl_queue(struct broker *b, const char *name, int64_t ttl_ms, const char *dlx,
    const char *dlrk)
{
	struct topology_arg a[3];
	char full[128], err[1024];

	memset(a, 0, sizeof(a));
	snprintf(full, sizeof(full), "%s%s", iold_prefix, name);
	snprintf(a[0].key, sizeof(a[0].key), "x-dead-letter-exchange");
	snprintf(a[0].str, sizeof(a[0].str), "%s%s", *dlx ? iold_prefix : "", dlx);
	snprintf(a[1].key, sizeof(a[1].key), "x-dead-letter-routing-key");
	snprintf(a[1].str, sizeof(a[1].str), "%s%s", iold_prefix, dlrk);
	snprintf(a[2].key, sizeof(a[2].key), "x-message-ttl");
	a[2].is_int = true;
	a[2].num = ttl_ms;
	if (broker_queue_declare(b, full, true, a, 3, err, sizeof(err)) != 0)
		fail_msg("declaring %s: %s", full, err);
}

static void
bind_to_dlx(struct broker *b, const char *name)
{
	char full[128], x[128], err[1024];

	snprintf(full, sizeof(full), "%s%s", iold_prefix, name);
	snprintf(x, sizeof(x), "%sd-dlx", iold_prefix);
	if (broker_queue_bind(b, full, x, full, err, sizeof(err)) != 0)
		fail_msg("binding %s: %s", full, err);
}

/* Old queue A (TTL 1 s) dead-letters through an exchange
 * into old queue B (TTL 2 s): a message that entered A comes out of B up
 * to 3 s later, so the horizon counts 3 s, the result records the chain,
 * and B is not deleted while A is there. A cycle has no horizon. */
static void
test_dead_letter_chain(void **state)
{
	struct plan *p, *pc;
	struct step_ctx c, c2;
	struct broker *consumer = NULL;
	json_t *measured = NULL, *r = NULL;
	const json_t *e, *sum;
	char x[128], full[128], err[4096];

	iold_set_prefix();
	static struct made made = { .queues = { "d.00", "d.01", "dc.00", "dc.01" },
	    .exchange = "d-dlx" };

	p = iold_match_plan("d", NULL, "30s");
	made.p = p;
	*state = &made;
	itest_ctx_open(&c, p);
	snprintf(x, sizeof(x), "%sd-dlx", iold_prefix);
	if (broker_exchange_declare(c.amqp, x, "direct", true, NULL, 0, err,
	    sizeof(err)) != 0)
		fail_msg("%s", err);
	make_dl_queue(c.amqp, "d.00", 1000, "d-dlx", "d.01");
	make_dl_queue(c.amqp, "d.01", 2000, "", "dest");
	bind_to_dlx(c.amqp, "d.01");
	iold_touch_all(&c, "d", 2, 2);

	if (step_measure_horizon(&c, &measured, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	sum = json_object_get(measured, "summary");
	if (ijson_int(sum, "max_ttl_ms") != 3000)
		fail_msg("the horizon counts %lld ms of TTL, not the 3000 of the chain "
		    "d.00 -> d.01", (long long)ijson_int(sum, "max_ttl_ms"));
	snprintf(full, sizeof(full), "%sd.01", iold_prefix);
	assert_string_equal(iold_str_of(sum, "max_ttl_queue"), full);
	assert_int_equal(ijson_int(sum, "horizon_ms"), ijson_int(sum, "measured_at_ms") +
	    3000 + 30 * 1000);
	assert_int_equal(old_horizon_ms(measured, 1000000, 30 * 1000),
	    1000000 + 3000 + 30 * 1000);
	e = iold_entry(measured, "queues", "d.01");
	assert_int_equal(ijson_int(e, "chain_ttl_ms"), 3000);
	assert_int_equal(json_array_size(json_object_get(e, "fed_by")), 1);
	snprintf(full, sizeof(full), "%sd.00", iold_prefix);
	assert_string_equal(json_string_value(json_array_get(json_object_get(e,
	    "fed_by"), 0)), full);
	e = iold_entry(measured, "queues", "d.00");
	assert_int_equal(ijson_int(e, "chain_ttl_ms"), 1000);
	assert_int_equal(json_array_size(json_object_get(e, "dead_letters_to")), 1);

	/* A stays (it has a consumer): B is not deleted while A can feed it. */
	if (broker_open(getenv("CUTOVER_TEST_AMQP"), getenv("CUTOVER_TEST_USER"),
	    "env:CUTOVER_TEST_PASSWORD", 10000, &consumer, err, sizeof(err)) != 0 ||
	    broker_consume(consumer, full, 1, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	c.measured = measured;
	c.old_last_entry_ms = now_ms() - 10 * MIN_MS;
	assert_int_not_equal(step_remove_old(&c, &r, err, sizeof(err)), 0);
	assert_string_equal(iold_outcome(r, "d.00"), "left");
	e = iold_entry(r, "entries", "d.01");
	assert_string_equal(iold_str_of(e, "outcome"), "left");
	assert_non_null(strstr(iold_str_of(e, "reason"), "dead-letters into it"));
	assert_true(iold_exists(c.amqp, "d.01", NULL));
	json_decref(r);
	broker_close(consumer);

	/* A cycle: dc.00 and dc.01 dead-letter into each other. */
	make_dl_queue(c.amqp, "dc.00", 1000, "d-dlx", "dc.01");
	make_dl_queue(c.amqp, "dc.01", 1000, "d-dlx", "dc.00");
	bind_to_dlx(c.amqp, "dc.00");
	bind_to_dlx(c.amqp, "dc.01");
	pc = iold_match_plan("dc", NULL, "30s");
	c2 = c;
	c2.plan = pc;
	json_decref(measured);
	measured = NULL;
	assert_int_not_equal(step_measure_horizon(&c2, &measured, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "dead-letter cycle"));
	assert_true(json_is_null(json_object_get(json_object_get(measured, "summary"),
	    "horizon_ms")));
	json_decref(measured);
	plan_free(pc);
	step_ctx_close(&c);
}

/* Old queue A (TTL 2 s, no dead-letter argument) dead-letters by its
 * policy's dead-letter-exchange and dead-letter-routing-key into old queue
 * B (TTL 1 s), which dead-letters to a destination: the horizon counts the
 * 3 s chain, and while A holds a message remove_old keeps B (it waits,
 * named as fed by A), so that message reaches the destination. */
static void
test_policy_dead_letter_chain(void **state)
{
	static struct made made = { .queues = { "pd.00", "pd.01", "pd.dest" },
	    .exchange = "pd-dlx" };
	struct step_ctx c;
	struct topology_arg ttl;
	struct broker_delivery d;
	json_t *measured = NULL, *r = NULL, *def;
	const json_t *e;
	char a[128], b[128], x[128], dest[128], err[4096];
	int64_t until;

	iold_policy_start(state, &made, "pd", &c, dest, sizeof(dest));
	snprintf(a, sizeof(a), "%spd.00", iold_prefix);
	snprintf(b, sizeof(b), "%spd.01", iold_prefix);
	snprintf(x, sizeof(x), "%spd-dlx", iold_prefix);
	if (broker_exchange_declare(c.amqp, x, "direct", true, NULL, 0, err,
	    sizeof(err)) != 0)
		fail_msg("%s", err);
	itest_arg_int(&ttl, "x-message-ttl", 2000);
	if (broker_queue_declare(c.amqp, a, true, &ttl, 1, err, sizeof(err)) != 0)
		fail_msg("declaring %s: %s", a, err);
	make_dl_queue(c.amqp, "pd.01", 1000, "", "pd.dest");
	if (broker_queue_bind(c.amqp, b, x, b, err, sizeof(err)) != 0)
		fail_msg("binding %s: %s", b, err);
	def = json_pack("{s:s,s:s}", "dead-letter-exchange", x,
	    "dead-letter-routing-key", b);
	iold_policy_on(c.mgmt, "pol-pd", "pd.00", def);
	json_decref(def);
	iold_touch_all(&c, "pd", 2, 2);

	if (step_measure_horizon(&c, &measured, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	e = iold_entry(measured, "queues", "pd.01");
	if (ijson_int(json_object_get(measured, "summary"), "max_ttl_ms") != 3000 ||
	    json_array_size(json_object_get(e, "fed_by")) != 1)
		fail_msg("the horizon counts %lld ms of TTL and pd.01 is fed by %zu "
		    "queue(s), not 3000 ms and 1 (pd.00): pd.00 dead-letters into "
		    "pd.01 by its policy %s, a chain of 2 s + 1 s",
		    (long long)ijson_int(json_object_get(measured, "summary"), "max_ttl_ms"),
		    json_array_size(json_object_get(e, "fed_by")), made.policy);
	assert_string_equal(json_string_value(json_array_get(json_object_get(e,
	    "fed_by"), 0)), a);
	assert_int_equal(ijson_int(e, "chain_ttl_ms"), 3000);

	/* A message in A past the deadline: A waits for it to come out, and so
	 * does B, which it goes through next. */
	iold_publish_to(c.amqp, "pd.00", "through the chain");
	c.measured = measured;
	c.old_last_entry_ms = now_ms() - 10 * MIN_MS;
	(void)step_remove_old(&c, &r, err, sizeof(err));
	assert_string_equal(iold_outcome(r, "pd.00"), "waiting");
	e = iold_entry(r, "entries", "pd.01");
	if (strcmp(iold_str_of(e, "outcome"), "waiting") != 0 ||
	    strstr(iold_str_of(e, "reason"), a) == NULL)
		fail_msg("pd.01 is '%s' (%s) while pd.00, which dead-letters into it by "
		    "its policy, holds a message: it must wait for pd.00",
		    iold_str_of(e, "outcome"), iold_str_of(e, "reason"));
	assert_non_null(strstr(iold_str_of(e, "reason"), "dead-letters into it"));
	assert_true(iold_exists(c.amqp, "pd.01", NULL));
	json_decref(r);

	/* Nothing lost: the message comes out of A, then B, into the
	 * destination. */
	for (until = now_ms() + 20000; ; itest_sleep_ms(250)) {
		int rc = broker_get(c.amqp, dest, false, &d, err, sizeof(err));

		if (rc == 0)
			break;
		if (rc != BROKER_EMPTY || now_ms() > until)
			fail_msg("the message published into pd.00 never reached %s through "
			    "pd.01 (%s): lost on the way", dest, rc == BROKER_EMPTY ?
			    "still empty after 20 s" : err);
	}
	assert_string_equal(d.body, "through the chain");
	broker_delivery_free(&d);
	json_decref(measured);
	step_ctx_close(&c);
}

/* measure_horizon refuses old queues that expire (x-expires, or a policy's
 * expires) sooner than their horizon (TTL + allowance), naming each; one
 * that expires later is fine; old.allow_expiring: true turns the refusal
 * into warnings in the result. */
static void
test_expiring_old_queues_are_refused(void **state)
{
	struct plan *p, *pa;
	struct step_ctx c;
	json_t *r = NULL, *def;
	char old[512], pname[128], pattern[160], err[2048], full[128];
	const json_t *w;
	int64_t until;
	size_t i;
	int rc, nw = 0;

	(void)state;
	iold_set_prefix();
	p = iold_match_plan("x", NULL, "1s");
	itest_ctx_open(&c, p);
	iold_make_queue(c.amqp, "x.00", 10000, 5000, false);	/* expires first */
	iold_make_queue(c.amqp, "x.01", 10000, -1, false);	/* a policy's expires */
	iold_make_queue(c.amqp, "x.02", 10000, 60000, false); /* expires later: fine */
	/* No shorter than its TTL, as libraries declare them: fine, noted. */
	iold_make_queue(c.amqp, "x.03", 10000, 10500, false);
	snprintf(pname, sizeof(pname), "%spol-x", iold_prefix);
	snprintf(pattern, sizeof(pattern), "^%sx\\.01$", iold_rprefix);
	def = json_pack("{s:I}", "expires", (json_int_t)3000);
	assert_int_equal(mgmt_put_policy(c.mgmt, pname, pattern, "queues", 9, def, err,
	    sizeof(err)), 0);
	json_decref(def);

	/* The policy shows on the queue within seconds. */
	until = now_ms() + 30000;
	for (;;) {
		rc = step_measure_horizon(&c, &r, err, sizeof(err));
		assert_non_null(r);
		json_decref(r);
		r = NULL;
		snprintf(full, sizeof(full), "'%sx.01'", iold_prefix);
		if (rc != 0 && strstr(err, full) != NULL)
			break;
		if (now_ms() > until)
			fail_msg("measure_horizon did not refuse x.01 (rc %d): %s", rc,
			    rc ? err : "it succeeded");
		itest_sleep_ms(500);
	}
	fprintf(stderr, "# measure_horizon: %s\n", err);
	snprintf(full, sizeof(full), "'%sx.00' (expires after 5s, horizon 11s)", iold_prefix);
	assert_non_null(strstr(err, full));
	assert_non_null(strstr(err, "2 old queues expire sooner than their horizon"));
	assert_non_null(strstr(err, "old.allow_expiring"));
	snprintf(full, sizeof(full), "%sx.02", iold_prefix);
	assert_null(strstr(err, full));
	snprintf(full, sizeof(full), "%sx.03", iold_prefix);
	assert_null(strstr(err, full));

	/* Allowed: it succeeds, each one recorded as a warning. */
	snprintf(old, sizeof(old), "  queues: { match: '^%sx\\.[0-9]{2}$' }\n"
	    "  allow_expiring: true\n", iold_rprefix);
	pa = iold_load_plan(old, "1s");
	c.plan = pa;
	if (step_measure_horizon(&c, &r, err, sizeof(err)) != 0)
		fail_msg("measure_horizon with old.allow_expiring: %s", err);
	json_array_foreach(json_object_get(r, "warnings"), i, w) {
		const char *q = json_string_value(json_object_get(w, "queue"));

		assert_string_equal(json_string_value(json_object_get(w, "kind")),
		    "old_expiring");
		assert_non_null(strstr(json_string_value(json_object_get(w, "message")),
		    "sooner than its horizon"));
		assert_true(strstr(q, "x.00") != NULL || strstr(q, "x.01") != NULL);
		nw++;
	}
	assert_int_equal(nw, 2);
	w = iold_entry(r, "queues", "x.03");
	assert_non_null(strstr(iold_str_of(w, "note"), "no shorter than its TTL"));
	json_decref(r);

	/* A quorum queue with an expiry is refused whatever its length: its
	 * expiry is never renewed by declaring it again. */
	iold_make_queue(c.amqp, "x.04", 10000, HOUR_MS, true);
	c.plan = p;
	assert_int_not_equal(step_measure_horizon(&c, &r, err, sizeof(err)), 0);
	fprintf(stderr, "# measure_horizon: %s\n", err);
	snprintf(full, sizeof(full), "'%sx.04' (quorum, expires after 1h", iold_prefix);
	assert_non_null(strstr(err, full));
	assert_non_null(strstr(err, "never renews a quorum queue's expiry"));
	json_decref(r);
	c.plan = p;
	step_ctx_close(&c);
	plan_free(pa);
	plan_free(p);
}

ITEST_MAIN(itest_main,
	cmocka_unit_test(test_measure_sixty_old_queues),
	cmocka_unit_test_teardown(test_expiring_old_queues_are_refused,
	    iold_expiring_teardown),
	cmocka_unit_test_teardown(test_dead_letter_chain, iold_made_teardown),
	cmocka_unit_test_teardown(test_policy_dead_letter_chain, iold_made_teardown))
