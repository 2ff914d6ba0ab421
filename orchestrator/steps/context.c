/* context: opens and closes the broker connections a step runs with, and
 * holds the earlier steps' results a step's prepare function reads. */
#include <stdio.h>
#include <string.h>

#include "log.h"
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
step_broker_open(const struct plan *p, int timeout_ms, struct broker **out,
    char *err, size_t errlen)
{
	size_t n;
	const char *const *urls = plan_urls(p->broker.amqp_urls, p->broker.namqp,
	    &p->broker.amqp, &n);
	int rc;

	rc = broker_open_list(urls, n, &p->broker.tls, p->broker.username,
	    p->broker.password, timeout_ms, out, err, errlen);
	if (rc == 0)
		broker_set_return_after(*out, p->broker.return_after_ms);
	return rc;
}

int
step_ctx_open(struct step_ctx *c, const struct plan *p, char *err, size_t errlen)
{
	struct broker_url u;
	const char *const *murls;
	size_t n;
	char why[1024];

	memset(c, 0, sizeof(*c));
	c->plan = p;
	if (tls_insecure_warning(&p->broker.tls, "broker.tls", why, sizeof(why)) != NULL)
		log_event("warn", p->name, NULL, "%s", why);
	if (broker_url_parse(p->broker.amqp, &u, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "broker.amqp: %s", why);
		goto fail;
	}
	if (step_broker_open(p, STEP_BROKER_TIMEOUT_MS, &c->amqp, why,
	    sizeof(why)) != 0) {
		snprintf(err, errlen, "connecting to the broker over AMQP: %s", why);
		goto fail;
	}
	murls = plan_urls(p->broker.management_urls, p->broker.nmanagement,
	    &p->broker.management, &n);
	if (mgmt_open_list(murls, n, &p->broker.tls, u.vhost, p->broker.username,
	    p->broker.password, STEP_BROKER_TIMEOUT_MS, &c->mgmt, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "opening the management API: %s", why);
		goto fail;
	}
	mgmt_set_return_after(c->mgmt, p->broker.return_after_ms);
	return 0;
fail:
	step_ctx_close(c);
	return -1;
}

void
step_ctx_close(struct step_ctx *c)
{
	broker_close(c->amqp);		/* unacknowledged probes go back */
	mgmt_close(c->mgmt);
	free(c->held);
	c->amqp = NULL;
	c->mgmt = NULL;
	c->held = NULL;
	c->nheld = c->capheld = 0;
}

const json_t *
step_input(struct step_inputs *in, enum plan_step_kind kind)
{
	json_t *j;

	if (in->nheld == STEP_INPUTS_MAX || (j = in->result_of(in->arg, kind)) == NULL)
		return NULL;
	in->held[in->nheld++] = j;
	return j;
}

void
step_inputs_release(struct step_inputs *in)
{
	while (in->nheld > 0)
		json_decref(in->held[--in->nheld]);
}

void
step_ctx_begin_run(struct step_ctx *c, const struct plan *p, struct store *s,
    int64_t plan_id, const json_t *state, int64_t flip_ms)
{
	step_ctx_end_run(c);
	c->plan = p;
	c->store = s;
	c->plan_id = plan_id;
	c->state = state;
	c->flip_ms = flip_ms;
	c->again = false;
}

void
step_ctx_end_run(struct step_ctx *c)
{
	c->measured = NULL;
	c->watched = NULL;
	c->moved = NULL;
	c->old_last_entry_ms = 0;
	c->now_ms = 0;
	c->state = NULL;
}
