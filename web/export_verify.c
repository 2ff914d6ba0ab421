/* export_verify: an export's rows read from JSON or CSV into one form,
 * then the chain walked through them (export_verify.h). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "errbuf.h"
#include "export.h"
#include "export_verify.h"
#include "hex.h"

/* Bytes of the export: in the JSON document, or in the CSV copy. */
struct str {
	const char *p;
	size_t n;
};

/* One row of the export, as read. A number is -1 when absent, and
 * BAD names the first field that is malformed. */
struct xrow {
	int link;
	long line;
	int64_t id, plan_id, ts_ms, step;	/* step 0: the plan's own */
	struct str time_utc, actor, kind, details, prev, hash;
	const char *bad;
};

/* The export, as read. */
struct xdoc {
	struct str format, name, status, sha256, yaml, head_hash;
	int64_t version, plan_id, head_events, head_id;
	const char *bad;			/* a malformed plan or head field */
	struct xrow *rows;
	size_t n, cap;
};

static void
why(struct export_check *res, int64_t id, long line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Records the failure: event ID (0: none), LINE (0: none), the reason. */
static void
why(struct export_check *res, int64_t id, long line, const char *fmt, ...)
{
	va_list ap;

	res->bad_id = id;
	res->line = line;
	va_start(ap, fmt);
	vsnprintf(res->reason, sizeof(res->reason), fmt, ap);
	va_end(ap);
}

/* A decimal integer (an optional '-', 1 to 18 digits); empty is -1. Sets
 * *BAD to NAME when S is neither. */
static int64_t
int_of(struct str s, const char *name, const char **bad)
{
	int64_t v = 0;
	size_t i = s.n > 0 && s.p[0] == '-';

	if (s.n == 0)
		return -1;
	if (s.n == i || s.n - i > 18)
		goto malformed;
	for (size_t k = i; k < s.n; k++) {
		if (s.p[k] < '0' || s.p[k] > '9')
			goto malformed;
		v = v * 10 + (s.p[k] - '0');
	}
	return i ? -v : v;
malformed:
	if (*bad == NULL)
		*bad = name;
	return -1;
}

static bool
eq(struct str s, const char *c)
{
	return s.n == strlen(c) && (s.n == 0 || memcmp(s.p, c, s.n) == 0);
}

static int
hex64(struct str s)
{
	if (s.n != 64)
		return 0;
	for (size_t i = 0; i < 64; i++)
		if (!((s.p[i] >= '0' && s.p[i] <= '9') || (s.p[i] >= 'a' && s.p[i] <= 'f')))
			return 0;
	return 1;
}

/* S as a NUL-terminated copy into OUT (OUTLEN bytes, truncating). */
static void
cstr(struct str s, char *out, size_t outlen)
{
	size_t n = s.n < outlen - 1 ? s.n : outlen - 1;

	if (n > 0)
		memcpy(out, s.p, n);
	out[n] = '\0';
}

static struct xrow *
new_row(struct xdoc *d)
{
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 256;
		struct xrow *grown = realloc(d->rows, cap * sizeof(*grown));

		if (grown == NULL)
			return NULL;
		d->rows = grown;
		d->cap = cap;
	}
	memset(&d->rows[d->n], 0, sizeof(d->rows[0]));
	return &d->rows[d->n++];
}

/* ---- JSON ---- */

/* Member KEY of O: a string's bytes, empty when null or absent; *BAD is
 * set to KEY when it is something else. */
static struct str
jstr(const json_t *o, const char *key, const char **bad)
{
	const json_t *v = json_object_get(o, key);
	struct str s = { "", 0 };

	if (json_is_string(v)) {
		s.p = json_string_value(v);
		s.n = json_string_length(v);
	} else if (v != NULL && !json_is_null(v) && *bad == NULL)
		*bad = key;
	return s;
}

/* Member KEY of O as an integer, -1 when null or absent. */
static int64_t
jint(const json_t *o, const char *key, const char **bad)
{
	const json_t *v = json_object_get(o, key);

	if (json_is_integer(v))
		return (int64_t)json_integer_value(v);
	if (v != NULL && !json_is_null(v) && *bad == NULL)
		*bad = key;
	return -1;
}

/* The objects of the JSON export that read_json reads members of. */
enum jobject { J_ROOT, J_PLAN, J_HEAD, J_EVENT };

/* A member of the JSON export and where it is read to: KEY of object OBJ,
 * into the struct str (STR) or the int64_t at OFF in the struct xdoc (an
 * event's: struct xrow). */
