/* cli_encode: `cutover encode` — a delay and a destination as the ladder
 * sees them: units (ceiling), entry exchange, routing key and waits. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"
#include "duration.h"
#include "ladder.h"

/* Writes the usage line, naming every style of the naming table, into OUT
 * (OUTLEN bytes). Returns OUT. */
static const char *
usage_line(char *out, size_t outlen)
{
	char names[128];

	snprintf(out, outlen, "cutover encode [--naming %s] [--prefix P] "
	    "--unit D (--levels N | --max-delay D) [--json] DELAY DESTINATION "
	    "(kombu and nservicebus fix --unit and --levels: give neither, or "
	    "their own)", ladder_naming_list("|", "|", names, sizeof(names)));
	return out;
}

/* Parses a level count: a plain decimal integer. Returns 0 or -1. */
static int
parse_levels(const char *s, int *out)
{
	char *end;
	long v;

	if (*s < '0' || *s > '9')
		return -1;
	v = strtol(s, &end, 10);
	if (*end != '\0' || v < 1 || v > LADDER_MAX_LEVELS)
		return -1;
	*out = (int)v;
	return 0;
}

static void
print_human(const struct ladder *l, int64_t delay_ms, uint64_t units,
    const char *entry, const char *key)
{
	char d[32], u[32], m[32];
	int first = 1;

	printf("delay          %s on a %s ladder of %d levels (max %s)\n",
	    duration_format(delay_ms, d, sizeof(d)),
	    duration_format(l->unit_ms, u, sizeof(u)), l->levels,
	    duration_format(ladder_max_delay_ms(l), m, sizeof(m)));
	printf("units          %llu\n", (unsigned long long)units);
	printf("entry exchange %s\n", entry);
	printf("routing key    %s\n", key);
	printf("waits          ");
	if (units == 0)
		printf("none: delivered at once");
	for (int k = l->levels - 1; k >= 0; k--) {
		if (!(units >> k & 1))
			continue;
		printf("%slevel %d (%llu units, %s)", first ? "" : ", ", k,
		    1ULL << k, duration_format(ladder_level_ttl_ms(l, k), d, sizeof(d)));
		first = 0;
	}
	printf("\n");
}

