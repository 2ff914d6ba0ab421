/* test_plan_broker: the broker section — its URLs, single and as a
 * cluster's lists, and secrets that no error message repeats — and the
 * target section, another broker read the same way. */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm.h"
#include "plan.h"
#include "pt.h"

#define S(n)	((int64_t)(n) * 1000)

/* broker.amqp and broker.management as a cluster's lists: tried in
 * order, the first is the single field; each URL checked where it is;
 * broker.return_after, how soon an earlier node is tried again, 30 s
 * unless given. */
static void
test_url_lists(void **state)
{
	static const struct {
		const char *amqp;
		int column;
		const char *msg;
	} bad[] = {
		{ "[amqp://a:5672/%2f, amqp://a:5672/%2f]", 29, "broker.amqp[1] 'amqp://a:5672/%2f' is listed twice" },
		{ "[amqp://a:5672/%2f, amqp://b:5672/orders]", 29, "names vhost 'orders', the first URL '%2f'" },
		{ "[amqp://a:5672/%2f, amqp://u@b/v]", 29, "broker.amqp[1] carries credentials" },
		{ "[]", 9, "broker.amqp is empty" },
		{ "{ a: b }", 9, "expected amqp://host[:port]/vhost" },
	};
	struct plan *p;
	char *t;
	size_t i;

	(void)state;
	t = pt_subst(pt_base_plan, "amqp://127.0.0.1:5672/%2f",
	    "[amqp://127.0.0.1:5706/%2f, amqp://127.0.0.1:5707/%2f, amqp://127.0.0.1:5708/%2f]");
	pt_edit(&t, "http://127.0.0.1:15672", "[http://127.0.0.1:15706, http://127.0.0.1:15707]");
	p = pt_expect_valid(t);
	assert_int_equal(p->broker.namqp, 3);
	assert_string_equal(p->broker.amqp, "amqp://127.0.0.1:5706/%2f");
	assert_string_equal(p->broker.amqp_urls[0], "amqp://127.0.0.1:5706/%2f");
	assert_string_equal(p->broker.amqp_urls[2], "amqp://127.0.0.1:5708/%2f");
	assert_int_equal(p->broker.nmanagement, 2);
	assert_string_equal(p->broker.management, "http://127.0.0.1:15706");
	assert_string_equal(p->broker.management_urls[1], "http://127.0.0.1:15707");
	assert_int_equal(p->broker.return_after_ms, S(30));
	plan_free(p);
	pt_edit(&t, "  username: guest\n", "  username: guest\n  return_after: 5s\n");
	p = pt_expect_valid(t);
	assert_int_equal(p->broker.return_after_ms, S(5));
	plan_free(p);
	free(t);
	pt_expect_edit_error("  username: guest\n", "  username: guest\n  return_after: 0s\n",
	    6, 17, "expected a duration greater than 0");
	/* A single string is a list of one. */
	p = pt_expect_valid(pt_base_plan);
	assert_int_equal(p->broker.namqp, 1);
	assert_string_equal(p->broker.amqp_urls[0], p->broker.amqp);
	assert_int_equal(p->broker.nmanagement, 1);
	plan_free(p);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		pt_expect_edit_error("amqp://127.0.0.1:5672/%2f", bad[i].amqp,
		    3, bad[i].column, bad[i].msg);
	pt_expect_edit_error("http://127.0.0.1:15672",
	    "[http://127.0.0.1:15706, ftp://127.0.0.1:15707]",
	    4, 40, "broker.management[1] 'ftp://127.0.0.1:15707' is not an http");
}

