/* context: opens and closes the broker connections a step runs with, and
 * holds the earlier steps' results a step's prepare function reads. */
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "step.h"

int
step_ctx_open(struct step_ctx *c, const struct plan *p, char *err, size_t errlen)
{
	struct broker_url u;
	char why[384];

	memset(c, 0, sizeof(*c));
	c->plan = p;
	if (tls_insecure_warning(&p->broker.tls, "broker.tls", why, sizeof(why)) != NULL)
		log_event("warn", p->name, NULL, "%s", why);
	if (broker_url_parse(p->broker.amqp, &u, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "broker.amqp: %s", why);
		goto fail;
	}
	if (broker_open_tls(p->broker.amqp, &p->broker.tls,
	    p->broker.username, p->broker.password,
	    STEP_BROKER_TIMEOUT_MS, &c->amqp, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "connecting to the broker over AMQP: %s", why);
		goto fail;
	}
	if (mgmt_open_tls(p->broker.management, &p->broker.tls, u.vhost, p->broker.username,
	    p->broker.password, STEP_BROKER_TIMEOUT_MS, &c->mgmt, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "opening the management API: %s", why);
		goto fail;
	}
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
