/* test_library_ladder (integration): the kombu and nservicebus namings
 * against the libraries' own declarations on a real RabbitMQ node
 * (CUTOVER_TEST_AMQP, CUTOVER_TEST_MGMT, CUTOVER_TEST_USER, password
 * env:CUTOVER_TEST_PASSWORD). "The library" here is a second AMQP
 * connection making exactly the declare calls Kombu's
 * native_delayed_delivery.py and NServiceBus's DelayInfrastructure.cs make
 * (DESIGN.md §3), written out from those facts, not from cutover's ladder
 * code: the library declares before cutover (adoption) and after it (a
 * worker restart), and neither side gets a 406. Each test runs in a vhost
 * of its own, deleted at teardown whatever happens. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "clock.h"
#include "itest_broker.h"
#include "itest_plan.h"
#include "itest_run.h"
#include "ladder.h"
#include "plan.h"
#include "step.h"
#include "topology.h"

#define LIB_LEVELS 28

/* One library's ladder as the library names and declares it. */
struct library {
	const char *naming;           /* the plan's ladder.naming */
	const char *level;            /* level K's exchange and queue: this, then K */
	int digits;                   /* K zero padded to this many digits */
	const char *delivery;
	const char *parking;          /* what cutover adds */
	const char *dest_type;        /* type of the exchange a destination is reached by */
	bool dest_by_key;             /* that exchange -> queue with the key (else "") */
};

static const struct library kombu = {
	"kombu", "celery_delayed_", 0, "celery_delayed_delivery", "celery_delayed_parking",
	"topic", true,
};
static const struct library nsb = {
	"nservicebus", "nsb.v2.delay-level-", 2, "nsb.v2.delay-delivery",
	"nsb.v2.delay-parking", "fanout", false,
};

/* The destination every test's plan lists: a task queue (Kombu) or an
 * endpoint's input queue (NServiceBus), reached by an exchange of the
 * same name as the library binds it. */
#define DEST "itest.email"

static char vhost_url[512];

static int
vhost_setup(void **state)
{
	(void)state;
	itest_vhost_next("lib", vhost_url, sizeof(vhost_url));
	return 0;
}

/* Loads a plan on the test's vhost: LIB's naming, 28 levels, the one
 * destination DEST. */
static struct plan *
lib_plan(const struct library *lib)
{
	struct itest_plan b;

	itest_plan_begin(&b, "itest-library", vhost_url);
	itest_plan_addf(&b,
	    "old:\n"
	    "  queues: { names: [itest.none] }\n"
	    "ladder:\n"
	    "  naming: %s\n"
	    "  levels: 28\n"
	    "  queue_type: quorum\n"
	    "  destinations: [" DEST "]\n"
	    "steps: [declare_ladder, verify_ladder]\n", lib->naming);
	return itest_plan_load("itest.yaml", b.text);
}

static void
arg_s(struct topology_arg *a, size_t *n, const char *key, const char *val)
{
	memset(&a[*n], 0, sizeof(a[*n]));
	snprintf(a[*n].key, sizeof(a[*n].key), "%s", key);
	snprintf(a[*n].str, sizeof(a[*n].str), "%s", val);
	(*n)++;
}

static void
arg_i(struct topology_arg *a, size_t *n, const char *key, int64_t val)
{
	memset(&a[*n], 0, sizeof(a[*n]));
	snprintf(a[*n].key, sizeof(a[*n].key), "%s", key);
	a[*n].is_int = true;
	a[*n].num = val;
	(*n)++;
}

/* "*." N times, then TAIL. */
static char *
stars(int n, const char *tail, char *out, size_t outlen)
{
	size_t off = 0;

	out[0] = '\0';
	for (int i = 0; i < n && off + 2 < outlen; i++)
		off += (size_t)snprintf(out + off, outlen - off, "*.");
	snprintf(out + off, outlen - off, "%s", tail);
	return out;
}

