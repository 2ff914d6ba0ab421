/* cli_check: `cutover check` — validates plans and prints, for each valid
 * one, a dry run (the ladder, every object declare_ladder would create, the
 * steps and gates) and the design review (check.c). Contacts nothing,
 * unless --broker: then it also reads each valid plan's broker version and
 * feature flags (cli_check_broker.c), read-only, and says so right after
 * the plan's verdict, before the long dry run. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "check.h"
#include "cli.h"

static const char usage_line[] = "cutover check [--json] [--broker] PLAN.yaml...";

/* check --broker for a person: the plan's own verdict line, then what its
 * broker says (the part that can fail for reasons outside the file), then
 * the dry run and the review, which run long. Returns 0 when both pass. */
static int
check_broker_first(const char *file, json_t *results)
{
	char *text = NULL, *nl;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	int rc;

	if (mem == NULL)
		return check_plan(file, NULL, 0, 0, stdout, stderr, results) != 0 ? -1 :
		    cli_check_broker(file, 0, stdout, stderr, NULL);
	rc = check_plan(file, NULL, 0, 0, mem, stderr, results);
	fclose(mem);
	nl = text != NULL ? memchr(text, '\n', len) : NULL;
	if (rc != 0 || nl == NULL) {
		fwrite(text, 1, len, stdout);
		free(text);
		return -1;
	}
	fwrite(text, 1, (size_t)(nl - text) + 1, stdout);
	fflush(stdout);
	rc = cli_check_broker(file, 0, stdout, stderr, NULL);
	fwrite(nl + 1, 1, len - (size_t)(nl + 1 - text), stdout);
	free(text);
	return rc;
}

/* What the command line asked for. */
struct check_args {
	int json, broker;
};

int
cli_check(int argc, char **argv)
{
	static const struct cli_option opts[] = {
		CLI_FLAG("json", 'j', struct check_args, json),
		CLI_FLAG("broker", 'b', struct check_args, broker),
		CLI_OPTIONS_END
	};
	struct check_args a = { 0 };
	const struct cli_options o = { .verb = "check", .usage = usage_line,
	    .opts = opts, .data = &a };
	json_t *results;
	int bad = 0, rc;

	if ((rc = cli_options_read(&o, argc, argv)) != CLI_GO_ON)
		return rc;
	if (optind >= argc)
		return cli_usage_error("check", usage_line, "expected at least one plan file");

	results = json_array();
	for (int i = optind; i < argc; i++) {
		if (!a.json && i > optind)
			printf("\n");
		if (a.broker && !a.json)
			bad += check_broker_first(argv[i], results) != 0;
		else if (check_plan(argv[i], NULL, 0, a.json, stdout, stderr, results) != 0)
			bad++;
		else if (a.broker)
			bad += cli_check_broker(argv[i], a.json, stdout, stderr,
			    json_array_get(results, json_array_size(results) - 1)) != 0;
	}
	if (a.json) {
		json_t *doc = json_pack("{s:b,s:O}", "valid", bad == 0, "plans", results);

		json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		printf("\n");
		json_decref(doc);
	}
	json_decref(results);
	return bad ? CLI_FAIL : CLI_OK;
}
