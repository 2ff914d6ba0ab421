/* context: opens and closes the broker connections a step runs with,
 * begins and ends each run's part of the context, holds the earlier steps'
 * results a step's prepare function reads and the events a step hands the
 * engine. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errbuf.h"
#include "log.h"
#include "old_path.h"
#include "step.h"

/* P's URLs of KIND (broker.amqp or broker.management) as a list: the
 * plan's list, or its single URL when the plan was built without one. */
static const char *const *
plan_urls(char *const *list, size_t n, char *const *single, size_t *count)
{
	*count = n > 0 ? n : 1;
	return (const char *const *)(n > 0 ? list : single);
}

int
step_broker_open(const struct plan_broker *b, int timeout_ms, struct broker **out,
    char *err, size_t errlen)
{
	size_t n;
	const char *const *urls = plan_urls(b->amqp_urls, b->namqp, &b->amqp, &n);
	int rc;

	rc = broker_open_list(urls, n, &b->tls, b->username, b->password,
	    timeout_ms, out, err, errlen);
	if (rc == 0)
		broker_set_return_after(*out, b->return_after_ms);
	return rc;
}

/* Opens B's AMQP connection into *AMQP and its management API client into
 * *MGMT for plan P. Returns 0, or -1 with ERR, STEP_CTX_UNREACHABLE when
 * the broker did not answer (what opened stays in *AMQP and *MGMT for the
 * caller to close). */
static int
open_broker(const struct plan *p, const struct plan_broker *b,
    struct broker **amqp, struct mgmt **mgmt, char *err, size_t errlen)
{
	struct broker_url u;
	const char *const *murls;
	const char *whose = b == &p->target ? "the target broker" : "the broker";
	char tls[32], why[1024];
	size_t n;
	int rc;

	snprintf(tls, sizeof(tls), "%s.tls", b->section);
	if (tls_insecure_warning(&b->tls, tls, why, sizeof(why)) != NULL)
		log_event("warn", p->name, NULL, "%s", why);
	if (broker_url_parse(b->amqp, &u, why, sizeof(why)) != 0) {
		errbuf_set(err, errlen, "%s.amqp: %s", b->section, why);
		return -1;
	}
	if ((rc = step_broker_open(b, STEP_BROKER_TIMEOUT_MS, amqp, why,
	    sizeof(why))) != 0) {
		errbuf_set(err, errlen, "connecting to %s over AMQP: %s", whose, why);
		return rc == BROKER_ECONNECT || rc == BROKER_ETIMEOUT || rc == BROKER_ELOST ?
		    STEP_CTX_UNREACHABLE : -1;
	}
	murls = plan_urls(b->management_urls, b->nmanagement, &b->management, &n);
	if ((rc = mgmt_open_list(murls, n, &b->tls, u.vhost, b->username, b->password,
	    STEP_BROKER_TIMEOUT_MS, mgmt, why, sizeof(why))) != 0) {
		if (b == &p->target)
			errbuf_set(err, errlen, "opening the target broker's management "
			    "API: %s", why);
		else
			errbuf_set(err, errlen, "opening the management API: %s", why);
		return rc == MGMT_ERR_TRANSPORT ? STEP_CTX_UNREACHABLE : -1;
	}
	mgmt_set_return_after(*mgmt, b->return_after_ms);
	return 0;
}

int
step_ctx_open(struct step_ctx *c, const struct plan *p, char *err, size_t errlen)
{
	int rc;

	memset(c, 0, sizeof(*c));
	c->plan = p;
	if ((rc = open_broker(p, &p->broker, &c->old_amqp, &c->old_mgmt, err,
	    errlen)) != 0)
		goto fail;
	if (!p->has_target) {
		c->amqp = c->old_amqp;
		c->mgmt = c->old_mgmt;
		return 0;
	}
	if ((rc = open_broker(p, &p->target, &c->amqp, &c->mgmt, err, errlen)) != 0)
		goto fail;
	return 0;
fail:
	step_ctx_close(c);
	return rc;
}

