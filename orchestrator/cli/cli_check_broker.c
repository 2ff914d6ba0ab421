/* cli_check_broker: `cutover check --broker` — after a plan passes check,
 * contacts its broker read-only through the management API and reports
 * the RabbitMQ version and whether the feature flags the plan needs are
 * enabled (broker_needs.c); a broker that cannot honour the plan fails
 * the check, naming the missing flag. For a plan that moves old messages
 * it also says whether the broker stamps arrivals, which move_old's
 * `from: arrival` needs (arrival_stamp.c: the one write, a queue of its
 * own for two messages, deleted at once). */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "broker/broker.h"
#include "broker/mgmt.h"
#include "arrival_stamp.h"
#include "broker_needs.h"
#include "cli.h"
#include "plan.h"
#include "step.h"

#define CHECK_BROKER_TIMEOUT_MS 10000

/* Prints REPORT (needs_check's) for a person. */
static void
print_report(const json_t *report, FILE *out)
{
	const json_t *row;
	size_t i;

	fprintf(out, "broker: RabbitMQ %s", json_string_value(json_object_get(report,
	    "version")));
	if (json_is_string(json_object_get(report, "erlang")))
		fprintf(out, " (Erlang %s)", json_string_value(json_object_get(report,
		    "erlang")));
	fprintf(out, "\n");
	json_array_foreach(json_object_get(report, "needs"), i, row) {
		const char *flag = json_string_value(json_object_get(row, "flag"));
		const char *state = json_string_value(json_object_get(row, "state"));
		const char *ok = json_is_true(json_object_get(row, "ok")) ? "ok" : "MISSING";

		if (flag != NULL)
			fprintf(out, "  %-7s %s: feature flag %s %s\n", ok,
			    json_string_value(json_object_get(row, "need")), flag, state);
		else
			fprintf(out, "  %-7s %s: RabbitMQ %s or later (it is %s)\n", ok,
			    json_string_value(json_object_get(row, "need")),
			    json_string_value(json_object_get(row, "min_version")), state);
	}
}

/* For a plan with a move_old step: asks P's broker whether it stamps
 * arrivals (arrival_stamp.h), into REPORT's "arrival_stamps" ({"state",
 * "meaning"}, or {"error"} when the broker could not be asked: a word, not
 * a failed check, since nothing of the plan's is missing then), and prints
 * it unless JSON. */
static void
arrival_report(const struct plan *p, json_t *report, int json, FILE *out)
{
	enum arrival_stamping st;
	struct broker *b = NULL;
	char why[1024];
	json_t *a;

	if (report == NULL || plan_find_step(p, PLAN_STEP_MOVE_OLD) < 0)
		return;
	if (step_broker_open(p, CHECK_BROKER_TIMEOUT_MS, &b, why, sizeof(why)) != 0 ||
	    arrival_probe(b, p->name, &st, why, sizeof(why)) != 0) {
		a = json_pack("{s:s}", "error", why);
		if (!json)
			fprintf(out, "  ?       arrival stamps (timestamp_in_ms): not "
			    "known: %s\n", why);
	} else {
		a = json_pack("{s:s,s:s}", "state", arrival_stamping_name(st), "meaning",
		    arrival_stamping_meaning(st));
		if (!json)
			fprintf(out, "  info    arrival stamps (timestamp_in_ms): %s: %s\n",
			    arrival_stamping_name(st), arrival_stamping_meaning(st));
	}
	json_object_set_new(report, "arrival_stamps", a);
	broker_close(b);
}

int
cli_check_broker(const char *file, int json, FILE *out, FILE *errout,
    json_t *entry)
{
	struct plan *p = NULL;
	struct plan_errors errs = { 0 };
	struct broker_url u;
	struct mgmt *m = NULL;
	json_t *report = NULL;
	char err[1024] = "", why[512];
	int rc = -1;

	if (plan_load_file(file, &p, &errs) != 0) {
		snprintf(err, sizeof(err), "%s: the plan does not load", file);
		goto done;
	}
	if (broker_url_parse(p->broker.amqp, &u, why, sizeof(why)) != 0) {
		snprintf(err, sizeof(err), "%s: broker.amqp: %s", file, why);
		goto done;
	}
	if (mgmt_open(p->broker.management, u.vhost, p->broker.username,
	    p->broker.password, CHECK_BROKER_TIMEOUT_MS, &m, why, sizeof(why)) != 0) {
		snprintf(err, sizeof(err), "%s: opening the management API: %s", file, why);
		goto done;
	}
	rc = needs_check(m, p, &report, why, sizeof(why));
	if (rc != 0)
		snprintf(err, sizeof(err), "%s: %s", file, why);
	if (!json && json_is_string(json_object_get(report, "version")))
		print_report(report, out);
	if (json_is_string(json_object_get(report, "version")))
		arrival_report(p, report, json, out);
done:
	if (rc != 0 && !json)
		fprintf(errout, "cutover check: %s\n", err);
	if (entry != NULL) {
		if (report == NULL)
			report = json_pack("{s:b}", "ok", 0);
		if (rc != 0)
			json_object_set_new(report, "error", json_string(err));
		json_object_set(entry, "broker", report);
		if (rc != 0)
			json_object_set_new(entry, "valid", json_false());
	}
	json_decref(report);
	mgmt_close(m);
	plan_free(p);
	plan_errors_free(&errs);
	return rc;
}
