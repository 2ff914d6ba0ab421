/* main: the `cutover` command — dispatches to one verb per subcommand.
 * The verbs call nothing here: what they share is cli_usage.c's and
 * cli_file.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <amqp.h>
#include <curl/curl.h>
#include <jansson.h>

#include "build_info.h"
#include "cli.h"
#include "near.h"
#include "store.h"

static const struct verb {
	const char *name;
	int (*run)(int, char **);
	const char *summary;
} verbs[] = {
	{ "check", cli_check, "validate plans and print what they would do (contacts nothing, unless --broker)" },
	{ "encode", cli_encode, "print the routing key, entry exchange and waits of a delay" },
	{ "ladder", cli_ladder, "declare, verify or tear down a plan's ladder on the broker" },
	{ "old", cli_old, "measure the old queues' horizon, or remove them when safe" },
	{ "publish", cli_publish, "publish one delayed message into the ladder, with confirms" },
	{ "canary", cli_canary, "run the canary: delayed messages through the ladder, checked" },
	{ "serve", cli_serve, "run every plan of a database and serve the JSON API" },
	{ "submit", cli_submit, "submit a plan to a running server (or a database)" },
	{ "run", cli_run, "run a plan step by step from a database until it ends or waits" },
	{ "approve", cli_command, "approve a gated step (recorded with your name)" },
	{ "retry", cli_command, "start a failed step again from its beginning" },
	{ "abort", cli_command, "abort a plan; after the flip, producers are flipped back" },
	{ "ack", cli_command, "acknowledge an open alert" },
	{ "archive", cli_command, "archive a finished plan, so that its name can be used again" },
	{ "status", cli_status, "list plans, or one plan's steps" },
	{ "backup", cli_backup, "make a checked copy of a database while serve or run holds it" },
	{ "restore", cli_restore, "make a new database from a backup, for serve or run to resume" },
	{ "history", cli_history, "print a plan's recorded history, or verify the hash chain" },
	{ "operators", cli_operators, "add, list or remove the operators who may act through serve's API" },
	{ NULL, NULL, NULL }
};

static void
usage(FILE *f)
{
	fprintf(f, "usage: cutover VERB [OPTIONS] [ARGS]\n\nverbs:\n");
	for (const struct verb *v = verbs; v->name != NULL; v++)
		fprintf(f, "  %-10s %s\n", v->name, v->summary);
	fprintf(f, "\n`cutover VERB --help` gives a verb's usage; man cutover (and "
	    "docs/commands.md, from the same words) describes each, man cutover-plan "
	    "every plan key, docs/alerts.md every alert. Exit status: 0 done, 1 wrong "
	    "input or failed check, 2 usage error.\n");
}

/* `cutover --version [--json]`: the version, the commit, each library's
 * version built against and running, and the database schema it writes. */
static int
version(int argc, char **argv)
{
	const struct build_info *bi = build_info_get();
	json_t *libs, *doc;
	char *text;

	if (argc > 2 || (argc == 2 && strcmp(argv[1], "--json") != 0))
		return cli_usage_error("--version", "cutover --version [--json]",
		    "unexpected argument '%s'", argv[1]);
	if (argc == 1) {
		printf("cutover %s (commit %s)\n", bi->version, bi->commit);
		printf("%-14s %-10s %s\n", "library", "built", "running");
		for (size_t i = 0; i < BUILD_LIBS; i++)
			printf("%-14s %-10s %s\n", bi->libs[i].name, bi->libs[i].built,
			    bi->libs[i].running[0] != '\0' ? bi->libs[i].running : "unknown");
		printf("database schema %d (it opens databases of this schema and older)\n",
		    STORE_SCHEMA_VERSION);
		return CLI_OK;
	}
	libs = json_object();
	for (size_t i = 0; i < BUILD_LIBS; i++)
		json_object_set_new(libs, bi->libs[i].name, json_pack("{s:s,s:s}",
		    "built", bi->libs[i].built, "running", bi->libs[i].running));
	doc = json_pack("{s:s,s:s,s:i,s:o}", "version", bi->version, "commit", bi->commit,
	    "schema", STORE_SCHEMA_VERSION, "libraries", libs);
	text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	json_decref(doc);
	if (text == NULL) {
		fprintf(stderr, "cutover --version: out of memory\n");
		return CLI_FAIL;
	}
	printf("%s\n", text);
	free(text);
	return CLI_OK;
}

int
main(int argc, char **argv)
{
	build_info_init(amqp_version(), curl_version_info(CURLVERSION_NOW)->version);
	if (argc < 2) {
		usage(stderr);
		return CLI_USAGE;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return CLI_OK;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0)
		return version(argc - 1, argv + 1);
	for (const struct verb *v = verbs; v->name != NULL; v++)
		if (strcmp(argv[1], v->name) == 0)
			return v->run(argc - 1, argv + 1);
	{
		const char *names[sizeof(verbs) / sizeof(verbs[0])], *near;
		size_t n = 0;

		for (const struct verb *v = verbs; v->name != NULL; v++)
			names[n++] = v->name;
		if ((near = near_word(argv[1], names, n)) != NULL) {
			fprintf(stderr, "cutover: unknown verb '%s'; did you mean '%s'? "
			    "(cutover --help lists them)\n", argv[1], near);
			return CLI_USAGE;
		}
	}
	fprintf(stderr, "cutover: unknown verb '%s'\n", argv[1]);
	usage(stderr);
	return CLI_USAGE;
}
