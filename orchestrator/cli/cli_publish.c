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

/* What the command line asked for: the options, the headers to send (HDR
 * points into HCOPY, one strdup'd "NAME\0VALUE" each) and the dead-letter
 * headers left out (STRIPPED, their names). args_free releases it. */
struct pub_args {
	const char *plan, *delay, *dest, *body, *body_file;
	int json;
	struct broker_field hdr[PUBLISH_MAX_HEADERS];
	char *hcopy[PUBLISH_MAX_HEADERS];
	size_t nhdr, nstrip;
	json_t *stripped;
};

static void
args_free(struct pub_args *a)
{
	json_decref(a->stripped);
	for (size_t i = 0; i < a->nhdr; i++)
		free(a->hcopy[i]);
}

/* Adds --header ARG (NAME=VALUE) to A, or counts it as stripped when it is
 * a dead-letter header. Returns 0, or -1 with *RC set (a usage error, or
 * CLI_FAIL when out of memory). */
static int
args_header(struct pub_args *a, const char *arg, int *rc)
{
	const char *eq = strchr(arg, '=');
	char *copy;

	if (eq == NULL || eq == arg) {
		*rc = cli_usage_error("publish", usage_line, "--header '%s': "
		    "expected NAME=VALUE", arg);
		return -1;
	}
	if (a->nhdr == PUBLISH_MAX_HEADERS) {
		*rc = cli_usage_error("publish", usage_line, "more than %d "
		    "--header options", PUBLISH_MAX_HEADERS);
		return -1;
	}
	if ((copy = strdup(arg)) == NULL) {
		fprintf(stderr, "cutover publish: out of memory\n");
		return -1;
	}
	copy[eq - arg] = '\0';
	if (is_death_header(copy)) {
		json_array_append_new(a->stripped, json_string(copy));
		free(copy);
		a->nstrip++;
		return 0;
	}
	a->hcopy[a->nhdr] = copy;
	a->hdr[a->nhdr].key = copy;
	a->hdr[a->nhdr].str = copy + (eq - arg) + 1;
	a->nhdr++;
	return 0;
}

/* cli_options' take: a --header's ARG into DATA, a struct pub_args. */
static int
take_option(int c, char *arg, void *data)
{
	struct pub_args *a = data;
	int rc = CLI_FAIL;

	(void)c;
	if (args_header(a, arg, &rc) != 0)
		return rc;
	return CLI_GO_ON;
}

/* Reads the command line into A. Returns 0 to go on, or -1 with *RC set
 * (CLI_OK after --help, a usage error, CLI_FAIL). */
static int
args_parse(int argc, char **argv, struct pub_args *a, int *rc)
{
	static const struct cli_option opts[] = {
		CLI_TEXT("delay", 'd', struct pub_args, delay),
		CLI_TEXT("dest", 'D', struct pub_args, dest),
		CLI_TEXT("body", 'b', struct pub_args, body),
		CLI_TEXT("body-file", 'f', struct pub_args, body_file),
		CLI_TAKE("header", 'H', true),
		CLI_FLAG("json", 'j', struct pub_args, json),
		CLI_OPTIONS_END
	};
	const struct cli_options o = { .verb = "publish", .usage = usage_line,
	    .opts = opts, .take = take_option, .data = a };
	int r;

	if ((r = cli_options_read(&o, argc, argv)) != CLI_GO_ON) {
		*rc = r;
		return -1;
	}
	if (argc - optind != 1) {
		*rc = cli_usage_error("publish", usage_line, "expected one plan file");
		return -1;
	}
	if (a->delay == NULL || a->dest == NULL) {
		*rc = cli_usage_error("publish", usage_line, "--delay and --dest are required");
		return -1;
	}
	if (a->body != NULL && a->body_file != NULL) {
		*rc = cli_usage_error("publish", usage_line, "give --body or --body-file, "
		    "not both");
		return -1;
	}
	a->plan = argv[optind];
	return 0;
}

/* Everything that needs no broker, checked before connecting: the delay
 * (into *DELAY_MS), that the ladder can carry it to A's destination, and
 * the body (--body-file read into *FILE_BODY, the caller's to free; its
 * length, or --body's, into *LEN). Then says on stderr what was stripped
 * and whether the destination is the plan's. Returns 0, or -1 after
 * printing the error. */
static int
check_offline(const struct plan *p, const struct pub_args *a, int64_t *delay_ms,
    char **file_body, size_t *len)
{
	char err[1024];
	uint64_t units;

	if (duration_parse(a->delay, delay_ms, err, sizeof(err)) != 0) {
		fprintf(stderr, "cutover publish: --delay '%s': %s\n", a->delay, err);
		return -1;
	}
	if (ladder_encode(&p->ladder, *delay_ms, &units, err, sizeof(err)) != 0 ||
	    ladder_check_destination(&p->ladder, a->dest, err, sizeof(err)) != 0) {
		fprintf(stderr, "cutover publish: %s\n", err);
		return -1;
	}
	if (a->body_file != NULL && read_body(a->body_file, file_body, len, err,
	    sizeof(err)) != 0) {
		fprintf(stderr, "cutover publish: %s\n", err);
		return -1;
	}
	if (a->body != NULL)
		*len = strlen(a->body);
	if (a->nstrip > 0)
		fprintf(stderr, "cutover publish: stripped %zu dead-letter header%s "
		    "(x-death, x-first-death-*, x-last-death-*): a message that comes "
		    "back into the ladder with them can be taken for a dead-letter "
		    "cycle and dropped by the broker\n", a->nstrip,
		    a->nstrip == 1 ? "" : "s");
	if (destination_of(p, a->dest) < 0)
		fprintf(stderr, "cutover publish: warning: '%s' is not one of the plan's "
		    "destinations; unless a queue is bound for it on the delivery "
		    "exchange, it will end in the parking queue\n", a->dest);
	return 0;
}

