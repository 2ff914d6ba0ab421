/* traffic_options: cutover-traffic's command line, its usage text and
 * the options checked against the plan (traffic.h). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "ladder.h"
#include "plan.h"
#include "plan_flag.h"
#include "traffic.h"

/* The Unleash client API's path, after the flag service's base URL. */
#define CLIENT_API		"/api/client/features/"

static void
usage(FILE *f)
{
	fprintf(f,
"usage: cutover-traffic --plan PLAN.yaml [options]\n"
"\n"
"Publishes delayed messages as an old-style producer does (one queue per\n"
"distinct delay, declared on demand) until the feature flag turns on, then\n"
"into the plan's ladder; consumes the plan's destinations and reports what\n"
"was lost or early. The plan gives the broker (amqp, username, password),\n"
"the ladder, the destinations and the flag (Unleash url and feature). With\n"
"a target broker in the plan, the old path is on the broker, the ladder on\n"
"the target, and the destinations are consumed on both.\n"
"\n"
"options:\n"
"  --plan FILE            the migration plan (required)\n"
"  --rate N               messages per second (default 200)\n"
"  --duration D           produce for D (e.g. 20s), then drain; default:\n"
"                         until SIGINT or SIGTERM (a second one stops the\n"
"                         drain)\n"
"  --min-delay D          shortest delay (default 1s)\n"
"  --max-delay D          longest delay (default 6s)\n"
"  --delay-step D         delays are min + k x step (default 100ms): with\n"
"                         the defaults 51 distinct delays, so 51 old queues\n"
"                         per destination\n"
"  --old-ladder           the old path is the plan's old.ladder (declared\n"
"                         beforehand): old-path messages go into its entry\n"
"                         exchange, no old queue is declared\n"
"  --old-prefix P         old queues are P.<n>ms (P.<dest>.<n>ms when there\n"
"                         is more than one destination); default \"delay\"\n"
"                         (match them with '^delay\\.[0-9]+ms$')\n"
"  --dest DEST            publish to and consume DEST only (repeatable;\n"
"                         default: every destination of the plan)\n"
"  --path flag|old|ladder follow the flag (default), or always one path\n"
"  --flag-url URL         Unleash base URL (default: the plan's flag.url)\n"
"  --feature NAME         Unleash feature (default: the plan's flag.feature)\n"
"  --client-token REF     env:NAME of an Unleash backend (client API) token\n"
"                         (default env:UNLEASH_CLIENT_TOKEN); a plan whose\n"
"                         flag is kind http is read with its own read call\n"
"  --flag-interval D      how often to read the flag (default 1s)\n"
"  --drain-timeout D      after producing, wait at most D for every\n"
"                         confirmed message (default: max delay + 30s)\n"
"  --confirm-timeout D    wait for a batch's confirms (default 10s)\n"
"  --progress D           a progress line on stderr every D (default 5s;\n"
"                         0 for none)\n"
"  --seed N               seed of the delay and destination choices\n"
"  --stamp-timestamp P    set the AMQP timestamp (publish time, whole\n"
"                         seconds) on P%% of the messages (default 0)\n"
"  --unstamped-max-delay D  with --stamp-timestamp, stamp every message of\n"
"                         a longer delay (a legacy producer of short\n"
"                         delays only)\n"
"  --json                 print the report as one JSON object\n"
"  --help\n"
"\n"
"Every message carries its id (traffic.RUN.SEQ), x-cutover-seq,\n"
"x-cutover-delay-ms, x-cutover-not-before (ms since the epoch: publish time\n"
"+ the requested delay), x-cutover-path (old or ladder) and x-cutover-run.\n"
"The report counts apart the messages that arrived moved (with the\n"
"x-cutover-move-id move_old adds): their duplicates and lateness.\n"
"\n"
"Exit status: 0 when no confirmed message was lost, none arrived early and\n"
"at least one was confirmed; 1 otherwise or when it could not run; 2 usage.\n");
}
static int
usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int
usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "cutover-traffic: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n(cutover-traffic --help for the options)\n");
	return TRAFFIC_EXIT_USAGE;
}
static int
parse_duration(const char *opt, const char *text, bool zero_ok, int64_t *out)
{
	char why[256];

	if (zero_ok && strcmp(text, "0") == 0) {
		*out = 0;
		return 0;
	}
	if (duration_parse(text, out, why, sizeof(why)) != 0)
		return usage_error("%s '%s': %s", opt, text, why);
	if (!zero_ok && *out == 0)
		return usage_error("%s '%s': must be more than zero", opt, text);
	return 0;
}
static int
parse_count(const char *opt, const char *text, int64_t max, int64_t *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(text, &end, 10);
	if (errno != 0 || end == text || *end != '\0' || v < 1 || v > max)
		return usage_error("%s '%s': expected a whole number from 1 to "
		    "%" PRId64, opt, text, max);
	*out = v;
	return 0;
}