struct jmember {
	enum jobject obj;
	const char *key;
	size_t off;
	bool str;
};

#define JSTR(obj, type, field, key)	{ obj, key, offsetof(struct type, field), true }
#define JINT(obj, type, field, key)	{ obj, key, offsetof(struct type, field), false }

/* The members read_json reads, each object's in its order (the first
 * malformed one is the one named). */
static const struct jmember jmembers[] = {
	JSTR(J_ROOT, xdoc, format, "format"),
	JINT(J_ROOT, xdoc, version, "version"),
	JINT(J_PLAN, xdoc, plan_id, "id"),
	JSTR(J_PLAN, xdoc, name, "name"),
	JSTR(J_PLAN, xdoc, status, "status"),
	JSTR(J_PLAN, xdoc, sha256, "sha256"),
	JSTR(J_PLAN, xdoc, yaml, "yaml"),
	JINT(J_HEAD, xdoc, head_events, "events"),
	JINT(J_HEAD, xdoc, head_id, "last_id"),
	JSTR(J_HEAD, xdoc, head_hash, "last_hash"),
	JINT(J_EVENT, xrow, id, "id"),
	JINT(J_EVENT, xrow, plan_id, "plan_id"),
	JINT(J_EVENT, xrow, ts_ms, "ts_ms"),
	JINT(J_EVENT, xrow, step, "step"),
	JSTR(J_EVENT, xrow, time_utc, "time_utc"),
	JSTR(J_EVENT, xrow, actor, "actor"),
	JSTR(J_EVENT, xrow, kind, "kind"),
	JSTR(J_EVENT, xrow, details, "details_json"),
	JSTR(J_EVENT, xrow, prev, "prev_hash"),
	JSTR(J_EVENT, xrow, hash, "hash"),
};

/* Reads the members of O, the export's object OBJ, into the struct at TO
 * with jstr and jint (*BAD naming the first malformed one). */
static void
jread(const json_t *o, enum jobject obj, void *to, const char **bad)
{
	for (size_t k = 0; k < sizeof(jmembers) / sizeof(jmembers[0]); k++) {
		const struct jmember *m = &jmembers[k];

		if (m->obj != obj)
			continue;
		if (m->str)
			*(struct str *)((char *)to + m->off) = jstr(o, m->key, bad);
		else
			*(int64_t *)((char *)to + m->off) = jint(o, m->key, bad);
	}
}

/* Reads the JSON export ROOT into D. Returns 0, 1 with RES saying what is
 * malformed, -1 out of memory. */
static int
read_json(const json_t *root, struct xdoc *d, struct export_check *res)
{
	const json_t *plan = json_object_get(root, "plan"), *head = json_object_get(root,
	    "head"), *evs = json_object_get(root, "events"), *e;
	size_t i;

	if (!json_is_object(plan) || !json_is_object(head) || !json_is_array(evs)) {
		why(res, 0, 0, "not a cutover history export: expected an object with "
		    "plan, events and head");
		return 1;
	}
	jread(root, J_ROOT, d, &d->bad);
	jread(plan, J_PLAN, d, &d->bad);
	jread(head, J_HEAD, d, &d->bad);
	json_array_foreach(evs, i, e) {
		struct xrow *r = new_row(d);

		if (r == NULL)
			return -1;
		if (!json_is_object(e)) {
			why(res, 0, 0, "events[%zu] is not an object", i);
			return 1;
		}
		r->link = json_is_true(json_object_get(e, "link"));
		jread(e, J_EVENT, r, &r->bad);
		if (r->step < 0)
			r->step = 0;
	}
	return 0;
}

/* ---- CSV ---- */

#define NCOLS	11

/* Reads one CSV record at *P (END: the text's end) into F, unquoting in
 * place and taking off the formula guard, counting lines in *LINE.
 * Returns the number of fields, 0 at the end, -1 when malformed (a stray
 * quote, too many fields, no CRLF or LF). */