/* Level K's exchange and queue name (NAME) and the exchange it dead-letters
 * into (NEXT), 64 bytes each, as LIB names them. */
static void
level_names(const struct library *lib, int k, char *name, char *next)
{
	snprintf(name, 64, "%s%0*d", lib->level, lib->digits, k);
	if (k == 0)
		snprintf(next, 64, "%s", lib->delivery);
	else
		snprintf(next, 64, "%s%0*d", lib->level, lib->digits, k - 1);
}

#define LIB_OK(call, what) do { \
	if ((call) != 0) \
		fail_msg("the library's declare of %s failed (AMQP reply %d): %s", \
		    (what), broker_reply_code(b), err); \
} while (0)

/* Makes the library's declare calls, on a connection of its own (returned;
 * the caller closes it with broker_close), as a
 * worker start (Kombu) or an endpoint installer run and a delayed send
 * (NServiceBus) does: every level's exchange (topic, durable, no
 * arguments), queue (quorum, reject-publish, TTL 2^K s, dead-lettering at
 * least once into the level below or the delivery exchange) and two
 * bindings, the delivery exchange (topic, durable, no arguments), and the
 * destination's own exchange, queue and bindings. Fails the test on any
 * refusal (a 406 is the bug this file is about). */
static struct broker *
library_start(const struct library *lib)
{
	struct broker *b = NULL;
	struct topology_arg args[6];
	char err[1024], name[64], next[64], key[128];
	size_t n;

	if (broker_open(vhost_url, getenv("CUTOVER_TEST_USER"), "env:CUTOVER_TEST_PASSWORD",
	    10000, &b, err, sizeof(err)) != 0)
		fail_msg("the library cannot connect: %s", err);
	for (int k = LIB_LEVELS - 1; k >= 0; k--) {
		level_names(lib, k, name, next);
		LIB_OK(broker_exchange_declare(b, name, "topic", true, NULL, 0, err,
		    sizeof(err)), name);
		n = 0;
		arg_s(args, &n, "x-queue-type", "quorum");
		arg_s(args, &n, "x-overflow", "reject-publish");
		arg_i(args, &n, "x-message-ttl", ((int64_t)1 << k) * 1000);
		arg_s(args, &n, "x-dead-letter-exchange", next);
		arg_s(args, &n, "x-dead-letter-strategy", "at-least-once");
		LIB_OK(broker_queue_declare(b, name, true, args, n, err, sizeof(err)), name);
		LIB_OK(broker_queue_bind(b, name, name,
		    stars(LIB_LEVELS - 1 - k, "1.#", key, sizeof(key)), err, sizeof(err)), name);
	}
	LIB_OK(broker_exchange_declare(b, lib->delivery, "topic", true, NULL, 0, err,
	    sizeof(err)), lib->delivery);
	for (int k = LIB_LEVELS - 1; k >= 0; k--) {
		level_names(lib, k, name, next);
		LIB_OK(broker_exchange_bind(b, next, name,
		    stars(LIB_LEVELS - 1 - k, "0.#", key, sizeof(key)), err, sizeof(err)), name);
	}
	/* The destination: its queue, the exchange of its name, and the
	 * delivery exchange bound to that exchange by suffix. */
	LIB_OK(broker_exchange_declare(b, DEST, lib->dest_type, true, NULL, 0, err,
	    sizeof(err)), DEST);
	n = 0;
	arg_s(args, &n, "x-queue-type", "quorum");
	LIB_OK(broker_queue_declare(b, DEST, true, args, n, err, sizeof(err)), DEST);
	LIB_OK(broker_queue_bind(b, DEST, DEST, lib->dest_by_key ? DEST : "", err,
	    sizeof(err)), DEST);
	LIB_OK(broker_exchange_bind(b, DEST, lib->delivery, "#." DEST, err, sizeof(err)),
	    lib->delivery);
	return b;
}

/* library_start, for a worker that then stops. */
static void
library_declare(const struct library *lib)
{
	broker_close(library_start(lib));
}

