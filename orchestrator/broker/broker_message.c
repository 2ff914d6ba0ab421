/* broker_message: a received message as the caller gets it
 * (struct broker_delivery): its properties, headers and x-death entries
 * copied out of rabbitmq-c's frames, and freeing it. */
#include <stdlib.h>
#include <string.h>

#include "broker_int.h"

static bool
field_int(const amqp_field_value_t *v, int64_t *out)
{
	switch (v->kind) {
	case AMQP_FIELD_KIND_I8:
		*out = v->value.i8;
		return true;
	case AMQP_FIELD_KIND_U8:
		*out = v->value.u8;
		return true;
	case AMQP_FIELD_KIND_I16:
		*out = v->value.i16;
		return true;
	case AMQP_FIELD_KIND_U16:
		*out = v->value.u16;
		return true;
	case AMQP_FIELD_KIND_I32:
		*out = v->value.i32;
		return true;
	case AMQP_FIELD_KIND_U32:
		*out = v->value.u32;
		return true;
	case AMQP_FIELD_KIND_I64:
		*out = v->value.i64;
		return true;
	case AMQP_FIELD_KIND_U64:
	case AMQP_FIELD_KIND_TIMESTAMP:
		if (v->value.u64 > (uint64_t)INT64_MAX)
			return false;
		*out = (int64_t)v->value.u64;
		return true;
	default:
		return false;
	}
}

static bool
field_is_str(const amqp_field_value_t *v)
{
	return v->kind == AMQP_FIELD_KIND_UTF8 ||
	    v->kind == AMQP_FIELD_KIND_BYTES;
}

/* Fills X from one x-death entry. Returns 0, or -1 out of memory. */
static int
convert_death(const amqp_table_t *t, struct broker_death *x)
{
	const amqp_table_entry_t *e;
	int i, j;

	for (i = 0; i < t->num_entries; i++) {
		e = &t->entries[i];
		if (field_is_str(&e->value)) {
			char **dst = NULL;

			if (broker__bytes_is(e->key, "queue"))
				dst = &x->queue;
			else if (broker__bytes_is(e->key, "reason"))
				dst = &x->reason;
			else if (broker__bytes_is(e->key, "exchange"))
				dst = &x->exchange;
			if (dst != NULL && *dst == NULL &&
			    (*dst = broker__dup_bytes(e->value.value.bytes)) == NULL)
				return -1;
		} else if (broker__bytes_is(e->key, "count"))
			(void)field_int(&e->value, &x->count);
		else if (broker__bytes_is(e->key, "time") &&
		    e->value.kind == AMQP_FIELD_KIND_TIMESTAMP &&
		    e->value.value.u64 <= (uint64_t)INT64_MAX)
			x->time_s = (int64_t)e->value.value.u64;
		else if (broker__bytes_is(e->key, "routing-keys") &&
		    e->value.kind == AMQP_FIELD_KIND_ARRAY &&
		    x->routing_keys == NULL) {
			const amqp_array_t *a = &e->value.value.array;

			if (a->num_entries <= 0)
				continue;
			x->routing_keys = calloc((size_t)a->num_entries,
			    sizeof(char *));
			if (x->routing_keys == NULL)
				return -1;
			for (j = 0; j < a->num_entries; j++) {
				if (!field_is_str(&a->entries[j]))
					continue;
				x->routing_keys[x->nrouting_keys] =
				    broker__dup_bytes(a->entries[j].value.bytes);
				if (x->routing_keys[x->nrouting_keys++] == NULL)
					return -1;
			}
		}
	}
	return 0;
}

/* A deep copy of a message's properties, for republishing it. */
struct props_copy {
	amqp_pool_t pool;
	amqp_basic_properties_t p;
};

/* The properties' byte fields, by flag. */
#define PROPS_BYTES(X) \
	X(AMQP_BASIC_CONTENT_TYPE_FLAG, content_type) \
	X(AMQP_BASIC_CONTENT_ENCODING_FLAG, content_encoding) \
	X(AMQP_BASIC_CORRELATION_ID_FLAG, correlation_id) \
	X(AMQP_BASIC_REPLY_TO_FLAG, reply_to) \
	X(AMQP_BASIC_EXPIRATION_FLAG, expiration) \
	X(AMQP_BASIC_MESSAGE_ID_FLAG, message_id) \
	X(AMQP_BASIC_TYPE_FLAG, type) \
	X(AMQP_BASIC_USER_ID_FLAG, user_id) \
	X(AMQP_BASIC_APP_ID_FLAG, app_id) \
	X(AMQP_BASIC_CLUSTER_ID_FLAG, cluster_id)

static int
pool_dup(amqp_pool_t *pool, amqp_bytes_t in, amqp_bytes_t *out)
{
	if (in.len == 0) {
		*out = amqp_empty_bytes;
		return 0;
	}
	amqp_pool_alloc_bytes(pool, in.len, out);
	if (out->bytes == NULL)
		return -1;
	memcpy(out->bytes, in.bytes, in.len);
	return 0;
}

