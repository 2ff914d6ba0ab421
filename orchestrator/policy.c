/* policy: the broker's choice of policy for an object (see policy.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

/* Which objects each apply-to concerns: queues of TYPE (NULL: any type),
 * or exchanges. */
static const struct {
	const char *apply_to;
	bool queues, exchanges;
	const char *type;
} applies[] = {
	{ "all",            true,  true,  NULL },
	{ "queues",         true,  false, NULL },
	{ "classic_queues", true,  false, "classic" },
	{ "quorum_queues",  true,  false, "quorum" },
	{ "streams",        true,  false, "stream" },
	{ "exchanges",      false, true,  NULL },
};

bool
policy_applies(const char *apply_to, enum policy_object kind, const char *queue_type)
{
	if (apply_to == NULL)
		apply_to = "all";
	for (size_t i = 0; i < sizeof(applies) / sizeof(applies[0]); i++) {
		if (strcmp(applies[i].apply_to, apply_to) != 0)
			continue;
		if (kind == POLICY_EXCHANGE)
			return applies[i].exchanges;
		return applies[i].queues && (applies[i].type == NULL ||
		    (queue_type != NULL && strcmp(applies[i].type, queue_type) == 0));
	}
	return false;
}

static int64_t
int_or(const json_t *j, int64_t dflt)
{
	return json_is_integer(j) ? json_integer_value(j) : dflt;
}

void
policy_set_free(struct policy_set *s)
{
	for (size_t i = 0; i < s->n; i++)
		pattern_free(s->v[i].re);
	free(s->v);
	json_decref(s->json);
	memset(s, 0, sizeof(*s));
}

int
policy_set_load(struct policy_set *s, json_t *listing, char *err, size_t errlen)
{
	const json_t *e;
	char why[256];
	size_t i;

	memset(s, 0, sizeof(*s));
	s->json = listing;
	if (json_array_size(listing) == 0)
		return 0;
	if ((s->v = calloc(json_array_size(listing), sizeof(*s->v))) == NULL) {
		snprintf(err, errlen, "out of memory for %zu policies",
		    json_array_size(listing));
		policy_set_free(s);
		return -1;
	}
	json_array_foreach(listing, i, e) {
		struct policy *p = &s->v[s->n];

		p->name = json_string_value(json_object_get(e, "name"));
		p->pattern = json_string_value(json_object_get(e, "pattern"));
		p->apply_to = json_string_value(json_object_get(e, "apply-to"));
		p->priority = int_or(json_object_get(e, "priority"), 0);
		p->definition = json_object_get(e, "definition");
		p->ttl_ms = int_or(json_object_get(p->definition, "message-ttl"), -1);
		p->expires_ms = int_or(json_object_get(p->definition, "expires"), -1);
		if (p->name == NULL || p->pattern == NULL)
			continue;
		(void)pattern_compile(p->pattern, &p->re, why, sizeof(why));
		s->n++;
	}
	return 0;
}

int
policy_set_read(struct mgmt *m, const char *which, struct policy_set *s, char *err,
    size_t errlen)
{
	char vhost[3 * 256 + 1], path[64 + sizeof(vhost)];
	json_t *listing = NULL;

	memset(s, 0, sizeof(*s));
	if (mgmt_escape(mgmt_vhost(m), vhost, sizeof(vhost)) < 0) {
		snprintf(err, errlen, "the vhost name is too long");
		return -1;
	}
	snprintf(path, sizeof(path), "/api/%s/%s", which, vhost);
	if (mgmt_request(m, "GET", path, NULL, &listing, NULL, err, errlen) != 0) {
		json_decref(listing);
		return -1;
	}
	return policy_set_load(s, listing, err, errlen);
}

const struct policy *
policy_for(const struct policy_set *s, const char *name, enum policy_object kind,
    const char *queue_type, const struct policy **unknown)
{
	const struct policy *best = NULL;
	char why[256];

	*unknown = NULL;
	for (size_t i = 0; i < s->n; i++) {
		const struct policy *p = &s->v[i];
		bool m = false;
		int r;

		if (!policy_applies(p->apply_to, kind, queue_type))
			continue;
		r = p->re != NULL ? pattern_match(p->re, name, &m, why, sizeof(why)) : -1;
		if (r < 0 && (*unknown == NULL || p->priority > (*unknown)->priority))
			*unknown = p;
		if (r == 0 && m && (best == NULL || p->priority > best->priority))
			best = p;
	}
	if (*unknown != NULL && best != NULL && best->priority >= (*unknown)->priority)
		*unknown = NULL;
	return best;
}
