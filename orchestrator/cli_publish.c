/* cli_publish: `cutover publish PLAN.yaml --delay D --dest DEST` — one
 * delayed message into the plan's ladder with publisher confirms and
 * mandatory, through the same code the canary and the watch's probes use.
 * Exits 0 only when the broker confirmed the message. A dead-letter
 * history given as headers (x-death, x-first-death-*, x-last-death-*: a
 * consumer republishing what it got with its headers copied) is stripped,
 * and the output says so: RabbitMQ would take dead-lettering into a level
 * queue that x-death names for a cycle and drop the message. */
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "cli.h"
#include "duration.h"
#include "plan.h"
#include "publish.h"
#include "step.h"

#define BODY_FILE_MAX	(16 * 1024 * 1024)

static const char usage_line[] =
    "cutover publish PLAN.yaml --delay D --dest DESTINATION "
    "[--body TEXT | --body-file F] [--header K=V]... [--json]";

/* Reads at most BODY_FILE_MAX bytes of PATH into *OUT (NUL-terminated).
 * Returns 0, or -1 with ERR. */
static int
read_body(const char *path, char **out, size_t *len, char *err, size_t errlen)
{
	char what[PATH_MAX + 16];

	snprintf(what, sizeof(what), "--body-file '%s'", path);
	return cli_read_file(path, what, BODY_FILE_MAX, out, len, err, errlen);
}

/* Writes MS (epoch) as "2024-05-01T12:00:00.123Z". Returns OUT. */
static char *
format_time(int64_t ms, char *out, size_t outlen)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	char s[32];

	if (gmtime_r(&t, &tm) == NULL || strftime(s, sizeof(s), "%Y-%m-%dT%H:%M:%S",
	    &tm) == 0)
		snprintf(out, outlen, "%" PRId64 " ms", ms);
	else
		snprintf(out, outlen, "%s.%03dZ", s, (int)(ms % 1000));
	return out;
}

/* The headers the broker writes when it dead-letters a message. */
static const char *const death_headers[] = {
	"x-death", "x-first-death-queue", "x-first-death-reason",
	"x-first-death-exchange", "x-last-death-queue", "x-last-death-reason",
	"x-last-death-exchange",
};

static bool
is_death_header(const char *key)
{
	for (size_t i = 0; i < sizeof(death_headers) / sizeof(death_headers[0]); i++)
		if (strcmp(key, death_headers[i]) == 0)
			return true;
	return false;
}

/* The index of P's destination whose routing key is DEST, or -1. */
static int
destination_of(const struct plan *p, const char *dest)
{
	for (size_t i = 0; i < p->ndestinations; i++)
		if (strcmp(p->destinations[i], dest) == 0)
			return (int)i;
	return -1;
}

/* Writes what DEST reaches ("queue q", "exchange e", or "" when the plan
 * does not list it) into OUT. Returns OUT. */
static char *
reaches(const struct plan *p, const char *dest, char *out, size_t outlen)
{
	int i = destination_of(p, dest);
	bool ex;
	const char *target;

	if (i < 0) {
		snprintf(out, outlen, "%s", "");
		return out;
	}
	target = plan_destination_target(p, (size_t)i, &ex);
	snprintf(out, outlen, "%s %s", ex ? "exchange" : "queue", target);
	return out;
}