unsigned long
step_ctx_losses(const struct step_ctx *c)
{
	unsigned long n = 0;

	if (c->old_amqp != NULL)
		n += broker_losses(c->old_amqp);
	if (c->old_mgmt != NULL)
		n += mgmt_losses(c->old_mgmt);
	if (c->amqp != NULL && c->amqp != c->old_amqp)
		n += broker_losses(c->amqp);
	if (c->mgmt != NULL && c->mgmt != c->old_mgmt)
		n += mgmt_losses(c->mgmt);
	return n;
}

bool
step_stop_asked(struct step_ctx *c)
{
	if (c->stop == NULL || !*c->stop)
		return false;
	c->stopped = true;
	return true;
}

void
step_ctx_close(struct step_ctx *c)
{
	step_ctx_end_run(c);
	/* Unacknowledged probes go back. */
	if (c->old_amqp != c->amqp)
		broker_close(c->old_amqp);
	if (c->old_mgmt != c->mgmt)
		mgmt_close(c->old_mgmt);
	broker_close(c->amqp);
	mgmt_close(c->mgmt);
	free(c->held);
	old_inputs_free(c->kept);
	c->kept = NULL;
	c->amqp = c->old_amqp = NULL;
	c->mgmt = c->old_mgmt = NULL;
	c->held = NULL;
	c->nheld = c->capheld = 0;
}

const json_t *
step_input(struct step_inputs *in, enum plan_step_kind kind)
{
	json_t *j;

	if (in->nheld == STEP_INPUTS_MAX || in->result_of == NULL ||
	    (j = in->result_of(in->arg, kind)) == NULL)
		return NULL;
	in->held[in->nheld++] = j;
	return j;
}

/* step_inputs_of_store's RESULT_OF: the persisted result of the step of
 * KIND of the store inputs at ARG (a new reference), or NULL. */
static json_t *
store_result_of(void *arg, enum plan_step_kind kind)
{
	struct step_store_inputs *src = arg;
	struct store_step st;
	char err[256];
	json_t *j = NULL;
	int idx = plan_find_step(src->p, kind);

	if (idx < 0 || store_step_get(src->s, src->plan_id, idx, &st, err,
	    sizeof(err)) != 0)
		return NULL;
	if (st.result_json != NULL)
		j = json_loads(st.result_json, 0, NULL);
	store_step_clear(&st);
	return j;
}

/* step_inputs_of_store's ENDED_OF: the step's times only, not its result. */
static int64_t
store_ended_of(void *arg, enum plan_step_kind kind)
{
	struct step_store_inputs *src = arg;
	struct store_step st;
	char err[256];
	int idx = plan_find_step(src->p, kind);

	if (idx < 0 || store_step_times(src->s, src->plan_id, idx, &st, err,
	    sizeof(err)) != 0)
		return 0;
	return st.ended_ms;
}

/* step_inputs_of_store's EACH_OF: store_step_each, its rest parsed. */
static int
store_each_of(void *arg, enum plan_step_kind kind, const char *path, store_each_fn fn,
    void *fnarg, json_t **rest)
{
	struct step_store_inputs *src = arg;
	char err[256], *text = NULL;
	int idx = plan_find_step(src->p, kind), rc = 0;

	*rest = NULL;
	if (idx < 0)
		return 0;
	if (store_step_each(src->s, src->plan_id, idx, path, fn, fnarg, &text, err,
	    sizeof(err)) != 0)
		return -1;
	if (text != NULL && (*rest = json_loads(text, 0, NULL)) == NULL)
		rc = -1;
	free(text);
	return rc;
}

struct step_inputs
step_inputs_of_store(struct step_store_inputs *src)
{
	return (struct step_inputs){ .result_of = store_result_of,
	    .ended_of = store_ended_of, .each_of = store_each_of, .arg = src };
}

/* The list at PATH (members joined by dots) of J, or NULL; with PARENT,
 * the object holding it into *PARENT and its last name into *KEY. */
static json_t *
path_get(json_t *j, const char *path, json_t **parent, char *key, size_t keylen)
{
	const char *dot;
	size_t len;

	for (;;) {
		dot = strchr(path, '.');
		len = dot != NULL ? (size_t)(dot - path) : strlen(path);
		if (len >= keylen)
			return NULL;
		memcpy(key, path, len);
		key[len] = '\0';
		if (parent != NULL)
			*parent = j;
		if ((j = json_object_get(j, key)) == NULL || dot == NULL)
			return j;
		path = dot + 1;
	}
}