static void
test_urls(void **state)
{
	static const struct {
		const char *amqp;
		const char *msg;	/* NULL: valid */
	} cases[] = {
		{ "amqp://rabbit:5672/%2f", NULL },
		{ "amqps://rabbit.example.com/orders", NULL },
		{ "amqp://[::1]:5672/v", NULL },
		{ "amqp://rabbit_1/v", NULL },
		{ "amqp://user@rabbit/v", "carries credentials" },
		{ "amqp://rabbit/", "has an empty vhost" },
		{ "amqp://rabbit:0/v", "has an invalid port" },
		{ "amqp://rabbit:abc/v", "has an invalid port" },
		{ "amqp:///v", "has no host" },
		{ "amqp://rab!bit/v", "has an invalid character in its host" },
		{ "amqp://rabbit/a%zz", "not followed by two hex digits" },
		{ "amqp://rabbit/v#x", "has a fragment" },
		{ "rabbit:5672", "is not an amqp:// or amqps:// URL" },
	};
	struct plan *p;
	char line[32];
	char *t;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(line, sizeof(line), "%s", "amqp://127.0.0.1:5672/%2f");
		t = pt_subst(pt_base_plan, line, cases[i].amqp);
		if (cases[i].msg == NULL) {
			p = pt_expect_valid(t);
			assert_string_equal(p->broker.amqp, cases[i].amqp);
			plan_free(p);
		} else
			pt_expect_error(t, 3, 9, cases[i].msg);
		free(t);
	}
	/* Management URLs may have a path, not a query; never credentials. */
	t = pt_subst(pt_base_plan, "http://127.0.0.1:15672", "https://mq.example.com/rabbitmq/");
	p = pt_expect_valid(t);
	plan_free(p);
	free(t);
	pt_expect_edit_error("http://127.0.0.1:15672", "http://127.0.0.1:15672/?x=1",
	    4, 15, "has a query");
	pt_expect_edit_error("http://127.0.0.1:15672", "http://admin:hunter2@127.0.0.1:15672",
	    4, 15, "carries credentials");
}

static void
test_secrets_not_echoed(void **state)
{
	struct plan_errors errs = { 0 };
	char *t = pt_subst(pt_base_plan, "env:RABBIT_PASSWORD", "hunter2");
	size_t i;

	(void)state;
	pt_edit(&t, "amqp://127.0.0.1", "amqp://guest:s3cr3t@127.0.0.1");
	pt_expect_n_errors(t, &errs, 2);
	for (i = 0; i < errs.n; i++) {
		assert_null(strstr(errs.v[i].message, "hunter2"));
		assert_null(strstr(errs.v[i].message, "s3cr3t"));
	}
	plan_errors_free(&errs);
	free(t);
}

/* target: a broker section of its own (its URLs, user, password and
 * TLS read as broker's are, its errors named target.*); the ladder's
 * broker is then the target, the old path's still broker. A target that
 * is the broker itself is refused where its amqp is written. */
static void
test_target(void **state)
{
	static const char target[] =
	    "target:\n"
	    "  amqp: [amqp://10.0.0.2:5671/%2f, amqp://10.0.0.3:5671/%2f]\n"
	    "  management: https://10.0.0.2:15671\n"
	    "  username: cutover\n"
	    "  password: env:TARGET_PASSWORD\n"
	    "  tls: { server_name: rabbit.internal }\n"
	    "old:\n";
	struct plan *p;
	char *t;

	(void)state;
	p = pt_expect_valid(pt_base_plan);
	assert_false(p->has_target);
	assert_ptr_equal(plan_ladder_broker(p), &p->broker);
	plan_free(p);

	t = pt_subst(pt_base_plan, "old:\n", target);
	p = pt_expect_valid(t);
	assert_true(p->has_target);
	assert_ptr_equal(plan_ladder_broker(p), &p->target);
	assert_string_equal(p->target.amqp, "amqp://10.0.0.2:5671/%2f");
	assert_int_equal(p->target.namqp, 2);
	assert_string_equal(p->target.management, "https://10.0.0.2:15671");
	assert_string_equal(p->target.username, "cutover");
	assert_string_equal(p->target.password, "env:TARGET_PASSWORD");
	assert_string_equal(p->target.tls.server_name, "rabbit.internal");
	assert_string_equal(p->target.section, "target");
	assert_int_equal(p->target.return_after_ms, S(30));
	assert_string_equal(p->broker.amqp, "amqp://127.0.0.1:5672/%2f");
	assert_null(p->broker.tls.server_name);
	plan_free(p);
	free(t);

	pt_expect_edit_error("old:\n", "target:\n  amqp: amqp://10.0.0.2/%2f\n"
	    "  username: cutover\n  password: env:P\nold:\n",
	    8, 3, "missing required key 'management' in target");
	pt_expect_edit_error("old:\n", "target:\n"
	    "  amqp: amqp://127.0.0.1:5672/%2f\n  management: http://127.0.0.1:15672\n"
	    "  username: guest\n  password: env:RABBIT_PASSWORD\nold:\n",
	    8, 9, "target.amqp 'amqp://127.0.0.1:5672/%2f' is broker.amqp's too");
	pt_expect_edit_error("old:\n", "target: amqp://10.0.0.2/%2f\nold:\n",
	    7, 9, "target");
}

CM_MAIN(NULL, NULL,
	cmocka_unit_test(test_urls),
	cmocka_unit_test(test_url_lists),
	cmocka_unit_test(test_secrets_not_echoed),
	cmocka_unit_test(test_target))