static int
csv_record(char **p, char *end, struct str f[NCOLS], long *line)
{
	char *q = *p, *w;
	int n = 0;

	if (q == end)
		return 0;
	for (;;) {
		if (n == NCOLS)
			return -1;
		f[n].p = w = q;
		if (q < end && *q == '"') {
			for (q++;; q++) {
				if (q == end)
					return -1;
				if (*q == '"') {
					if (q + 1 < end && q[1] == '"') {
						*w++ = '"';
						q++;
						continue;
					}
					q++;
					break;
				}
				if (*q == '\n')
					(*line)++;
				*w++ = *q;
			}
		} else
			for (; q < end && *q != ',' && *q != '\r' && *q != '\n'; q++) {
				if (*q == '"')
					return -1;
				w++;
			}
		f[n].n = (size_t)(w - f[n].p);
		/* The export's guard against formulas comes off exactly: only
		 * before what the export guards (export.h). */
		if (f[n].n > 1 && f[n].p[0] == EXPORT_CSV_GUARD &&
		    export_csv_guarded(f[n].p + 1, f[n].n - 1)) {
			f[n].p++;
			f[n].n--;
		}
		n++;
		if (q < end && *q == ',') {
			q++;
			continue;
		}
		if (q < end && *q == '\r')
			q++;
		if (q == end || *q != '\n')
			return -1;
		*p = q + 1;
		(*line)++;
		return n;
	}
}

/* Reads the CSV export TEXT (modifiable, END its end) into D. Returns 0,
 * 1 with RES saying what is malformed, -1 out of memory. */
static int
read_csv(char *text, char *end, struct xdoc *d, struct export_check *res)
{
	static const char *const cols[NCOLS] = { "record", "id", "plan_id", "ts_ms",
		"time_utc", "step", "actor", "kind", "details_json", "prev_hash", "hash" };
	struct str f[NCOLS];
	char *p = text;
	long line = 1, at;
	int n, plan = 0, head = 0;

	n = csv_record(&p, end, f, &line);
	for (int k = 0; k < NCOLS && n == NCOLS; k++)
		if (!eq(f[k], cols[k]))
			n = -1;
	if (n != NCOLS) {
		why(res, 0, 1, "not a cutover history export: line 1 must be "
		    EXPORT_CSV_HEADER);
		return 1;
	}
	d->format = (struct str){ EXPORT_FORMAT, strlen(EXPORT_FORMAT) };
	d->version = EXPORT_VERSION;
	for (at = line; (n = csv_record(&p, end, f, &line)) != 0; at = line) {
		struct xrow *r;

		if (n != NCOLS) {
			why(res, 0, at, "line %ld: %s", at, n < 0 ? "malformed CSV (a stray "
			    "quote, or no line end)" : "expected 11 fields");
			return 1;
		}
		if (head) {
			why(res, 0, at, "line %ld: a row after the head row", at);
			return 1;
		}
		if (eq(f[0], "plan") && !plan && d->n == 0) {
			plan = 1;
			d->plan_id = int_of(f[1], "id", &d->bad);
			d->status = f[6];
			d->name = f[7];
			d->yaml = f[8];
			d->sha256 = f[10];
			continue;
		}
		if (eq(f[0], "head")) {
			head = 1;
			d->head_id = int_of(f[1], "id", &d->bad);
			d->head_events = int_of(f[8], "details_json", &d->bad);
			d->head_hash = f[10];
			continue;
		}
		if (!plan || (!eq(f[0], "event") && !eq(f[0], "link"))) {
			why(res, 0, at, "line %ld: expected %s row", at, plan ?
			    "an event, link or head" : "the plan");
			return 1;
		}
		if ((r = new_row(d)) == NULL)
			return -1;
		r->link = eq(f[0], "link");
		r->line = at;
		r->id = int_of(f[1], "id", &r->bad);
		r->plan_id = int_of(f[2], "plan_id", &r->bad);
		r->ts_ms = int_of(f[3], "ts_ms", &r->bad);
		r->time_utc = f[4];
		r->step = int_of(f[5], "step", &r->bad);
		if (r->step < 0)
			r->step = 0;
		r->actor = f[6];
		r->kind = f[7];
		r->details = f[8];
		r->prev = f[9];
		r->hash = f[10];
	}
	if (!head) {
		why(res, 0, line, "line %ld: the head row is missing: the export's end "
		    "was cut", line);
		return 1;
	}
	return 0;
}

/* ---- the walk ---- */

/* The sha256 of S as hex into OUT. */
static int
sha256_hex(struct str s, char out[STORE_HASH_HEX])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	if (EVP_Digest(s.n > 0 ? s.p : "", s.n, md, &n, EVP_sha256(), NULL) != 1 ||
	    n != 32)
		return -1;
	hex_encode(md, n, out);
	return 0;
}

/* Whether plan.submitted's DETAILS name the YAML's sha256 SHA. */
static int
names_sha(struct str details, struct str sha)
{
	json_t *d = json_loadb(details.p, details.n, 0, NULL);
	const char *v = json_string_value(json_object_get(d, "sha256"));
	int ok = v != NULL && eq(sha, v);

	json_decref(d);
	return ok;
}

