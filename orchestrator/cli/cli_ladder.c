/* cli_ladder: `cutover ladder declare|verify|teardown PLAN.yaml` — the
 * declare_ladder and verify_ladder steps (and the teardown) run by hand,
 * with the same code the engine runs. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"
#include "plan.h"
#include "step.h"

static const char usage_line[] =
    "cutover ladder declare|verify|teardown [--json] PLAN.yaml";

static void
print_verify(json_t *r)
{
	json_t *o;
	size_t i;

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

int
cli_ladder(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct step_ctx ctx = { 0 };
	struct plan *p = NULL;
	json_t *result = NULL;
	step_fn fn;
	const char *action;
	char err[1024];
	int c, json = 0, rc = CLI_FAIL;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = 1; break;
		case 'h':
			printf("usage: %s\n", usage_line);
			return CLI_OK;
		default:
			return cli_usage_error("ladder", usage_line, "unknown option '%s'",
			    argv[optind - 1]);
		}
	}
	if (argc - optind != 2)
		return cli_usage_error("ladder", usage_line, "expected an action and a plan");
	action = argv[optind];
	if (strcmp(action, "declare") == 0)
		fn = step_declare_ladder;
	else if (strcmp(action, "verify") == 0)
		fn = step_verify_ladder;
	else if (strcmp(action, "teardown") == 0)
		fn = step_teardown_ladder;
	else
		return cli_usage_error("ladder", usage_line, "unknown action '%s'", action);

	if ((p = cli_load_plan(argv[optind + 1])) == NULL)
		goto done;
	if (step_ctx_open(&ctx, p, err, sizeof(err)) != 0) {
		fprintf(stderr, "cutover ladder %s: %s\n", action, err);
		goto done;
	}
	rc = fn(&ctx, &result, err, sizeof(err)) == 0 ? CLI_OK : CLI_FAIL;
	if (json) {
		json_dumpf(result, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
		printf("\n");
	} else if (fn == step_verify_ladder)
		print_verify(result);
	else if (fn == step_declare_ladder && rc == CLI_OK) {
		printf("declared %lld exchanges, %lld queues, %lld bindings, %lld policies\n",
		    (long long)json_integer_value(json_object_get(result, "exchanges")),
		    (long long)json_integer_value(json_object_get(result, "queues")),
		    (long long)json_integer_value(json_object_get(result, "bindings")),
		    (long long)json_integer_value(json_object_get(result, "policies")));
		print_names("destination queues created", json_object_get(result,
		    "destinations_created"));
		print_names("destination queues already there (bound only)",
		    json_object_get(result, "destinations_existing"));
	} else if (fn == step_teardown_ladder)
		print_names("removed", json_object_get(result, "removed"));
	if (rc != CLI_OK)
		fprintf(stderr, "cutover ladder %s: %s\n", action, err);
done:
	json_decref(result);
	step_ctx_close(&ctx);
	plan_free(p);
	return rc;
}