#define AT(field)	offsetof(struct traffic_options, field)

/* The options that keep their text as given, by their getopt code, and
 * where each goes in struct traffic_options. */
static const struct {
	int c;
	size_t at;
} text_options[] = {
	{ 'p', AT(plan_file) },
	{ 'o', AT(old_prefix) },
	{ 'u', AT(flag_url) },
	{ 'f', AT(feature) },
};

/* The options that take a count (1 to MAX) or a duration (0 only with
 * ZERO_OK; at most MAX, which MAX_TEXT says, unless MAX is 0), by their
 * getopt code, and where each goes in struct traffic_options. */
static const struct number_option {
	int c;
	const char *name;
	bool count, zero_ok;
	int64_t max;
	const char *max_text;
	size_t at;
} number_options[] = {
	{ 'r', "--rate", true, false, 100000, NULL, AT(rate) },
	{ 'w', "--stamp-timestamp", true, false, 100, NULL, AT(stamp_percent) },
	{ 'd', "--duration", false, false, 0, NULL, AT(duration_ms) },
	{ 'm', "--min-delay", false, true, 0, NULL, AT(min_delay_ms) },
	{ 'M', "--max-delay", false, true, 0, NULL, AT(max_delay_ms) },
	{ 's', "--delay-step", false, false, 0, NULL, AT(step_ms) },
	{ 'i', "--flag-interval", false, false, 0, NULL, AT(flag_interval_ms) },
	{ 'T', "--drain-timeout", false, true, 0, NULL, AT(drain_timeout_ms) },
	{ 'c', "--confirm-timeout", false, false, 600000, "10m", AT(confirm_timeout_ms) },
	{ 'g', "--progress", false, true, 0, NULL, AT(progress_ms) },
	{ 'W', "--unstamped-max-delay", false, false, 0, NULL, AT(unstamped_max_ms) },
};

#undef AT

/* Sets the option of getopt code C to ARG in O when it is one of the
 * tables' above. Returns 1 when it was and is set, 0 when it is not one
 * of them, or TRAFFIC_EXIT_USAGE having said what is wrong with ARG. */
static int
parse_value(int c, const char *arg, struct traffic_options *o)
{
	const struct number_option *n = NULL;
	int64_t *out;
	size_t i;

	for (i = 0; i < sizeof(text_options) / sizeof(text_options[0]); i++)
		if (text_options[i].c == c) {
			*(const char **)(void *)((char *)o + text_options[i].at) = arg;
			return 1;
		}
	for (i = 0; i < sizeof(number_options) / sizeof(number_options[0]); i++)
		if (number_options[i].c == c)
			n = &number_options[i];
	if (n == NULL)
		return 0;
	out = (int64_t *)(void *)((char *)o + n->at);
	if (n->count)
		return parse_count(n->name, arg, n->max, out) != 0 ? TRAFFIC_EXIT_USAGE : 1;
	if (parse_duration(n->name, arg, n->zero_ok, out) != 0)
		return TRAFFIC_EXIT_USAGE;
	if (n->max > 0 && *out > n->max)
		return usage_error("%s: at most %s", n->name, n->max_text);
	return 1;
}