/* Checks D's plan and head fields. Returns 0, or 1 with RES. */
static int
check_plan(const struct xdoc *d, struct export_check *res)
{
	char sha[STORE_HASH_HEX];

	if (!eq(d->format, EXPORT_FORMAT) || d->version != EXPORT_VERSION) {
		why(res, 0, 0, "not a cutover history export of version %d (format \"%s\")",
		    EXPORT_VERSION, EXPORT_FORMAT);
		return 1;
	}
	if (d->bad != NULL || d->plan_id <= 0 || d->head_id < 0 || d->head_events < 0 ||
	    !hex64(d->head_hash) || !hex64(d->sha256)) {
		why(res, 0, 0, "the plan or head is malformed (%s)", d->bad != NULL ?
		    d->bad : "an id, count or hash");
		return 1;
	}
	if (sha256_hex(d->yaml, sha) != 0 || !eq(d->sha256, sha)) {
		why(res, 0, 1, "the plan's YAML does not match its sha256: it was edited");
		return 1;
	}
	if (d->n == 0) {
		why(res, 0, 0, "no events: the export holds at least the plan's "
		    "plan.submitted");
		return 1;
	}
	return 0;
}

/* Checks row R (the plan's own event), after the hash PREV. Returns 0, or
 * 1 with RES. STEP is the step the walk is at. */
static int
check_own(const struct xdoc *d, const struct xrow *r, const char *prev, int *step,
    struct export_check *res)
{
	char hash[STORE_HASH_HEX], utc[EXPORT_TIME_MAX], kind[48], *details;
	int s;

	if (r->plan_id != d->plan_id) {
		why(res, r->id, r->line, "it belongs to plan %" PRId64 ", not %" PRId64
		    ": a plan's export holds other plans' events only as links",
		    r->plan_id, d->plan_id);
		return 1;
	}
	if (r->actor.n == 0 || r->kind.n == 0 || r->ts_ms < 0) {
		why(res, r->id, r->line, "no actor, kind or time");
		return 1;
	}
	if (store_event_hash(prev, r->id, r->plan_id, r->ts_ms, r->actor.p, r->actor.n,
	    r->kind.p, r->kind.n, r->details.p, r->details.n, hash) != 0) {
		why(res, r->id, r->line, "sha256 failed");
		return 1;
	}
	if (!eq(r->hash, hash)) {
		why(res, r->id, r->line, "its hash does not match its content: the event "
		    "was edited");
		return 1;
	}
	export_time_utc(r->ts_ms, utc);
	if (!eq(r->time_utc, utc)) {
		why(res, r->id, r->line, "time_utc is not its ts_ms (%s)", utc);
		return 1;
	}
	cstr(r->kind, kind, sizeof(kind));
	if ((details = strndup(r->details.p, r->details.n)) == NULL) {
		why(res, r->id, r->line, "out of memory");
		return 1;
	}
	s = export_step_of(kind, details, step);
	free(details);
	if (s != r->step) {
		why(res, r->id, r->line, "step %" PRId64 " is not the step it was recorded "
		    "in (%d)", r->step, s);
		return 1;
	}
	return 0;
}

/* Whether event ID is among D's rows after row I. */
static int
later(const struct xdoc *d, size_t i, int64_t id)
{
	for (size_t k = i + 1; k < d->n; k++)
		if (d->rows[k].id == id)
			return 1;
	return 0;
}

/* Walks D's rows: ids one after another, each prev_hash the hash before,
 * each of the plan's events recomputed, the end at the head. */