/* Runs verify_ladder and returns how many objects it reports with STATUS
 * (NULL: neither "ok" nor "warning", each printed). *DETAIL (if not NULL)
 * gets "NAME: STATUS: DETAIL" of the first of them whose name contains
 * NAME (NULL: any). */
static int
verify_count(struct step_ctx *c, const char *status, const char *name, char *detail,
    size_t detaillen)
{
	json_t *r = NULL, *o;
	char err[1024];
	size_t i;
	int n = 0;

	step_verify_ladder(c, &r, err, sizeof(err));
	assert_non_null(r);
	if (detail != NULL)
		detail[0] = '\0';
	json_array_foreach(json_object_get(r, "objects"), i, o) {
		const char *st = json_string_value(json_object_get(o, "status"));
		const char *on = json_string_value(json_object_get(o, "name"));
		const char *d = json_string_value(json_object_get(o, "detail"));

		if (status != NULL ? strcmp(st, status) != 0 :
		    strcmp(st, "ok") == 0 || strcmp(st, "warning") == 0)
			continue;
		if (status == NULL)
			fprintf(stderr, "# verify: %s %s %s: %s\n", st,
			    json_string_value(json_object_get(o, "kind")), on, d);
		if (detail != NULL && detail[0] == '\0' && (name == NULL || strstr(on, name)))
			snprintf(detail, detaillen, "%s: %s: %s", on, st, d);
		n++;
	}
	json_decref(r);
	return n;
}

/* Runs verify and fails the test unless every object is ok. */
static void
verify_ok(struct step_ctx *c)
{
	int nbad = verify_count(c, NULL, NULL, NULL, 0);

	if (nbad != 0)
		fail_msg("verify_ladder: %d objects not ok (listed above)", nbad);
}

#define declare_ok(c) itest_step_ok(step_declare_ladder, (c))
#define open_ctx itest_ctx_open

/* The library came first (cutover adopts its ladder, its worker running
 * and consuming), then cutover declares, then the library starts again. */
static void
library_first(const struct library *lib)
{
	struct plan *p = lib_plan(lib);
	struct step_ctx c;
	struct broker *worker = library_start(lib);
	struct broker_queue_info qi;
	char detail[1024], err[512];

	if (broker_consume(worker, DEST, 1, err, sizeof(err)) != 0)
		fail_msg("the worker cannot consume: %s", err);
	open_ctx(&c, p);
	/* Before cutover declares: what it adds is missing (parking exchange,
	 * queue and binding, the policy), the delivery exchange has no
	 * alternate exchange yet, and the library's destination binding stands
	 * for cutover's. */
	assert_int_equal(verify_count(&c, "missing", NULL, NULL, 0), 4);
	assert_int_equal(verify_count(&c, "drift", NULL, detail, sizeof(detail)), 1);
	assert_non_null(strstr(detail, "no policy applies to it"));
	assert_int_equal(verify_count(&c, "warning", "-> queue " DEST, detail,
	    sizeof(detail)), 2);
	fprintf(stderr, "# %s\n", detail);
	declare_ok(&c);
	verify_ok(&c);
	/* The library's own destination shape is accepted, with a warning. */
	assert_int_equal(verify_count(&c, "warning", NULL, detail, sizeof(detail)), 1);
	fprintf(stderr, "# %s\n", detail);
	assert_non_null(strstr(detail, lib->delivery));
	assert_non_null(strstr(detail, "'#." DEST "'"));
	assert_non_null(strstr(detail, "suffix"));
	/* The worker kept consuming through it all. */
	assert_int_equal(broker_queue_inspect(c.amqp, DEST, &qi, err, sizeof(err)), 0);
	assert_int_equal(qi.consumers, 1);
	broker_close(worker);
	library_declare(lib);	/* a worker restart */
	verify_ok(&c);
	declare_ok(&c);		/* cutover's declare is idempotent over it */
	verify_ok(&c);
	step_ctx_close(&c);
	plan_free(p);
}

