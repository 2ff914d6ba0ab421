/* cli_step: what the verbs that run one step by hand (canary, ladder)
 * share: their one option, --json, and the run itself — the plan loaded,
 * its connections opened, the step run with the code the engine runs, its
 * result printed. A leaf: it calls no verb. */
#include <getopt.h>
#include <stdio.h>

#include <jansson.h>

#include "cli.h"
#include "plan.h"
#include "step.h"

int
cli_step_options(const char *verb, const char *usage, int argc, char **argv,
    int *json)
{
	/* DATA is the verb's int itself: --json's is at offset 0. */
	static const struct cli_option opts[] = {
		{ "json", 'j', false, CLI_STORE_FLAG, 0 },
		CLI_OPTIONS_END
	};
	const struct cli_options o = { .verb = verb, .usage = usage, .opts = opts,
	    .data = json };

	*json = 0;
	return cli_options_read(&o, argc, argv);
}

int
cli_step_run(const char *what, const char *path, step_fn fn, int json,
    void (*print)(json_t *result, int ok))
{
	struct step_ctx ctx = { 0 };
	struct plan *p = NULL;
	json_t *result = NULL;
	char err[2048];
	int rc = CLI_FAIL;

	if ((p = cli_load_plan(path)) == NULL)
		goto done;
	if (step_ctx_open(&ctx, p, err, sizeof(err)) != 0) {
		fprintf(stderr, "cutover %s: %s\n", what, err);
		goto done;
	}
	rc = fn(&ctx, &result, err, sizeof(err)) == 0 ? CLI_OK : CLI_FAIL;
	if (json) {
		json_dumpf(result, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
		printf("\n");
	} else
		print(result, rc == CLI_OK);
	if (rc != CLI_OK)
		fprintf(stderr, "cutover %s: %s\n", what, err);
done:
	json_decref(result);
	step_ctx_close(&ctx);
	plan_free(p);
	return rc;
}