int
cli_publish(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "delay", required_argument, NULL, 'd' },
		{ "dest", required_argument, NULL, 'D' },
		{ "body", required_argument, NULL, 'b' },
		{ "body-file", required_argument, NULL, 'f' },
		{ "header", required_argument, NULL, 'H' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct broker_field hdr[PUBLISH_MAX_HEADERS];
	struct publish_request req;
	struct publish_receipt rc_out;
	struct broker *b = NULL;
	struct plan *p = NULL;
	const char *delay_arg = NULL, *dest = NULL, *body = NULL, *body_file = NULL;
	char *file_body = NULL, *hcopy[PUBLISH_MAX_HEADERS] = { NULL };
	char err[1024], d[32], u[32], nb[40], to[LADDER_NAME_MAX + 16];
	size_t nhdr = 0, len = 0, nstrip = 0;
	json_t *stripped = json_array();
	int64_t delay_ms;
	uint64_t units;
	int c, json = 0, st, rc = CLI_FAIL;

	optind = 1;
	opterr = 0;
	memset(hdr, 0, sizeof(hdr));
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'd': delay_arg = optarg; break;
		case 'D': dest = optarg; break;
		case 'b': body = optarg; break;
		case 'f': body_file = optarg; break;
		case 'j': json = 1; break;
		case 'H': {
			char *eq = strchr(optarg, '=');

			if (eq == NULL || eq == optarg) {
				rc = cli_usage_error("publish", usage_line, "--header '%s': "
				    "expected NAME=VALUE", optarg);
				goto done;
			}
			if (nhdr == PUBLISH_MAX_HEADERS) {
				rc = cli_usage_error("publish", usage_line, "more than %d "
				    "--header options", PUBLISH_MAX_HEADERS);
				goto done;
			}
			if ((hcopy[nhdr] = strdup(optarg)) == NULL) {
				fprintf(stderr, "cutover publish: out of memory\n");
				goto done;
			}
			hcopy[nhdr][eq - optarg] = '\0';
			if (is_death_header(hcopy[nhdr])) {
				json_array_append_new(stripped, json_string(hcopy[nhdr]));
				free(hcopy[nhdr]);
				hcopy[nhdr] = NULL;
				nstrip++;
				break;
			}
			hdr[nhdr].key = hcopy[nhdr];
			hdr[nhdr].str = hcopy[nhdr] + (eq - optarg) + 1;
			nhdr++;
			break;
		}
		case 'h':
			printf("usage: %s\n", usage_line);
			rc = CLI_OK;
			goto done;
		default:
			rc = cli_usage_error("publish", usage_line, "unknown or incomplete "
			    "option '%s'", argv[optind - 1]);
			goto done;
		}
	}
	if (argc - optind != 1) {
		rc = cli_usage_error("publish", usage_line, "expected one plan file");
		goto done;
	}
	if (delay_arg == NULL || dest == NULL) {
		rc = cli_usage_error("publish", usage_line, "--delay and --dest are required");
		goto done;
	}
	if (body != NULL && body_file != NULL) {
		rc = cli_usage_error("publish", usage_line, "give --body or --body-file, "
		    "not both");
		goto done;
	}

	if ((p = cli_load_plan(argv[optind])) == NULL)
		goto done;
	if (duration_parse(delay_arg, &delay_ms, err, sizeof(err)) != 0) {
		fprintf(stderr, "cutover publish: --delay '%s': %s\n", delay_arg, err);
		goto done;
	}
	/* Everything that needs no broker is checked before connecting. */
	if (ladder_encode(&p->ladder, delay_ms, &units, err, sizeof(err)) != 0 ||
	    ladder_check_destination(&p->ladder, dest, err, sizeof(err)) != 0) {
		fprintf(stderr, "cutover publish: %s\n", err);
		goto done;
	}
	if (body_file != NULL && read_body(body_file, &file_body, &len, err,
	    sizeof(err)) != 0) {
		fprintf(stderr, "cutover publish: %s\n", err);
		goto done;
	}
	if (body != NULL)
		len = strlen(body);
	if (nstrip > 0)
		fprintf(stderr, "cutover publish: stripped %zu dead-letter header%s "
		    "(x-death, x-first-death-*, x-last-death-*): a message that comes "
		    "back into the ladder with them can be taken for a dead-letter "
		    "cycle and dropped by the broker\n", nstrip, nstrip == 1 ? "" : "s");
	if (destination_of(p, dest) < 0)
		fprintf(stderr, "cutover publish: warning: '%s' is not one of the plan's "
		    "destinations; unless a queue is bound for it on the delivery "
		    "exchange, it will end in the parking queue\n", dest);

	if (step_broker_open(p, STEP_BROKER_TIMEOUT_MS, &b, err, sizeof(err)) != 0) {
		fprintf(stderr, "cutover publish: connecting to the broker: %s\n", err);
		st = PUBLISH_ECONNECT;
		goto failed;
	}
	memset(&req, 0, sizeof(req));
	req.plan = p->name;
	req.purpose = PUBLISH_MANUAL;
	req.seq = 1;
	req.delay_ms = delay_ms;
	req.destination = dest;
	req.body = file_body != NULL ? file_body : body;
	req.len = len;
	req.headers = nhdr ? hdr : NULL;
	req.nheaders = nhdr;
	st = publish_delayed(b, &p->ladder, &req, &rc_out, err, sizeof(err));
	if (st != PUBLISH_OK) {
		fprintf(stderr, "cutover publish: %s\n", err);
		goto failed;
	}
	if (json) {
		json_t *o = json_pack("{s:b,s:s,s:s,s:s,s:I,s:I,s:s,s:s,s:s,s:I,s:I,s:s}",
		    "confirmed", 1, "plan", p->name, "destination", dest,
		    "reaches", reaches(p, dest, to, sizeof(to)),
		    "delay_ms", (json_int_t)delay_ms, "units", (json_int_t)rc_out.units,
		    "entry_exchange", rc_out.exchange, "routing_key", rc_out.routing_key,
		    "message_id", rc_out.message_id, "sent_ms", (json_int_t)rc_out.sent_ms,
		    "not_before_ms", (json_int_t)rc_out.not_before_ms,
		    "not_before", format_time(rc_out.not_before_ms, nb, sizeof(nb)));

		if (o != NULL && nstrip > 0)
			json_object_set(o, "stripped_headers", stripped);
		json_dumpf(o, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
		printf("\n");
		json_decref(o);
	} else {
		printf("confirmed      %s to %s (plan %s)\n",
		    duration_format(delay_ms, d, sizeof(d)), dest, p->name);
		if (*reaches(p, dest, to, sizeof(to)) != '\0')
			printf("reaches        %s\n", to);
		printf("units          %" PRIu64 " of %s\n", rc_out.units,
		    duration_format(p->ladder.unit_ms, u, sizeof(u)));
		printf("entry exchange %s\n", rc_out.exchange);
		printf("routing key    %s\n", rc_out.routing_key);
		printf("message id     %s\n", rc_out.message_id);
		printf("not before     %s\n", format_time(rc_out.not_before_ms, nb,
		    sizeof(nb)));
	}
	rc = CLI_OK;
	goto done;
failed:
	if (json) {
		json_t *o = json_pack("{s:b,s:s,s:s}", "confirmed", 0, "status",
		    publish_status_name(st), "error", err);

		json_dumpf(o, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
		printf("\n");
		json_decref(o);
	}
done:
	json_decref(stripped);
	broker_close(b);
	free(file_body);
	for (size_t i = 0; i < nhdr; i++)
		free(hcopy[i]);
	plan_free(p);
	return rc;
}