/* Cutover came first; the library's declares (a worker start) then
 * succeed with no 406, and cutover declares again. */
static void
cutover_first(const struct library *lib)
{
	struct plan *p = lib_plan(lib);
	struct step_ctx c;
	char err[512];

	open_ctx(&c, p);
	/* The destination queue exists (its consumers own it). */
	if (broker_queue_declare(c.amqp, DEST, true,
	    &(struct topology_arg){ .key = "x-queue-type", .str = "quorum" }, 1,
	    err, sizeof(err)) != 0)
		fail_msg("declaring the destination queue: %s", err);
	declare_ok(&c);
	verify_ok(&c);
	library_declare(lib);
	verify_ok(&c);
	declare_ok(&c);
	verify_ok(&c);
	step_ctx_close(&c);
	plan_free(p);
}

static void
test_kombu_library_first(void **state)
{
	(void)state;
	library_first(&kombu);
}

static void
test_kombu_cutover_first(void **state)
{
	(void)state;
	cutover_first(&kombu);
}

static void
test_nservicebus_library_first(void **state)
{
	(void)state;
	library_first(&nsb);
}

static void
test_nservicebus_cutover_first(void **state)
{
	(void)state;
	cutover_first(&nsb);
}

/* Kombu's ladder as its worker declared it, adopted by cutover (verified):
 * returns the plan, with C open for it. */
static struct plan *
kombu_adopted(struct step_ctx *c)
{
	struct plan *p = lib_plan(&kombu);

	library_declare(&kombu);
	open_ctx(c, p);
	declare_ok(c);
	verify_ok(c);
	return p;
}

/* Puts policy itest-hides-ae, priority 500, with definition DEF (taken)
 * for APPLY_TO on the delivery exchange of C's kombu ladder; verify must
 * then find that one exchange wrong, naming the policy and saying SAYS. */
static void
expect_hidden_by(struct step_ctx *c, const char *apply_to, json_t *def, const char *says)
{
	char err[1024], detail[1024];

	if (mgmt_put_policy(c->mgmt, "itest-hides-ae", "^celery_delayed_delivery$", apply_to,
	    500, def, err, sizeof(err)) != 0)
		fail_msg("putting the hiding policy: %s", err);
	json_decref(def);
	assert_int_equal(verify_count(c, NULL, "celery_delayed_delivery", detail, sizeof(detail)), 1);
	fprintf(stderr, "# %s\n", detail);
	assert_non_null(strstr(detail, "policy 'itest-hides-ae' (priority 500)"));
	if (strstr(detail, says) == NULL)
		fail_msg("verify does not say '%s': %s", says, detail);
}

/* A policy of higher priority that matches the delivery exchange hides
 * cutover's alternate-exchange policy (only one policy applies): verify
 * names it. */
static void
test_hiding_policy_is_named(void **state)
{
	struct plan *p;
	struct step_ctx c;
	char err[1024], detail[1024];

	(void)state;
	p = kombu_adopted(&c);
	/* One that sets no alternate exchange at all (a length limit, for
	 * whatever it matches), and one that sets another. */
	expect_hidden_by(&c, "all", json_pack("{s:i}", "max-length", 100000),
	    "sets no alternate-exchange");
	expect_hidden_by(&c, "exchanges", json_pack("{s:s}", "alternate-exchange",
	    "itest-elsewhere"), "alternate-exchange = itest-elsewhere");
	assert_int_equal(mgmt_delete_policy(c.mgmt, "itest-hides-ae", err, sizeof(err)), 0);
	/* Without cutover's own policy, nothing gives it one. */
	assert_int_equal(mgmt_delete_policy(c.mgmt, "cutover.ae.celery_delayed_delivery",
	    err, sizeof(err)), 0);
	assert_int_equal(verify_count(&c, NULL, "celery_delayed_delivery", detail, sizeof(detail)), 2);
	fprintf(stderr, "# %s\n", detail);
	assert_non_null(strstr(detail, "no policy applies to it"));
	declare_ok(&c);
	verify_ok(&c);
	step_ctx_close(&c);
	plan_free(p);
}