int
traffic_options_parse(int argc, char **argv, struct traffic_options *o)
{
	static const struct option opts[] = {
		{ "plan", required_argument, NULL, 'p' },
		{ "rate", required_argument, NULL, 'r' },
		{ "duration", required_argument, NULL, 'd' },
		{ "min-delay", required_argument, NULL, 'm' },
		{ "max-delay", required_argument, NULL, 'M' },
		{ "delay-step", required_argument, NULL, 's' },
		{ "old-prefix", required_argument, NULL, 'o' },
		{ "old-ladder", no_argument, NULL, 'L' },
		{ "dest", required_argument, NULL, 'D' },
		{ "path", required_argument, NULL, 'P' },
		{ "flag-url", required_argument, NULL, 'u' },
		{ "feature", required_argument, NULL, 'f' },
		{ "client-token", required_argument, NULL, 't' },
		{ "flag-interval", required_argument, NULL, 'i' },
		{ "drain-timeout", required_argument, NULL, 'T' },
		{ "confirm-timeout", required_argument, NULL, 'c' },
		{ "progress", required_argument, NULL, 'g' },
		{ "seed", required_argument, NULL, 'S' },
		{ "stamp-timestamp", required_argument, NULL, 'w' },
		{ "unstamped-max-delay", required_argument, NULL, 'W' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int64_t v;
	char *end;
	int c, rc;

	memset(o, 0, sizeof(*o));
	o->rate = 200;
	o->min_delay_ms = 1000;
	o->max_delay_ms = 6000;
	o->step_ms = 100;
	o->old_prefix = "delay";
	o->mode = TRAFFIC_FLAG_UNLEASH;	/* or the plan's: see main */
	o->client_token = "env:UNLEASH_CLIENT_TOKEN";
	o->flag_interval_ms = 1000;
	o->drain_timeout_ms = -1;
	o->confirm_timeout_ms = 10000;
	o->progress_ms = 5000;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if ((rc = parse_value(c, optarg, o)) == TRAFFIC_EXIT_USAGE)
			return rc;
		if (rc == 1)
			continue;
		switch (c) {
		case 'L':
			o->old_ladder = true;
			break;
		case 'D':
			if (o->ndests == TRAFFIC_DESTS_MAX)
				return usage_error("more than %d --dest options",
				    TRAFFIC_DESTS_MAX);
			o->dests[o->ndests++] = optarg;
			break;
		case 'P':
			if (strcmp(optarg, "flag") == 0)
				o->mode = TRAFFIC_FLAG_UNLEASH;
			else if (strcmp(optarg, "old") == 0)
				o->mode = TRAFFIC_FLAG_OLD;
			else if (strcmp(optarg, "ladder") == 0)
				o->mode = TRAFFIC_FLAG_LADDER;
			else
				return usage_error("--path '%s': expected flag, "
				    "old or ladder", optarg);
			break;
		case 't':
			if (strncmp(optarg, "env:", 4) != 0 || optarg[4] == '\0')
				return usage_error("--client-token: expected "
				    "env:NAME (a secret is never given on the "
				    "command line)");
			o->client_token = optarg;
			break;
		case 'S':
			errno = 0;
			o->seed = strtoull(optarg, &end, 10);
			if (errno != 0 || end == optarg || *end != '\0' ||
			    optarg[0] == '-')
				return usage_error("--seed '%s': expected a "
				    "whole number", optarg);
			o->seeded = true;
			break;
		case 'j':
			o->json = true;
			break;
		case 'h':
			usage(stdout);
			return 1;
		default:
			return usage_error("unknown or incomplete option '%s'",
			    argv[optind - 1]);
		}
	}
	if (optind != argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if (o->plan_file == NULL)
		return usage_error("--plan is required");
	if (o->min_delay_ms > o->max_delay_ms)
		return usage_error("--min-delay is above --max-delay");
	v = (o->max_delay_ms - o->min_delay_ms) / o->step_ms + 1;
	if (v > 100000)
		return usage_error("%" PRId64 " distinct delays: at most 100000 "
		    "(raise --delay-step)", v);
	if (o->old_prefix[0] == '\0' || strlen(o->old_prefix) > 100)
		return usage_error("--old-prefix: 1 to 100 bytes");
	return 0;
}
int
traffic_options_check(struct traffic_options *o, const struct plan *p,
    struct traffic_flag *f)
{
	const struct ladder *l = &p->ladder;
	char why[512];
	size_t i, j, base, size;
	bool found;

	if (o->ndests == 0) {
		if (p->ndestinations > TRAFFIC_DESTS_MAX)
			return usage_error("the plan has %zu destinations; give "
			    "at most %d with --dest", p->ndestinations,
			    TRAFFIC_DESTS_MAX);
		for (i = 0; i < p->ndestinations; i++)
			o->dests[o->ndests++] = p->destinations[i];
	}
	for (i = 0; i < o->ndests; i++) {
		found = false;
		for (j = 0; j < p->ndestinations; j++)
			if (strcmp(o->dests[i], p->destinations[j]) == 0)
				found = true;
		if (!found)
			return usage_error("--dest %s: not one of the plan's "
			    "destinations", o->dests[i]);
		for (j = 0; j < i; j++)
			if (strcmp(o->dests[i], o->dests[j]) == 0)
				return usage_error("--dest %s: given twice",
				    o->dests[i]);
		if (ladder_check_destination(l, o->dests[i], why,
		    sizeof(why)) != 0)
			return usage_error("destination %s: %s", o->dests[i],
			    why);
	}
	if (o->old_ladder && !p->old.from_ladder)
		return usage_error("--old-ladder: the plan has no old.ladder");
	if (o->old_ladder && o->mode != TRAFFIC_FLAG_LADDER &&
	    o->max_delay_ms > ladder_max_delay_ms(&p->old.ladder))
		return usage_error("--max-delay %" PRId64 " ms is beyond old.ladder's "
		    "largest delay, %" PRId64 " ms", o->max_delay_ms,
		    ladder_max_delay_ms(&p->old.ladder));
	if (o->mode != TRAFFIC_FLAG_OLD &&
	    o->max_delay_ms > ladder_max_delay_ms(l))
		return usage_error("--max-delay %" PRId64 " ms is beyond the "
		    "ladder's largest delay, %" PRId64 " ms", o->max_delay_ms,
		    ladder_max_delay_ms(l));
	if (o->drain_timeout_ms < 0)
		o->drain_timeout_ms = o->max_delay_ms + 30000;

	f->mode = o->mode;
	f->interval_ms = o->flag_interval_ms;
	f->token_ref = o->client_token;
	f->plan = p;
	if (o->mode != TRAFFIC_FLAG_UNLEASH)
		return 0;
	if (o->flag_url == NULL && p->flag.kind != NULL &&
	    strcmp(p->flag.kind, "http") == 0) {
		f->mode = TRAFFIC_FLAG_PLAN;
		return 0;
	}
	if (p->flag.kind != NULL && strcmp(p->flag.kind, "unleash") == 0) {
		if (o->flag_url == NULL)
			o->flag_url = plan_flag_unleash(p)->url;
		if (o->feature == NULL)
			o->feature = plan_flag_unleash(p)->feature;
	}
	if (o->flag_url == NULL || o->feature == NULL)
		return usage_error("the plan has no Unleash flag: give "
		    "--flag-url and --feature, or --path old|ladder");
	if (strncmp(o->flag_url, "http://", 7) != 0 &&
	    strncmp(o->flag_url, "https://", 8) != 0)
		return usage_error("--flag-url '%s': expected http:// or "
		    "https://", o->flag_url);
	if (o->feature[0] == '\0' || strcspn(o->feature, "/?#%") !=
	    strlen(o->feature))
		return usage_error("feature '%s': expected a plain name",
		    o->feature);
	/* One slash between the base URL and the API path. */
	base = strlen(o->flag_url);
	while (base > 0 && o->flag_url[base - 1] == '/')
		base--;
	size = base + sizeof(CLIENT_API) + strlen(o->feature);
	if ((f->url = malloc(size)) == NULL) {
		fprintf(stderr, "cutover-traffic: out of memory\n");
		return TRAFFIC_EXIT_FAIL;
	}
	snprintf(f->url, size, "%.*s%s%s", (int)base, o->flag_url, CLIENT_API,
	    o->feature);
	return 0;
}