/* Prints O on one line of stdout and releases it. */
static void
put_json_line(json_t *o)
{
	json_dumpf(o, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
	printf("\n");
	json_decref(o);
}

/* Prints the confirmed message R (delay DELAY_MS) as one JSON line. */
static void
print_confirmed_json(const struct plan *p, const struct pub_args *a,
    int64_t delay_ms, const struct publish_receipt *r)
{
	char nb[40], to[LADDER_NAME_MAX + 16];
	json_t *o = json_pack("{s:b,s:s,s:s,s:s,s:I,s:I,s:s,s:s,s:s,s:I,s:I,s:s}",
	    "confirmed", 1, "plan", p->name, "destination", a->dest,
	    "reaches", reaches(p, a->dest, to, sizeof(to)),
	    "delay_ms", (json_int_t)delay_ms, "units", (json_int_t)r->units,
	    "entry_exchange", r->exchange, "routing_key", r->routing_key,
	    "message_id", r->message_id, "sent_ms", (json_int_t)r->sent_ms,
	    "not_before_ms", (json_int_t)r->not_before_ms,
	    "not_before", format_time(r->not_before_ms, nb, sizeof(nb)));

	if (o != NULL && a->nstrip > 0)
		json_object_set(o, "stripped_headers", a->stripped);
	put_json_line(o);
}

/* Prints the confirmed message R (delay DELAY_MS to DEST) for a person. */
static void
print_confirmed_text(const struct plan *p, const char *dest, int64_t delay_ms,
    const struct publish_receipt *r)
{
	char d[32], u[32], nb[40], to[LADDER_NAME_MAX + 16];

	printf("confirmed      %s to %s (plan %s)\n",
	    duration_format(delay_ms, d, sizeof(d)), dest, p->name);
	if (*reaches(p, dest, to, sizeof(to)) != '\0')
		printf("reaches        %s\n", to);
	printf("units          %" PRIu64 " of %s\n", r->units,
	    duration_format(p->ladder.unit_ms, u, sizeof(u)));
	printf("entry exchange %s\n", r->exchange);
	printf("routing key    %s\n", r->routing_key);
	printf("message id     %s\n", r->message_id);
	printf("not before     %s\n", format_time(r->not_before_ms, nb, sizeof(nb)));
}

/* Prints a publish that failed with status ST and message ERR as JSON. */
static void
print_failed_json(int st, const char *err)
{
	json_t *o = json_pack("{s:b,s:s,s:s}", "confirmed", 0, "status",
	    publish_status_name(st), "error", err);

	put_json_line(o);
}

int
cli_publish(int argc, char **argv)
{
	struct pub_args a;
	struct publish_request req;
	struct publish_receipt rc_out;
	struct broker *b = NULL;
	struct plan *p = NULL;
	char *file_body = NULL;
	char err[1024];
	size_t len = 0;
	int64_t delay_ms;
	int st, rc = CLI_FAIL;

	memset(&a, 0, sizeof(a));
	a.stripped = json_array();
	if (args_parse(argc, argv, &a, &rc) != 0)
		goto done;
	if ((p = cli_load_plan(a.plan)) == NULL)
		goto done;
	if (check_offline(p, &a, &delay_ms, &file_body, &len) != 0)
		goto done;

	if (step_broker_open(plan_ladder_broker(p), STEP_BROKER_TIMEOUT_MS, &b, err, sizeof(err)) != 0) {
		fprintf(stderr, "cutover publish: connecting to the broker: %s\n", err);
		st = PUBLISH_ECONNECT;
		goto failed;
	}
	memset(&req, 0, sizeof(req));
	req.plan = p->name;
	req.purpose = PUBLISH_MANUAL;
	req.seq = 1;
	req.delay_ms = delay_ms;
	req.destination = a.dest;
	req.body = file_body != NULL ? file_body : a.body;
	req.len = len;
	req.headers = a.nhdr ? a.hdr : NULL;
	req.nheaders = a.nhdr;
	st = publish_delayed(b, &p->ladder, &req, &rc_out, err, sizeof(err));
	if (st != PUBLISH_OK) {
		fprintf(stderr, "cutover publish: %s\n", err);
		goto failed;
	}
	if (a.json)
		print_confirmed_json(p, &a, delay_ms, &rc_out);
	else
		print_confirmed_text(p, a.dest, delay_ms, &rc_out);
	rc = CLI_OK;
	goto done;
failed:
	if (a.json)
		print_failed_json(st, err);
done:
	args_free(&a);
	broker_close(b);
	free(file_body);
	plan_free(p);
	return rc;
}