/* A library-shaped binding ("#.KEY" from the delivery exchange) to an
 * exchange that routes KEY to no queue drops what it takes (the delivery
 * exchange routed it, so its alternate exchange never sees it): drift. */
static void
test_binding_to_nowhere_is_drift(void **state)
{
	struct plan *p;
	struct step_ctx c;
	char err[512], detail[1024];

	(void)state;
	p = kombu_adopted(&c);
	if (broker_exchange_declare(c.amqp, "itest.void", "topic", true, NULL, 0, err,
	    sizeof(err)) != 0 ||
	    broker_exchange_bind(c.amqp, "itest.void", kombu.delivery, "#.itest.void", err,
	    sizeof(err)) != 0)
		fail_msg("binding itest.void: %s", err);
	assert_int_equal(verify_count(&c, NULL, NULL, detail, sizeof(detail)), 1);
	fprintf(stderr, "# %s\n", detail);
	assert_non_null(strstr(detail, "'#.itest.void': drift: exchange 'itest.void' "
	    "routes 'itest.void' to no queue"));
	step_ctx_close(&c);
	plan_free(p);
}

/* A delayed message nobody takes still parks: the alternate exchange the
 * policy gives the delivery exchange catches what level 0 dead-letters. */
static void
test_unroutable_parks(void **state)
{
	struct plan *p;
	struct step_ctx c;
	struct broker_message m = { 0 };
	struct broker_queue_info qi;
	struct broker_delivery d;
	char key[LADDER_KEY_MAX + 1], exch[LADDER_NAME_MAX], err[1024];
	int64_t sent, deadline;

	(void)state;
	p = kombu_adopted(&c);
	assert_int_equal(ladder_routing_key(&p->ladder, 1, "itest.nobody.home", key,
	    sizeof(key), err, sizeof(err)), 0);
	ladder_entry_exchange(&p->ladder, 1, exch, sizeof(exch));
	assert_string_equal(exch, "celery_delayed_0");
	m.exchange = exch;
	m.routing_key = key;
	m.body = "park me";
	m.len = 7;
	m.mandatory = true;
	sent = clock_now_ms();
	assert_int_equal(broker_publish(c.amqp, &m, 5000, err, sizeof(err)), 0);
	deadline = sent + 30000;
	do {
		assert_int_equal(broker_queue_inspect(c.amqp, kombu.parking, &qi, err,
		    sizeof(err)), 0);
		if (qi.messages == 0)
			nanosleep(&(struct timespec){ 0, 50000000 }, NULL);
	} while (qi.messages == 0 && clock_now_ms() < deadline);
	assert_int_equal(qi.messages, 1);
	/* Parked after its delay, never before. */
	assert_true(clock_now_ms() >= sent + 1000);
	assert_int_equal(broker_get(c.amqp, kombu.parking, false, &d, err, sizeof(err)), 0);
	assert_string_equal(d.routing_key, key);
	broker_delivery_free(&d);
	step_ctx_close(&c);
	plan_free(p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_kombu_cutover_first, vhost_setup,
		    itest_cleanup_teardown),
		cmocka_unit_test_setup_teardown(test_kombu_library_first, vhost_setup,
		    itest_cleanup_teardown),
		cmocka_unit_test_setup_teardown(test_nservicebus_cutover_first, vhost_setup,
		    itest_cleanup_teardown),
		cmocka_unit_test_setup_teardown(test_nservicebus_library_first, vhost_setup,
		    itest_cleanup_teardown),
		cmocka_unit_test_setup_teardown(test_hiding_policy_is_named, vhost_setup,
		    itest_cleanup_teardown),
		cmocka_unit_test_setup_teardown(test_binding_to_nowhere_is_drift, vhost_setup,
		    itest_cleanup_teardown),
		cmocka_unit_test_setup_teardown(test_unroutable_parks, vhost_setup,
		    itest_cleanup_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