static int
print_json(const struct ladder *l, uint64_t units, const char *entry, const char *key)
{
	json_t *o, *waits;
	int rc;

	waits = json_array();
	for (int k = l->levels - 1; k >= 0; k--)
		if (units >> k & 1)
			json_array_append_new(waits, json_integer((json_int_t)(1ULL << k)));
	o = json_pack("{s:I,s:s,s:s,s:o}", "units", (json_int_t)units,
	    "entry_exchange", entry, "routing_key", key, "waits", waits);
	if (o == NULL)
		return -1;
	rc = json_dumpf(o, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
	printf("\n");
	json_decref(o);
	return rc;
}

/* What the command line of `cutover encode` says. */
struct encode_args {
	enum ladder_naming naming;
	const char *unit, *levels, *max_delay;
	const char *prefix;		/* NULL: the style's default */
	const char *delay, *dest;
	int json;
	const char *usage;		/* the usage line, for errors */
};

/* cli_options' take: --naming's ARG into DATA, a struct encode_args. */
static int
take_option(int c, char *arg, void *data)
{
	struct encode_args *a = data;
	char names[128];

	(void)c;
	if (ladder_naming_parse(arg, &a->naming) != 0)
		return cli_usage_error("encode", a->usage, "--naming '%s': expected %s",
		    arg, ladder_naming_list(", ", " or ", names, sizeof(names)));
	return CLI_GO_ON;
}

/* Reads ARGV into A. Returns CLI_GO_ON, or the exit status after --help
 * or a usage error (printed with A->usage). */
static int
parse_args(int argc, char **argv, struct encode_args *a)
{
	static const struct cli_option opts[] = {
		CLI_TEXT("unit", 'u', struct encode_args, unit),
		CLI_TEXT("levels", 'l', struct encode_args, levels),
		CLI_TEXT("max-delay", 'm', struct encode_args, max_delay),
		CLI_TAKE("naming", 'n', true),
		CLI_TEXT("prefix", 'p', struct encode_args, prefix),
		CLI_FLAG("json", 'j', struct encode_args, json),
		CLI_OPTIONS_END
	};
	const struct cli_options o = { .verb = "encode", .usage = a->usage,
	    .opts = opts, .take = take_option, .data = a };
	const char *usage = a->usage;
	int rc;

	if ((rc = cli_options_read(&o, argc, argv)) != CLI_GO_ON)
		return rc;
	if (argc - optind != 2)
		return cli_usage_error("encode", usage, "expected DELAY and DESTINATION");
	if (a->levels != NULL && a->max_delay != NULL)
		return cli_usage_error("encode", usage,
		    "give exactly one of --levels and --max-delay");
	if (ladder_style(a->naming)->fixed_levels == 0) {
		if (a->unit == NULL)
			return cli_usage_error("encode", usage, "--unit is required");
		if (a->levels == NULL && a->max_delay == NULL)
			return cli_usage_error("encode", usage,
			    "give exactly one of --levels and --max-delay");
	}
	a->delay = argv[optind];
	a->dest = argv[optind + 1];
	return CLI_GO_ON;
}

/* Refuses what A asks of a style that does not have it: a prefix for
 * fixed names, a unit or a level count other than a fixed ladder's own.
 * Returns CLI_OK, CLI_USAGE after printing why, or CLI_FAIL for a unit
 * that is not a duration. */
static int
args_fit_style(const struct encode_args *a, const char *usage)
{
	const struct ladder_style *st = ladder_style(a->naming);
	char err[256], fixed[32];
	int64_t unit_ms;
	int levels;

	if (a->prefix != NULL && st->prefix == LADDER_PREFIX_NONE)
		return cli_usage_error("encode", usage, "--prefix '%s': %s naming has "
		    "fixed names, without a prefix", a->prefix, st->name);
	if (st->fixed_levels == 0)
		return CLI_OK;
	duration_format(st->fixed_unit_ms, fixed, sizeof(fixed));
	if (a->unit != NULL) {
		if (duration_parse(a->unit, &unit_ms, err, sizeof(err)) != 0) {
			fprintf(stderr, "cutover encode: --unit '%s': %s\n", a->unit, err);
			return CLI_FAIL;
		}
		if (unit_ms != st->fixed_unit_ms)
			return cli_usage_error("encode", usage, "--unit %s: %s naming "
			    "has a unit of %s (%d levels); give no --unit, or %s",
			    a->unit, st->name, fixed, st->fixed_levels, fixed);
	}
	if (a->levels != NULL && (parse_levels(a->levels, &levels) != 0 ||
	    levels != st->fixed_levels))
		return cli_usage_error("encode", usage, "--levels %s: %s naming has %d "
		    "levels (of %s); give no --levels, or %d", a->levels, st->name,
		    st->fixed_levels, fixed, st->fixed_levels);
	return CLI_OK;
}

/* The level count A asks for with UNIT_MS: --levels, or the levels
 * --max-delay needs. Returns it, or -1 after printing why. */
static int
args_levels(const struct encode_args *a, int64_t unit_ms)
{
	char err[256];
	int64_t max_ms;
	int levels;

	if (a->levels != NULL) {
		if (parse_levels(a->levels, &levels) == 0)
			return levels;
		fprintf(stderr, "cutover encode: --levels '%s': expected an integer from 1 to %d\n",
		    a->levels, LADDER_MAX_LEVELS);
		return -1;
	}
	if (duration_parse(a->max_delay, &max_ms, err, sizeof(err)) != 0) {
		fprintf(stderr, "cutover encode: --max-delay '%s': %s\n", a->max_delay, err);
		return -1;
	}
	levels = ladder_levels_for((uint64_t)(max_ms / unit_ms + (max_ms % unit_ms != 0)));
	if (levels < 0)
		fprintf(stderr, "cutover encode: --max-delay '%s' needs more than %d levels "
		    "of %s\n", a->max_delay, LADDER_MAX_LEVELS, a->unit);
	return levels;
}

/* Builds the ladder A describes into L: a fixed naming's own unit and
 * levels when A gives none, and --max-delay as its limit (as a plan's
 * ladder.max_delay). Returns CLI_OK, or CLI_FAIL after printing why. */
static int
args_ladder(const struct encode_args *a, struct ladder *l)
{
	char err[256];
	const struct ladder_style *st = ladder_style(a->naming);
	int64_t unit_ms, max_ms;
	int levels;

	if (a->unit == NULL)
		unit_ms = st->fixed_unit_ms;
	else if (duration_parse(a->unit, &unit_ms, err, sizeof(err)) != 0) {
		fprintf(stderr, "cutover encode: --unit '%s': %s\n", a->unit, err);
		return CLI_FAIL;
	}
	if (unit_ms == 0) {
		fprintf(stderr, "cutover encode: --unit '%s': the unit must be greater "
		    "than zero\n", a->unit);
		return CLI_FAIL;
	}
	if (a->levels == NULL && a->max_delay == NULL)
		levels = st->fixed_levels;
	else if ((levels = args_levels(a, unit_ms)) < 0)
		return CLI_FAIL;
	if (st->fixed_levels != 0 && levels > st->fixed_levels) {
		fprintf(stderr, "cutover encode: --max-delay '%s' needs more than the %d "
		    "levels of %s naming\n", a->max_delay, st->fixed_levels, st->name);
		return CLI_FAIL;
	}
	if (st->fixed_levels != 0)
		levels = st->fixed_levels;
	if (ladder_init(l, a->naming, a->prefix != NULL ? a->prefix :
	    st->default_prefix, unit_ms, levels, err, sizeof(err)) != 0) {
		fprintf(stderr, "cutover encode: %s\n", err);
		return CLI_FAIL;
	}
	/* --max-delay is the most a plan of it publishes, as ladder.max_delay. */
	if (a->max_delay != NULL && duration_parse(a->max_delay, &max_ms, err,
	    sizeof(err)) == 0 && ladder_set_limit(l, max_ms, err, sizeof(err)) != 0) {
		fprintf(stderr, "cutover encode: --max-delay '%s': %s\n", a->max_delay, err);
		return CLI_FAIL;
	}
	return CLI_OK;
}

int
cli_encode(int argc, char **argv)
{
	struct encode_args a = { .naming = LADDER_NAMING_CUTOVER };
	struct ladder l;
	char err[256], key[LADDER_NAME_MAX], entry[LADDER_NAME_MAX], usage[320];
	int64_t delay_ms;
	uint64_t units;
	int rc;

	usage_line(usage, sizeof(usage));
	a.usage = usage;
	if ((rc = parse_args(argc, argv, &a)) != CLI_GO_ON)
		return rc;
	if ((rc = args_fit_style(&a, usage)) != CLI_OK ||
	    (rc = args_ladder(&a, &l)) != CLI_OK)
		return rc;
	if (duration_parse(a.delay, &delay_ms, err, sizeof(err)) != 0) {
		fprintf(stderr, "cutover encode: delay '%s': %s\n", a.delay, err);
		return CLI_FAIL;
	}
	if (ladder_encode(&l, delay_ms, &units, err, sizeof(err)) != 0 ||
	    ladder_routing_key(&l, units, a.dest, key, sizeof(key),
	    err, sizeof(err)) != 0) {
		fprintf(stderr, "cutover encode: %s\n", err);
		return CLI_FAIL;
	}
	ladder_entry_exchange(&l, units, entry, sizeof(entry));
	if (a.json) {
		if (print_json(&l, units, entry, key) != 0) {
			fprintf(stderr, "cutover encode: writing JSON failed\n");
			return CLI_FAIL;
		}
	} else
		print_human(&l, delay_ms, units, entry, key);
	return CLI_OK;
}