int
step_input_each(struct step_inputs *in, enum plan_step_kind kind, const char *path,
    store_each_fn fn, void *fnarg, json_t **rest)
{
	json_t *whole, *e, *list, *parent = NULL;
	char key[64];
	size_t i;

	*rest = NULL;
	if (in->each_of != NULL)
		return in->each_of(in->arg, kind, path, fn, fnarg, rest);
	if ((whole = (json_t *)step_input(in, kind)) == NULL)
		return 0;
	list = path_get(whole, path, NULL, key, sizeof(key));
	json_array_foreach(fn != NULL ? list : NULL, i, e)
		if (fn(e, fnarg) != 0)
			return -1;
	/* A deep copy: the list may sit in an object the copy would share. */
	if ((*rest = json_deep_copy(whole)) == NULL)
		return -1;
	if (json_is_array(path_get(*rest, path, &parent, key, sizeof(key))))
		json_object_set_new(parent, key, json_array());
	return 0;
}

int
step_input_apart(struct step_inputs *in, enum plan_step_kind kind, const char *path,
    store_each_fn fn, void *fnarg, const json_t **rest)
{
	json_t *j = NULL;

	*rest = NULL;
	if (in->nheld == STEP_INPUTS_MAX ||
	    step_input_each(in, kind, path, fn, fnarg, &j) != 0) {
		json_decref(j);
		return -1;
	}
	if (j != NULL)
		in->held[in->nheld++] = j;
	*rest = j;
	return 0;
}

int
step_state_each(const struct step_ctx *c, const char *member, store_each_fn fn,
    void *arg, char *err, size_t errlen)
{
	const json_t *e;
	size_t i;
	bool bad = false;

	if (c->state_text != NULL) {
		if (store_json_each(c->state_text, member, fn, arg, &bad) != 0)
			goto failed;
		/* The rows, when the engine read the text without them. */
		if (c->store != NULL && store_step_rows_each(c->store, c->plan_id,
		    c->state_idx, fn, arg, &bad, err, errlen) != 0)
			goto failed;
		return 0;
	} else {
		json_array_foreach(json_object_get(c->state, member), i, e)
			if (fn(e, arg) != 0)
				goto failed;
		return 0;
	}
failed:
	errbuf_set(err, errlen, "reading the step's last result: its \"%s\" %s", member,
	    bad ? "has an element that does not parse" : "could not be read (out of "
	    "memory?)");
	return -1;
}

/* step_input_each's FNs: an entry of measure_horizon's or move_old's
 * "queues" into the table at ARG. */
static int
measured_add(const json_t *e, void *arg)
{
	return old_measured_add(arg, e);
}

static int
moved_add(const json_t *e, void *arg)
{
	return old_moved_add(arg, e);
}

/* Reads into C->kept (replaced) measure_horizon's and move_old's results,
 * which ended at MEASURED_END and MOVED_END, from IN a part at a time:
 * move_old's queues too when WITH_MOVED. Returns 0 or -1. */
static int
old_inputs_keep(struct step_ctx *c, struct step_inputs *in, int64_t measured_end,
    int64_t moved_end, bool with_moved)
{
	struct old_inputs *k;

	old_inputs_free(c->kept);
	if ((c->kept = k = calloc(1, sizeof(*k))) == NULL)
		return -1;
	k->measured_end_ms = measured_end;
	k->moved_end_ms = moved_end;
	k->with_moved = with_moved;
	if (step_input_each(in, PLAN_STEP_MEASURE_HORIZON, "queues", measured_add,
	    &k->queues, &k->measured) != 0)
		goto failed;
	old_measured_end(&k->queues);
	/* move_old's queues are measure_horizon's: their names are the
	 * measured table's (at 100,000 queues, 3 MB not copied again). */
	k->moved_queues.names_from = &k->queues;
	if (step_input_each(in, PLAN_STEP_MOVE_OLD, "queues", with_moved ? moved_add : NULL,
	    &k->moved_queues, &k->moved) != 0)
		goto failed;
	old_moved_end(&k->moved_queues);
	return 0;
failed:
	old_inputs_free(k);
	c->kept = NULL;
	return -1;
}

