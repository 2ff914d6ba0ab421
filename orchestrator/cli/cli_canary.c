/* cli_canary: `cutover canary PLAN.yaml` — the canary step run by hand,
 * with the same code the engine runs: a table of the messages sent and how
 * each came out, the summary and the parking check. Exits 1 on failure. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "cli.h"
#include "duration.h"
#include "step.h"

static const char usage_line[] = "cutover canary [--json] PLAN.yaml";

static int64_t
num(json_t *o, const char *key)
{
	return (int64_t)json_integer_value(json_object_get(o, key));
}

/* "12:00:01.234" (UTC) for an epoch time in ms, "-" for none. */
static char *
clock_text(json_t *v, char *out, size_t outlen)
{
	int64_t ms;
	time_t t;
	struct tm tm;

	if (!json_is_integer(v)) {
		snprintf(out, outlen, "-");
		return out;
	}
	ms = (int64_t)json_integer_value(v);
	t = (time_t)(ms / 1000);
	if (gmtime_r(&t, &tm) == NULL)
		snprintf(out, outlen, "%" PRId64, ms);
	else
		snprintf(out, outlen, "%02d:%02d:%02d.%03d", tm.tm_hour, tm.tm_min,
		    tm.tm_sec, (int)(ms % 1000));
	return out;
}

/* cli_step_run's PRINT: the messages, the summary and the parking check,
 * as far as the canary came. */
static void
print_human(json_t *r, int ok)
{
	json_t *m, *v, *s, *pk;
	size_t i, j;
	char d[32], sent[16], arr[16], lv[128], late[24];

	(void)ok;

	if (json_array_size(json_object_get(r, "messages")) > 0)
		printf("%4s %-8s %6s %-16s %-12s %-12s %9s  %s\n", "seq", "delay",
		    "units", "levels", "sent", "arrived", "lateness", "outcome");
	json_array_foreach(json_object_get(r, "messages"), i, m) {
		size_t off = 0;

		lv[0] = '\0';
		json_array_foreach(json_object_get(m, "levels"), j, v)
			if (off < sizeof(lv))
				off += (size_t)snprintf(lv + off, sizeof(lv) - off, "%s%lld",
				    j ? "," : "", (long long)json_integer_value(v));
		if (json_is_integer(json_object_get(m, "lateness_ms")))
			snprintf(late, sizeof(late), "%+" PRId64 " ms", num(m, "lateness_ms"));
		else
			snprintf(late, sizeof(late), "-");
		printf("%4" PRId64 " %-8s %6" PRId64 " %-16s %-12s %-12s %9s  %s\n",
		    num(m, "seq"), duration_format(num(m, "delay_ms"), d, sizeof(d)),
		    num(m, "units"), lv[0] ? lv : "-",
		    clock_text(json_object_get(m, "sent_ms"), sent, sizeof(sent)),
		    clock_text(json_object_get(m, "arrived_ms"), arr, sizeof(arr)),
		    late, json_string_value(json_object_get(m, "outcome")));
		if ((v = json_object_get(m, "detail")) != NULL)
			printf("     %s\n", json_string_value(v));
	}
	if ((s = json_object_get(r, "summary")) != NULL) {
		printf("summary: %" PRId64 " sent, %" PRId64 " arrived, %" PRId64 " lost, %"
		    PRId64 " early, %" PRId64 " late, %" PRId64 " wrong path",
		    num(s, "count"), num(s, "arrived"), num(s, "lost"), num(s, "early"),
		    num(s, "late"), num(s, "wrong_path"));
		if (json_is_integer(json_object_get(s, "p50_ms")))
			printf("; lateness p50 %" PRId64 " ms, p99 %" PRId64 " ms, max %"
			    PRId64 " ms (bound %" PRId64 " ms)", num(s, "p50_ms"),
			    num(s, "p99_ms"), num(s, "max_ms"), num(r, "max_lateness_ms"));
		printf("\n");
		if (num(s, "duplicates") || num(s, "stale_discarded") ||
		    num(s, "foreign_discarded"))
			printf("also received: %" PRId64 " duplicates, %" PRId64 " stale "
			    "(older batch), %" PRId64 " foreign messages, discarded\n",
			    num(s, "duplicates"), num(s, "stale_discarded"),
			    num(s, "foreign_discarded"));
	}
	pk = json_object_get(r, "parking");
	if (json_is_true(json_object_get(pk, "ok")))
		printf("parking: ok: the message to %s reached %s and was removed; "
		    "%" PRId64 " other message%s stay%s there\n",
		    json_string_value(json_object_get(pk, "destination")),
		    json_string_value(json_object_get(pk, "queue")),
		    num(pk, "other_messages"), num(pk, "other_messages") == 1 ? "" : "s",
		    num(pk, "other_messages") == 1 ? "s" : "");
	else if ((v = json_object_get(pk, "detail")) != NULL)
		printf("parking: FAILED: %s\n", json_string_value(v));
	json_array_foreach(json_object_get(pk, "others"), i, v)
		printf("  parked: key %s, id %s%s%s\n",
		    json_string_value(json_object_get(v, "routing_key")),
		    json_string_value(json_object_get(v, "message_id")),
		    json_object_get(v, "purpose") ? ", cutover " : "",
		    json_object_get(v, "purpose") ?
		    json_string_value(json_object_get(v, "purpose")) : "");
}

int
cli_canary(int argc, char **argv)
{
	int json, rc;

	if ((rc = cli_step_options("canary", usage_line, argc, argv, &json)) != CLI_GO_ON)
		return rc;
	if (argc - optind != 1)
		return cli_usage_error("canary", usage_line, "expected one plan file");
	return cli_step_run("canary", argv[optind], step_canary, json, print_human);
}