/* Copies every property of P, headers included, into D->props. Returns 0,
 * or -1 out of memory. */
static int
keep_properties(const amqp_basic_properties_t *p, struct broker_delivery *d)
{
	struct props_copy *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return -1;
	init_amqp_pool(&c->pool, 4096);
	d->props = c;
	c->p = *p;
#define COPY_BYTES(flag, field) \
	if ((p->_flags & flag) && pool_dup(&c->pool, p->field, &c->p.field) != 0) \
		return -1;
	PROPS_BYTES(COPY_BYTES)
#undef COPY_BYTES
	if ((p->_flags & AMQP_BASIC_HEADERS_FLAG) &&
	    amqp_table_clone(&p->headers, &c->p.headers, &c->pool) != AMQP_STATUS_OK)
		return -1;
	return 0;
}

const amqp_basic_properties_t *
broker__delivery_properties(const struct broker_delivery *d)
{
	return d->props != NULL ? &((const struct props_copy *)d->props)->p : NULL;
}

/* Copies the message properties P into D. Returns 0, or -1 out of memory. */
int
broker__convert_properties(const amqp_basic_properties_t *p, struct broker_delivery *d)
{
	const amqp_table_t *t = &p->headers;
	const amqp_table_entry_t *e;
	int i, j;

	if (keep_properties(p, d) != 0)
		return -1;
	if (p->_flags & AMQP_BASIC_TIMESTAMP_FLAG) {
		d->has_timestamp = true;
		d->timestamp = p->timestamp;
	}

	if ((p->_flags & AMQP_BASIC_MESSAGE_ID_FLAG) &&
	    (d->message_id = broker__dup_bytes(p->message_id)) == NULL)
		return -1;
	if ((p->_flags & AMQP_BASIC_CONTENT_TYPE_FLAG) &&
	    (d->content_type = broker__dup_bytes(p->content_type)) == NULL)
		return -1;
	if (p->_flags & AMQP_BASIC_DELIVERY_MODE_FLAG)
		d->delivery_mode = p->delivery_mode;
	if (!(p->_flags & AMQP_BASIC_HEADERS_FLAG) || t->num_entries <= 0)
		return 0;

	d->headers = calloc((size_t)t->num_entries, sizeof(*d->headers));
	if (d->headers == NULL)
		return -1;
	for (i = 0; i < t->num_entries; i++) {
		struct broker_header *h = &d->headers[d->nheaders++];

		e = &t->entries[i];
		if ((h->key = broker__dup_bytes(e->key)) == NULL)
			return -1;
		if (field_is_str(&e->value)) {
			h->kind = BROKER_KIND_STR;
			if ((h->str = broker__dup_bytes(e->value.value.bytes)) == NULL)
				return -1;
		} else if (e->value.kind == AMQP_FIELD_KIND_BOOLEAN) {
			h->kind = BROKER_KIND_BOOL;
			h->num = e->value.value.boolean ? 1 : 0;
		} else if (field_int(&e->value, &h->num))
			h->kind = BROKER_KIND_INT;
		else
			h->kind = BROKER_KIND_OTHER;

		if (broker__bytes_is(e->key, "x-death") && d->deaths == NULL &&
		    e->value.kind == AMQP_FIELD_KIND_ARRAY &&
		    e->value.value.array.num_entries > 0) {
			const amqp_array_t *a = &e->value.value.array;

			d->deaths = calloc((size_t)a->num_entries,
			    sizeof(*d->deaths));
			if (d->deaths == NULL)
				return -1;
			for (j = 0; j < a->num_entries; j++) {
				if (a->entries[j].kind != AMQP_FIELD_KIND_TABLE)
					continue;
				if (convert_death(&a->entries[j].value.table,
				    &d->deaths[d->ndeaths++]) != 0)
					return -1;
			}
		}
	}
	return 0;
}

void
broker_delivery_free(struct broker_delivery *d)
{
	size_t i, j;

	if (d == NULL)
		return;
	free(d->exchange);
	free(d->routing_key);
	free(d->body);
	free(d->message_id);
	free(d->content_type);
	for (i = 0; i < d->nheaders; i++) {
		free(d->headers[i].key);
		free(d->headers[i].str);
	}
	free(d->headers);
	for (i = 0; i < d->ndeaths; i++) {
		free(d->deaths[i].queue);
		free(d->deaths[i].reason);
		free(d->deaths[i].exchange);
		for (j = 0; j < d->deaths[i].nrouting_keys; j++)
			free(d->deaths[i].routing_keys[j]);
		free(d->deaths[i].routing_keys);
	}
	free(d->deaths);
	if (d->props != NULL) {
		empty_amqp_pool(&((struct props_copy *)d->props)->pool);
		free(d->props);
	}
	memset(d, 0, sizeof(*d));
}

const struct broker_header *
broker_header_find(const struct broker_delivery *d, const char *key)
{
	size_t i;

	for (i = 0; i < d->nheaders; i++)
		if (strcmp(d->headers[i].key, key) == 0)
			return &d->headers[i];
	return NULL;
}