int
step_old_inputs(struct step_ctx *c, struct step_inputs *in, bool with_moved, char *err,
    size_t errlen)
{
	int64_t measured_end = step_input_ended(in, PLAN_STEP_MEASURE_HORIZON);
	int64_t moved_end = step_input_ended(in, PLAN_STEP_MOVE_OLD);
	const struct old_inputs *k = c->kept;

	/* Read again only when either step ended anew since they were kept
	 * (or move_old's queues are wanted and were not read): at 100,000 old
	 * queues, hundreds of megabytes of trees a read. */
	if ((k == NULL || k->measured_end_ms != measured_end ||
	    k->moved_end_ms != moved_end || (with_moved && !k->with_moved)) &&
	    old_inputs_keep(c, in, measured_end, moved_end, with_moved) != 0) {
		errbuf_set(err, errlen, "reading measure_horizon's and move_old's results "
		    "failed: out of memory, the database could not be read (busy: "
		    "tried again), or a result does not parse");
		return -1;
	}
	c->measured = c->kept->measured;
	c->moved = c->kept->moved;
	c->measured_queues = &c->kept->queues;
	c->moved_queues = c->kept->with_moved ? &c->kept->moved_queues : NULL;
	return 0;
}

int64_t
step_input_ended(struct step_inputs *in, enum plan_step_kind kind)
{
	return in->ended_of != NULL ? in->ended_of(in->arg, kind) : 0;
}

const json_t *
step_input_replace(struct step_inputs *in, const json_t *held, json_t *with)
{
	for (size_t i = 0; i < in->nheld; i++)
		if (in->held[i] == held) {
			json_decref(in->held[i]);
			in->held[i] = with;
			return with;
		}
	json_decref(with);
	return held;
}

void
step_inputs_release(struct step_inputs *in)
{
	while (in->nheld > 0)
		json_decref(in->held[--in->nheld]);
}

int
step_events_add(struct step_events *ev, const char *kind, json_t *details)
{
	struct step_event *v;
	size_t cap;

	if (details == NULL)
		details = json_object();
	if (ev->sink != NULL)
		return ev->sink(ev->sink_arg, kind, details);
	if (ev->n == ev->cap) {
		cap = ev->cap ? 2 * ev->cap : 16;
		if ((v = realloc(ev->v, cap * sizeof(*v))) == NULL)
			goto fail;
		ev->v = v;
		ev->cap = cap;
	}
	if ((ev->v[ev->n].kind = strdup(kind)) == NULL)
		goto fail;
	ev->v[ev->n++].details = details;
	return 0;
fail:
	json_decref(details);
	return -1;
}

void
step_events_clear(struct step_events *ev)
{
	for (size_t i = 0; i < ev->n; i++) {
		free(ev->v[i].kind);
		json_decref(ev->v[i].details);
	}
	free(ev->v);
	*ev = (struct step_events){ 0 };
}

void
step_ctx_begin_run(struct step_ctx *c, const struct plan *p, struct store *s,
    int64_t plan_id, const json_t *state)
{
	step_ctx_end_run(c);
	c->plan = p;
	c->store = s;
	c->plan_id = plan_id;
	c->state = state;
}

/* Frees C's table of the watch's last sample, if any. */
static void
watched_last_free(struct step_ctx *c)
{
	if (c->watched_last != NULL) {
		old_counters_free(c->watched_last);
		free(c->watched_last);
		c->watched_last = NULL;
	}
}

void
step_ctx_drop_inputs(struct step_ctx *c)
{
	step_inputs_release(&c->run.inputs);
	watched_last_free(c);
	c->measured = c->watched = c->moved = c->state = NULL;
	c->state_text = NULL;
	c->measured_queues = NULL;
	c->moved_queues = NULL;
}

void
step_ctx_end_run(struct step_ctx *c)
{
	step_inputs_release(&c->run.inputs);
	watched_last_free(c);
	step_events_clear(&c->run.events);
	step_rows_clear(&c->run.rows);
	c->run = (struct step_run){ 0 };
}

int
step_restored(struct step_ctx *c, char *err, size_t errlen)
{
	c->restored_ms = 0;
	if (c->store == NULL)
		return 0;	/* by hand: no history */
	return store_last_event_ms(c->store, c->plan_id, STORE_EVENT_RESTORED,
	    &c->restored_ms, err, errlen);
}
