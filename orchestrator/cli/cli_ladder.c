/* cli_ladder: `cutover ladder declare|verify|teardown PLAN.yaml` — the
 * declare_ladder and verify_ladder steps (and the teardown) run by hand,
 * with the same code the engine runs. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"
#include "step.h"

static const char usage_line[] =
    "cutover ladder declare|verify|teardown [--json] PLAN.yaml";

/* cli_step_run's PRINT for verify_ladder: every object's status and the
 * counts, whether or not the ladder verified. */
static void
print_verify(json_t *r, int ok)
{
	json_t *o;
	size_t i;

	(void)ok;
	json_array_foreach(json_object_get(r, "objects"), i, o) {
		const char *detail = json_string_value(json_object_get(o, "detail"));

		printf("%-8s %-11s %s%s%s\n", json_string_value(json_object_get(o, "status")),
		    json_string_value(json_object_get(o, "kind")),
		    json_string_value(json_object_get(o, "name")),
		    detail && *detail ? ": " : "", detail ? detail : "");
	}
	o = json_object_get(r, "counts");
	printf("%lld ok (%lld with a warning), %lld missing, %lld drift\n",
	    (long long)json_integer_value(json_object_get(o, "ok")),
	    (long long)json_integer_value(json_object_get(o, "warnings")),
	    (long long)json_integer_value(json_object_get(o, "missing")),
	    (long long)json_integer_value(json_object_get(o, "drift")));
}

static void
print_names(const char *label, json_t *a)
{
	json_t *v;
	size_t i;

	if (json_array_size(a) == 0)
		return;
	printf("%s:", label);
	json_array_foreach(a, i, v)
		printf(" %s", json_string_value(v));
	printf("\n");
}

/* cli_step_run's PRINT for declare_ladder: what it declared, when it
 * succeeded. */
static void
print_declare(json_t *result, int ok)
{
	if (!ok)
		return;
	printf("declared %lld exchanges, %lld queues, %lld bindings, %lld policies\n",
	    (long long)json_integer_value(json_object_get(result, "exchanges")),
	    (long long)json_integer_value(json_object_get(result, "queues")),
	    (long long)json_integer_value(json_object_get(result, "bindings")),
	    (long long)json_integer_value(json_object_get(result, "policies")));
	print_names("destination queues created", json_object_get(result,
	    "destinations_created"));
	print_names("destination queues already there (bound only)",
	    json_object_get(result, "destinations_existing"));
}

/* cli_step_run's PRINT for teardown_ladder: what it removed. */
static void
print_teardown(json_t *result, int ok)
{
	(void)ok;
	print_names("removed", json_object_get(result, "removed"));
}

/* The actions, the step each runs and how its result is printed. */
static const struct ladder_action {
	const char *name;
	step_fn fn;
	void (*print)(json_t *result, int ok);
} actions[] = {
	{ "declare", step_declare_ladder, print_declare },
	{ "verify", step_verify_ladder, print_verify },
	{ "teardown", step_teardown_ladder, print_teardown },
};

int
cli_ladder(int argc, char **argv)
{
	char what[64];
	int json, rc;

	if ((rc = cli_step_options("ladder", usage_line, argc, argv, &json)) != CLI_GO_ON)
		return rc;
	if (argc - optind != 2)
		return cli_usage_error("ladder", usage_line, "expected an action and a plan");
	for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]); i++) {
		if (strcmp(argv[optind], actions[i].name) != 0)
			continue;
		snprintf(what, sizeof(what), "ladder %s", actions[i].name);
		return cli_step_run(what, argv[optind + 1], actions[i].fn, json,
		    actions[i].print);
	}
	return cli_usage_error("ladder", usage_line, "unknown action '%s'", argv[optind]);
}
