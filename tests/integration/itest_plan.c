/* itest_plan: building a test's plan YAML and writing it to a file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "itest_broker.h"
#include "itest_plan.h"

void
itest_plan_begin(struct itest_plan *b, const char *name, const char *amqp)
{
	char broker[2048];

	itest_broker_yaml(amqp, broker, sizeof(broker));
	b->len = 0;
	b->text[0] = '\0';
	itest_plan_addf(b, "name: %s\n%s", name, broker);
}

void
itest_plan_addf(struct itest_plan *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(b->text + b->len, sizeof(b->text) - b->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(b->text) - b->len)
		fail_msg("the test's plan is longer than %d bytes", ITEST_PLAN_MAX);
	b->len += (size_t)n;
}

void
itest_plan_unleash_flag(struct itest_plan *b, const char *url, const char *feature)
{
	if (url == NULL && (url = getenv("CUTOVER_TEST_UNLEASH_URL")) == NULL)
		fail_msg("set CUTOVER_TEST_UNLEASH_URL (scripts/test does)");
	itest_plan_addf(b,
	    "flag:\n"
	    "  kind: unleash\n"
	    "  url: %s\n"
	    "  project: default\n"
	    "  environment: production\n"
	    "  feature: %s\n"
	    "  token: env:CUTOVER_TEST_UNLEASH_TOKEN\n",
	    url, feature);
}

void
itest_plan_write(const struct itest_plan *b, const char *path)
{
	FILE *f = fopen(path, "w");

	if (f == NULL)
		fail_msg("cannot write the plan %s", path);
	if (fwrite(b->text, 1, b->len, f) != b->len) {
		fclose(f);
		fail_msg("cannot write the plan %s", path);
	}
	if (fclose(f) != 0)
		fail_msg("cannot write the plan %s", path);
}
