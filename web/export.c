/* export: one plan's history as JSON or CSV that an offline check can
 * verify (export.h). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "errbuf.h"
#include "export.h"
#include "store_export.h"
#include "textbuf.h"

void
export_time_utc(int64_t ms, char out[EXPORT_TIME_MAX])
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	char s[24];

	if (ms < 0 || gmtime_r(&t, &tm) == NULL ||
	    strftime(s, sizeof(s), "%Y-%m-%dT%H:%M:%S", &tm) == 0) {
		snprintf(out, EXPORT_TIME_MAX, "?");
		return;
	}
	snprintf(out, EXPORT_TIME_MAX, "%s.%03dZ", s, (int)(ms % 1000));
}

bool
export_csv_guarded(const char *s, size_t n)
{
	return n > 0 && (s[0] == EXPORT_CSV_GUARD ||
	    (s[0] != '\0' && strchr(EXPORT_CSV_FORMULA, s[0]) != NULL));
}

int
export_step_of(const char *kind, const char *details_json, int *current)
{
	json_t *d = json_loads(details_json, 0, NULL);
	json_t *st = json_object_get(d, "step");
	int step = *current;

	if (json_is_integer(st) && json_integer_value(st) > 0 &&
	    json_integer_value(st) <= 100000) {
		step = (int)json_integer_value(st);
		if (strncmp(kind, "step.", 5) == 0 && strcmp(kind, "step.approved_ahead") != 0)
			*current = step;
	} else if (strncmp(kind, "plan.", 5) == 0 || strncmp(kind, "request.", 8) == 0)
		step = 0;
	json_decref(d);
	return step;
}

struct build {
	json_t *events;
	int current;
	int64_t own;
};

static int
add_row(const struct store_event *ev, int own, void *arg)
{
	struct build *b = arg;
	char utc[EXPORT_TIME_MAX];
	json_t *o;
	int step;

	if (!own)
		o = json_pack("{s:I,s:b,s:s,s:s}", "id", (json_int_t)ev->id, "link", 1,
		    "prev_hash", ev->prev_hash, "hash", ev->hash);
	else {
		export_time_utc(ev->ts_ms, utc);
		step = export_step_of(ev->kind, ev->details_json, &b->current);
		b->own++;
		o = json_pack("{s:I,s:I,s:I,s:s,s:o,s:s,s:s,s:s,s:s,s:s}", "id",
		    (json_int_t)ev->id, "plan_id", (json_int_t)ev->plan_id, "ts_ms",
		    (json_int_t)ev->ts_ms, "time_utc", utc, "step",
		    step > 0 ? json_integer(step) : json_null(), "actor", ev->actor,
		    "kind", ev->kind, "details_json", ev->details_json, "prev_hash",
		    ev->prev_hash, "hash", ev->hash);
	}
	return o == NULL || json_array_append_new(b->events, o) != 0;
}

int
export_build(struct store *s, int64_t id, json_t **out, char *err, size_t errlen)
{
	struct build b = { NULL, 0, 0 };
	struct store_head head;
	struct store_plan p;
	char *yaml = NULL, utc[EXPORT_TIME_MAX];
	size_t ylen = 0;
	int64_t now = clock_now_ms();
	int rc;

	*out = NULL;
	if ((rc = store_plan_get(s, id, &p, err, errlen)) != 0)
		return rc;
	if ((rc = store_plan_yaml(s, id, &yaml, &ylen, err, errlen)) != 0)
		return rc;
	rc = -1;
	if ((b.events = json_array()) == NULL)
		goto nomem;
	if (store_export_read(s, id, add_row, &b, &head, err, errlen) != 0)
		goto done;
	export_time_utc(now, utc);
	*out = json_pack("{s:s,s:i,s:I,s:s,s:{s:I,s:s,s:s,s:I,s:s,s:s%},s:I,s:O,"
	    "s:{s:I,s:I,s:s}}", "format", EXPORT_FORMAT, "version", EXPORT_VERSION,
	    "exported_ms", (json_int_t)now, "exported_utc", utc,
	    "plan", "id", (json_int_t)p.id, "name", p.name, "status", p.status,
	    "created_ms", (json_int_t)p.created_ms, "sha256", p.sha256, "yaml", yaml, ylen,
	    "plan_events", (json_int_t)b.own, "events", b.events,
	    "head", "events", (json_int_t)head.events, "last_id", (json_int_t)head.last_id,
	    "last_hash", head.last_hash);
	if (*out == NULL)
		goto nomem;
	rc = 0;
	goto done;
nomem:
	errbuf_set(err, errlen, "exporting: out of memory (or the YAML is not UTF-8)");
done:
	json_decref(b.events);
	free(yaml);
	return rc;
}

/* One CSV field (quoted when it holds a comma, quote, CR or LF), then SEP.
 * A value a spreadsheet would take for a formula (export_csv_guarded) is
 * written with EXPORT_CSV_GUARD before it, inside the quotes. */