static int
walk(const struct xdoc *d, struct export_check *res)
{
	char zero[STORE_HASH_HEX];
	int step = 0;

	memset(zero, '0', 64);
	zero[64] = '\0';
	for (size_t i = 0; i < d->n; i++) {
		const struct xrow *r = &d->rows[i], *b = i > 0 ? &d->rows[i - 1] : NULL;

		if (r->bad != NULL || r->id <= 0 || !hex64(r->prev) || !hex64(r->hash)) {
			why(res, r->id > 0 ? r->id : 0, r->line, "a malformed row (%s)",
			    r->bad != NULL ? r->bad : "its id or a hash");
			return 1;
		}
		if (b == NULL && (r->link || !eq(r->kind, "plan.submitted") ||
		    !names_sha(r->details, d->sha256))) {
			why(res, r->id, r->line, "the export does not start with the plan's "
			    "plan.submitted event naming its YAML's sha256: its start was cut "
			    "or edited");
			return 1;
		}
		if (b != NULL && r->id <= b->id) {
			why(res, r->id, r->line, "event %" PRId64 " comes after event %" PRId64
			    ": the events were reordered", r->id, b->id);
			return 1;
		}
		if (b != NULL && r->id != b->id + 1 && later(d, i, b->id + 1)) {
			why(res, r->id, r->line, "event %" PRId64 " comes before event %" PRId64
			    ": the events were reordered", r->id, b->id + 1);
			return 1;
		}
		if (b != NULL && r->id != b->id + 1) {
			why(res, b->id + 1, r->line, "missing: event %" PRId64 " follows event %"
			    PRId64 ": events in between were removed", r->id, b->id);
			return 1;
		}
		if (b != NULL ? memcmp(r->prev.p, b->hash.p, 64) != 0 : (r->id == 1 && !eq(r->prev, zero))) {
			why(res, r->id, r->line, b != NULL ? "its prev_hash is not the hash of "
			    "event %" PRId64 : "event %" PRId64 " starts the chain but its "
			    "prev_hash is not 64 zeros", b != NULL ? b->id : r->id);
			return 1;
		}
		if (!r->link) {
			char p[STORE_HASH_HEX];

			cstr(r->prev, p, sizeof(p));
			if (check_own(d, r, p, &step, res) != 0)
				return 1;
			res->plan_events++;
		} else
			res->links++;
	}
	return 0;
}

/* Checks that the rows end where the head says. */
static int
check_end(const struct xdoc *d, struct export_check *res)
{
	const struct xrow *last = &d->rows[d->n - 1];

	if (last->id < d->head_id) {
		why(res, last->id + 1, last->line, "truncated: the head records the chain "
		    "up to event %" PRId64 "; the rows end at event %" PRId64 ": the last %"
		    PRId64 " were cut off", d->head_id, last->id, d->head_id - last->id);
		return 1;
	}
	if (last->id > d->head_id || memcmp(last->hash.p, d->head_hash.p, 64) != 0) {
		why(res, last->id, last->line, "the head records event %" PRId64 " with "
		    "another hash: the head or the last event was edited", d->head_id);
		return 1;
	}
	if (d->head_events != d->head_id) {
		why(res, last->id, last->line, "the head counts %" PRId64 " events but "
		    "ends at event %" PRId64 ": the head was edited", d->head_events,
		    d->head_id);
		return 1;
	}
	return 0;
}

int
export_verify(const char *text, size_t len, struct export_check *res, char *err,
    size_t errlen)
{
	struct xdoc d = { 0 };
	json_error_t je;
	json_t *root = NULL;
	char *copy = NULL;
	size_t i = 0;
	int rc = -1, r;

	memset(res, 0, sizeof(*res));
	while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' ||
	    text[i] == '\n'))
		i++;

	if (i < len && text[i] == '{') {
		snprintf(res->format, sizeof(res->format), "json");
		if ((root = json_loadb(text, len, JSON_REJECT_DUPLICATES |
		    JSON_ALLOW_NUL, &je)) == NULL) {
			why(res, 0, je.line, "malformed JSON: %s (line %d, column %d)",
			    je.text, je.line, je.column);
			rc = 0;		/* res->verified stays false */
			goto done;
		}
		r = read_json(root, &d, res);
	} else {
		snprintf(res->format, sizeof(res->format), "csv");
		if ((copy = malloc(len + 1)) == NULL)
			goto nomem;
		memcpy(copy, text, len);
		copy[len] = '\0';
		r = read_csv(copy, copy + len, &d, res);
	}
	if (r < 0)
		goto nomem;
	if (r == 0 && (r = check_plan(&d, res)) == 0 && (r = walk(&d, res)) == 0)
		r = check_end(&d, res);
	res->plan_id = d.plan_id > 0 ? d.plan_id : 0;
	cstr(d.name, res->plan_name, sizeof(res->plan_name));
	res->head_events = d.head_events;
	res->head_id = d.head_id;
	cstr(d.head_hash, res->head_hash, sizeof(res->head_hash));
	res->verified = r == 0;	/* the checks' 1: it does not verify */
	rc = 0;
	goto done;
nomem:
	errbuf_set(err, errlen, "verifying the export: out of memory");
done:
	free(d.rows);
	free(copy);
	json_decref(root);
	return rc;
}
