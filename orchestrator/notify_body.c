/* notify_body: the bodies notifiers POST (notify_body.h). The sentence for
 * each notifier event is one row of sentences[]. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "alert_kinds.h"
#include "errbuf.h"
#include "notify_body.h"

/* What the event's details say, as the sentences use them. */
struct facts {
	const char *plan, *step_kind, *error, *alert, *message, *outcome;
	long long step;
};

static void
say_gate(const struct facts *f, char *buf, size_t len)
{
	snprintf(buf, len, "cutover: plan %s waits for approval of step %lld, %s",
	    f->plan, f->step, f->step_kind);
}

static void
say_failed(const struct facts *f, char *buf, size_t len)
{
	snprintf(buf, len, "cutover: plan %s: step %lld, %s, failed: %s", f->plan, f->step,
	    f->step_kind, f->error);
}

/* An alert's sentence, then what its kind's row (alert_kinds.def) says to
 * do: the person notified can act without the page. */
static void
say_alert(const struct facts *f, char *buf, size_t len)
{
	const struct alert_kind *k = alert_kind_find(f->alert);

	if (k == NULL)
		snprintf(buf, len, "cutover: plan %s: alert %s: %s", f->plan, f->alert,
		    f->message);
	else
		snprintf(buf, len, "cutover: plan %s: alert %s: %s. It means: %s. Check: "
		    "%s. Clear: %s", f->plan, f->alert, f->message, k->means, k->check,
		    k->clear);
}

static void
say_finished(const struct facts *f, char *buf, size_t len)
{
	snprintf(buf, len, "cutover: plan %s %s", f->plan, f->outcome);
}

static const struct {
	const char *event;
	void (*say)(const struct facts *, char *, size_t);
} sentences[] = {
	{ "gate_waiting", say_gate },
	{ "step_failed", say_failed },
	{ "alert_opened", say_alert },
	{ "plan_finished", say_finished },
};

static const char *
str_or(const json_t *o, const char *key, const char *dflt)
{
	const char *v = json_string_value(json_object_get(o, key));

	return v != NULL ? v : dflt;
}

static void
facts_of(const struct store_delivery *d, const json_t *details, struct facts *f)
{
	f->plan = d->plan_name;
	f->step = (long long)json_integer_value(json_object_get(details, "step"));
	f->step_kind = str_or(details, "kind", "?");
	f->error = str_or(details, "error", "(no error recorded)");
	f->alert = str_or(details, "alert", "?");
	f->message = str_or(details, "message", "");
	f->outcome = strcmp(d->history_kind, "plan.aborted") == 0 ? "was aborted" :
	    "succeeded";
}

static char *
text_of(const struct store_delivery *d, const json_t *details, char *buf, size_t len)
{
	struct facts f;

	facts_of(d, details, &f);
	snprintf(buf, len, "cutover: plan %s: %s", d->plan_name, d->history_kind);
	for (size_t i = 0; i < sizeof(sentences) / sizeof(sentences[0]); i++)
		if (strcmp(sentences[i].event, d->event) == 0)
			sentences[i].say(&f, buf, len);
	return buf;
}

char *
notify_text(const struct store_delivery *d, char *buf, size_t len)
{
	json_t *details = json_loads(d->details_json != NULL ? d->details_json : "{}", 0,
	    NULL);

	text_of(d, details, buf, len);
	json_decref(details);
	return buf;
}

/* Slack's text escapes &, < and > (its control characters). */
static char *
slack_escape(const char *t)
{
	size_t n = 0;
	char *o, *p;

	for (const char *q = t; *q != '\0'; q++)
		n += *q == '&' ? 5 : (*q == '<' || *q == '>') ? 4 : 1;
	if ((o = malloc(n + 1)) == NULL)
		return NULL;
	for (p = o; *t != '\0'; t++) {
		const char *r = *t == '&' ? "&amp;" : *t == '<' ? "&lt;" : *t == '>' ? "&gt;" :
		    NULL;

		if (r != NULL) {
			memcpy(p, r, strlen(r));
			p += strlen(r);
		} else
			*p++ = *t;
	}
	*p = '\0';
	return o;
}

static void
utc_text(int64_t ms, char *buf, size_t len)
{
	time_t sec = (time_t)(ms / 1000);
	struct tm tm;
	char s[32];

	gmtime_r(&sec, &tm);
	strftime(s, sizeof(s), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03dZ", s, (int)(ms % 1000));
}

/* A webhook body of alert_opened gains its kind's "means", "check" and
 * "clear" (as the API's alerts have them); nothing for a kind the table
 * lacks. */
static void
alert_fields(json_t *doc, const json_t *details)
{
	const struct alert_kind *k = alert_kind_find(str_or(details, "alert", ""));

	if (k == NULL)
		return;
	json_object_set_new(doc, "means", json_string(k->means));
	json_object_set_new(doc, "check", json_string(k->check));
	json_object_set_new(doc, "clear", json_string(k->clear));
}

int
notify_body(enum notify_kind kind, const struct store_delivery *d, char **out,
    char *err, size_t errlen)
{
	json_t *details = NULL, *doc = NULL;
	char text[2400], when[40], *esc = NULL;
	int rc = -1;

	*out = NULL;
	if ((details = json_loads(d->details_json != NULL ? d->details_json : "{}", 0,
	    NULL)) == NULL)
		details = json_object();
	text_of(d, details, text, sizeof(text));
	if (kind == NOTIFY_SLACK) {
		if ((esc = slack_escape(text)) == NULL)
			goto done;
		doc = json_pack("{s:s}", "text", esc);
	} else {
		utc_text(d->event_ts_ms, when, sizeof(when));
		doc = json_pack("{s:s,s:s,s:I,s:I,s:s,s:s,s:I,s:s,s:O}", "event", d->event,
		    "plan", d->plan_name, "plan_id", (json_int_t)d->plan_id, "event_id",
		    (json_int_t)d->event_id, "history_kind", d->history_kind, "time", when,
		    "ts_ms", (json_int_t)d->event_ts_ms, "text", text, "details", details);
		if (doc != NULL && strcmp(d->event, "alert_opened") == 0)
			alert_fields(doc, details);
	}
	if (doc != NULL)
		*out = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (*out != NULL)
		rc = 0;
done:
	if (rc != 0)
		errbuf_set(err, errlen, "building the notification: out of memory");
	free(esc);
	json_decref(doc);
	json_decref(details);
	return rc;
}

int
notify_service_body(enum notify_kind kind, const char *event, const char *text,
    int64_t ts_ms, char **out, char *err, size_t errlen)
{
	char line[1200], when[40], *esc = NULL;
	json_t *doc = NULL;

	*out = NULL;
	snprintf(line, sizeof(line), "cutover: %s", text);
	if (kind == NOTIFY_SLACK) {
		if ((esc = slack_escape(line)) != NULL)
			doc = json_pack("{s:s}", "text", esc);
	} else {
		utc_text(ts_ms, when, sizeof(when));
		doc = json_pack("{s:s,s:b,s:s,s:I,s:s}", "event", event, "service", 1,
		    "time", when, "ts_ms", (json_int_t)ts_ms, "text", line);
	}
	if (doc != NULL)
		*out = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
	free(esc);
	json_decref(doc);
	if (*out == NULL) {
		errbuf_set(err, errlen, "building the notification: out of memory");
		return -1;
	}
	return 0;
}