static void
field(struct textbuf *t, const char *s, size_t n, const char *sep)
{
	static const char guard_char = EXPORT_CSV_GUARD;
	bool guard = export_csv_guarded(s, n);

	if (strcspn(s, ",\"\r\n") >= n && memchr(s, '\0', n) == NULL) {
		if (guard)
			textbuf_put(t, &guard_char, 1);
		textbuf_put(t, s, n);
	} else {
		textbuf_put(t, "\"", 1);
		if (guard)
			textbuf_put(t, &guard_char, 1);
		for (size_t i = 0; i < n; i++)
			textbuf_put(t, s[i] == '"' ? "\"\"" : s + i, s[i] == '"' ? 2 : 1);
		textbuf_put(t, "\"", 1);
	}
	textbuf_put(t, sep, strlen(sep));
}

/* Member KEY of O as CSV text: a string as is, an integer in decimal,
 * null or absent as empty. */
static void
member(struct textbuf *t, const json_t *o, const char *key, const char *sep)
{
	const json_t *v = json_object_get(o, key);
	char num[32];

	if (json_is_string(v))
		field(t, json_string_value(v), json_string_length(v), sep);
	else if (json_is_integer(v)) {
		snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		field(t, num, strlen(num), sep);
	} else
		field(t, "", 0, sep);
}

/* One row: RECORD, then each column's member of O (NULL: empty), with the
 * overrides given for id, ts_ms, actor, kind, details_json and hash. */
static void
row(struct textbuf *t, const char *record, const json_t *o, const char *const keys[10])
{
	field(t, record, strlen(record), ",");
	for (int k = 0; k < 10; k++)
		member(t, o, keys[k] != NULL ? keys[k] : "", k == 9 ? "\r\n" : ",");
}

int
export_csv(const json_t *doc, char **text, size_t *len, char *err, size_t errlen)
{
	static const char *const ev_keys[10] = { "id", "plan_id", "ts_ms", "time_utc",
		"step", "actor", "kind", "details_json", "prev_hash", "hash" };
	static const char *const plan_keys[10] = { "id", "id", "created_ms", "created_utc",
		NULL, "status", "name", "yaml", NULL, "sha256" };
	static const char *const head_keys[10] = { "last_id", NULL, "exported_ms",
		"exported_utc", NULL, NULL, NULL, "events", NULL, "last_hash" };
	struct textbuf t = { 0 };
	const json_t *plan = json_object_get(doc, "plan"), *ev;
	json_t *p2 = json_deep_copy(plan), *h2 = json_deep_copy(json_object_get(doc, "head"));
	char utc[EXPORT_TIME_MAX], num[32];
	size_t i;

	*text = NULL;
	*len = 0;
	if (p2 == NULL || h2 == NULL)
		goto nomem;
	export_time_utc(json_integer_value(json_object_get(plan, "created_ms")), utc);
	json_object_set_new(p2, "created_utc", json_string(utc));
	json_object_set(h2, "exported_ms", json_object_get(doc, "exported_ms"));
	json_object_set(h2, "exported_utc", json_object_get(doc, "exported_utc"));
	snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT,
	    json_integer_value(json_object_get(h2, "events")));
	json_object_set_new(h2, "events", json_string(num));
	textbuf_put(&t, EXPORT_CSV_HEADER "\r\n", strlen(EXPORT_CSV_HEADER) + 2);
	row(&t, "plan", p2, plan_keys);
	json_array_foreach(json_object_get(doc, "events"), i, ev)
		row(&t, json_is_true(json_object_get(ev, "link")) ? "link" : "event", ev,
		    ev_keys);
	row(&t, "head", h2, head_keys);
	if (t.failed)
		goto nomem;
	json_decref(p2);
	json_decref(h2);
	*text = t.p;
	*len = t.len;
	return 0;
nomem:
	json_decref(p2);
	json_decref(h2);
	free(t.p);
	errbuf_set(err, errlen, "exporting: out of memory");
	return -1;
}
