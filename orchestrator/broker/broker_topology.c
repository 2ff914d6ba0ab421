/* broker_topology: declaring, binding, inspecting and deleting exchanges
 * and queues, and the channel renewed for a queue declared again with
 * another type (see broker.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker_int.h"

/* Builds T from ARGS; *ENTRIES (free it) points into ARGS. */
static int
make_table(const struct topology_arg *args, size_t nargs,
    amqp_table_entry_t **entries, amqp_table_t *t, const char *what, char *err,
    size_t errlen)
{
	size_t i;

	*entries = NULL;
	t->num_entries = 0;
	t->entries = NULL;
	if (nargs == 0)
		return 0;
	if (args == NULL || nargs > 1024) {
		errbuf_set(err, errlen, "%s: bad argument list", what);
		return BROKER_ERR;
	}
	if ((*entries = calloc(nargs, sizeof(**entries))) == NULL) {
		errbuf_set(err, errlen, "%s: out of memory", what);
		return BROKER_ERR;
	}
	for (i = 0; i < nargs; i++) {
		amqp_table_entry_t *e = &(*entries)[i];

		if (args[i].key[0] == '\0') {
			errbuf_set(err, errlen, "%s: an argument has no name",
			    what);
			free(*entries);
			*entries = NULL;
			return BROKER_ERR;
		}
		e->key = amqp_cstring_bytes(args[i].key);
		if (args[i].is_int) {
			/* RabbitMQ takes integer arguments (x-message-ttl,
			 * ...) of any integer type, and a signed int and a
			 * long of one value are equivalent on redeclare; a
			 * long long holds the ladder's TTLs. */
			e->value.kind = AMQP_FIELD_KIND_I64;
			e->value.value.i64 = args[i].num;
		} else {
			e->value.kind = AMQP_FIELD_KIND_UTF8;
			e->value.value.bytes = amqp_cstring_bytes(args[i].str);
		}
	}
	t->num_entries = (int)nargs;
	t->entries = *entries;
	return 0;
}

enum declare_kind { DECLARE_QUEUE, DECLARE_EXCHANGE };

/* Declares queue NAME (TYPE unused) or exchange NAME of TYPE, durable or
 * not, an exchange deleted with its last binding when AUTO_DELETE
 * (broker_queue_declare, broker_exchange_declare and
 * broker_exchange_declare_auto_delete). */
static int
declare(struct broker *b, enum declare_kind kind, const char *name,
    const char *type, bool durable, bool auto_delete,
    const struct topology_arg *args, size_t nargs, char *err, size_t errlen)
{
	amqp_table_entry_t *entries = NULL;
	amqp_table_t t;
	char what[WHAT_MAX];
	void *ok;
	int rc;

	if ((rc = broker__named(kind == DECLARE_EXCHANGE ? "declaring exchange" :
	    "declaring queue", name, what, sizeof(what), err, errlen)) != 0)
		return rc;
	if (kind == DECLARE_EXCHANGE &&
	    (type == NULL || type[0] == '\0' || strlen(type) > 255)) {
		errbuf_set(err, errlen, "%s: an exchange type is required", what);
		return BROKER_ERR;
	}
	if ((rc = make_table(args, nargs, &entries, &t, what, err,
	    errlen)) != 0)
		return rc;
	if ((rc = broker__begin(b, err, errlen)) != 0)
		goto done;
	if (kind == DECLARE_EXCHANGE)
		ok = amqp_exchange_declare(b->conn, b->chan, amqp_cstring_bytes(name),
		    amqp_cstring_bytes(type), 0, durable, auto_delete, 0, t);
	else
		ok = amqp_queue_declare(b->conn, b->chan, amqp_cstring_bytes(name), 0,
		    durable, 0, 0, t);
	if (ok == NULL)
		rc = broker__rpc_result(b, amqp_get_rpc_reply(b->conn), what, err,
		    errlen);
done:
	free(entries);
	return rc;
}

int
broker_exchange_declare(struct broker *b, const char *name, const char *type,
    bool durable, const struct topology_arg *args, size_t nargs, char *err,
    size_t errlen)
{
	return declare(b, DECLARE_EXCHANGE, name, type, durable, false, args, nargs,
	    err, errlen);
}

int
broker_exchange_declare_auto_delete(struct broker *b, const char *name,
    const char *type, char *err, size_t errlen)
{
	return declare(b, DECLARE_EXCHANGE, name, type, false, true, NULL, 0, err,
	    errlen);
}

int
broker_queue_declare(struct broker *b, const char *name, bool durable,
    const struct topology_arg *args, size_t nargs, char *err, size_t errlen)
{
	return declare(b, DECLARE_QUEUE, name, NULL, durable, false, args, nargs, err,
	    errlen);
}

enum bind_op { BIND_QUEUE, UNBIND_QUEUE, BIND_EXCHANGE, UNBIND_EXCHANGE };

static int
bind_op(struct broker *b, enum bind_op op, const char *dest, const char *source,
    const char *key, char *err, size_t errlen)
{
	amqp_bytes_t d, s, k;
	char what[WHAT_MAX];
	const char *verb = (op == BIND_QUEUE || op == BIND_EXCHANGE) ?
	    "binding" : "unbinding";
	const char *kind = (op == BIND_QUEUE || op == UNBIND_QUEUE) ? "queue" :
	    "exchange";
	void *ok = NULL;
	int rc;

	if ((rc = broker__check_name(verb, dest, false, err, errlen)) != 0 ||
	    (rc = broker__check_name(verb, source, false, err, errlen)) != 0 ||
	    (rc = broker__check_name(verb, key == NULL ? "" : key, true, err,
	    errlen)) != 0)
		return rc;
	snprintf(what, sizeof(what), "%s %s '%s' %s exchange '%s' with key '%s'"
	    , verb, kind, dest, op == BIND_QUEUE || op == BIND_EXCHANGE ? "to"
	    : "from", source, key == NULL ? "" : key);
	if ((rc = broker__begin(b, err, errlen)) != 0)
		return rc;
	d = amqp_cstring_bytes(dest);
	s = amqp_cstring_bytes(source);
	k = amqp_cstring_bytes(key == NULL ? "" : key);
	switch (op) {
	case BIND_QUEUE:
		ok = amqp_queue_bind(b->conn, b->chan, d, s, k,
		    amqp_empty_table);
		break;
	case UNBIND_QUEUE:
		ok = amqp_queue_unbind(b->conn, b->chan, d, s, k,
		    amqp_empty_table);
		break;
	case BIND_EXCHANGE:
		ok = amqp_exchange_bind(b->conn, b->chan, d, s, k,
		    amqp_empty_table);
		break;
	case UNBIND_EXCHANGE:
		ok = amqp_exchange_unbind(b->conn, b->chan, d, s, k,
		    amqp_empty_table);
		break;
	}
	if (ok == NULL)
		return broker__rpc_result(b, amqp_get_rpc_reply(b->conn), what, err,
		    errlen);
	return 0;
}

int
broker_queue_bind(struct broker *b, const char *queue, const char *exchange,
    const char *key, char *err, size_t errlen)
{
	return bind_op(b, BIND_QUEUE, queue, exchange, key, err, errlen);
}

int
broker_queue_unbind(struct broker *b, const char *queue, const char *exchange,
    const char *key, char *err, size_t errlen)
{
	return bind_op(b, UNBIND_QUEUE, queue, exchange, key, err, errlen);
}

int
broker_exchange_bind(struct broker *b, const char *destination,
    const char *source, const char *key, char *err, size_t errlen)
{
	return bind_op(b, BIND_EXCHANGE, destination, source, key, err, errlen);
}

int
broker_exchange_unbind(struct broker *b, const char *destination,
    const char *source, const char *key, char *err, size_t errlen)
{
	return bind_op(b, UNBIND_EXCHANGE, destination, source, key, err,
	    errlen);
}

int
broker_queue_inspect(struct broker *b, const char *name,
    struct broker_queue_info *info, char *err, size_t errlen)
{
	amqp_queue_declare_ok_t *ok;
	char what[WHAT_MAX], scratch[WHY_MAX];
	int rc;

	if (info != NULL)
		memset(info, 0, sizeof(*info));
	if ((rc = broker__named("checking queue", name, what, sizeof(what), err,
	    errlen)) != 0)
		return rc;
	if ((rc = broker__begin(b, err, errlen)) != 0)
		return rc;
	ok = amqp_queue_declare(b->conn, b->chan, amqp_cstring_bytes(name), 1,
	    0, 0, 0, amqp_empty_table);
	if (ok == NULL) {
		rc = broker__rpc_result(b, amqp_get_rpc_reply(b->conn), what, scratch,
		    sizeof(scratch));
		if (b->reply_code == AMQP_NOT_FOUND && rc == BROKER_EREFUSED)
			return BROKER_NOT_FOUND;
		errbuf_set(err, errlen, "%s", scratch);
		return rc;
	}
	if (info != NULL) {
		info->messages = ok->message_count;
		info->consumers = ok->consumer_count;
	}
	return 0;
}

int
broker_exchange_exists(struct broker *b, const char *name, char *err,
    size_t errlen)
{
	char what[WHAT_MAX], scratch[WHY_MAX];
	int rc;

	if ((rc = broker__named("checking exchange", name, what, sizeof(what), err,
	    errlen)) != 0)
		return rc;
	if ((rc = broker__begin(b, err, errlen)) != 0)
		return rc;
	if (amqp_exchange_declare(b->conn, b->chan, amqp_cstring_bytes(name),
	    amqp_cstring_bytes("topic"), 1, 0, 0, 0, amqp_empty_table) != NULL)
		return 0;
	rc = broker__rpc_result(b, amqp_get_rpc_reply(b->conn), what, scratch,
	    sizeof(scratch));
	if (b->reply_code == AMQP_NOT_FOUND && rc == BROKER_EREFUSED)
		return BROKER_NOT_FOUND;
	errbuf_set(err, errlen, "%s", scratch);
	return rc;
}

int
broker_queue_delete(struct broker *b, const char *name, int flags,
    uint32_t *purged, char *err, size_t errlen)
{
	amqp_queue_delete_ok_t *ok;
	char what[WHAT_MAX], text[WHY_MAX];
	const char *cond;
	int rc;

	if (purged != NULL)
		*purged = 0;
	if ((rc = broker__check_name("deleting queue", name, false, err, errlen)) != 0)
		return rc;
	if ((flags & BROKER_IF_EMPTY) && (flags & BROKER_IF_UNUSED))
		cond = " if empty and unused";
	else if (flags & BROKER_IF_EMPTY)
		cond = " if empty";
	else if (flags & BROKER_IF_UNUSED)
		cond = " if unused";
	else
		cond = "";
	snprintf(what, sizeof(what), "deleting queue '%s'%s", name, cond);
	if ((rc = broker__begin(b, err, errlen)) != 0)
		return rc;
	ok = amqp_queue_delete(b->conn, b->chan, amqp_cstring_bytes(name),
	    (flags & BROKER_IF_UNUSED) != 0, (flags & BROKER_IF_EMPTY) != 0);
	if (ok == NULL) {
		rc = broker__rpc_result(b, amqp_get_rpc_reply(b->conn), what, text,
		    sizeof(text));
		if (b->reply_code == AMQP_NOT_IMPLEMENTED && flags != 0)
			errbuf_set(err, errlen, "%s: quorum queues do not support "
			    "if-empty/if-unused delete (the broker answered "
			    "\"%s\" and closed the connection, which is "
			    "reopened on the next call); check that the queue "
			    "is empty, then delete it without conditions",
			    what, b->reply_text);
		else
			errbuf_set(err, errlen, "%s", text);
		return rc;
	}
	if (purged != NULL)
		*purged = ok->message_count;
	return 0;
}

int
broker_channel_renew(struct broker *b, char *err, size_t errlen)
{
	amqp_rpc_reply_t r;

	if (b->conn != NULL && b->chan != 0) {
		r = amqp_channel_close(b->conn, b->chan, AMQP_REPLY_SUCCESS);
		if (r.reply_type == AMQP_RESPONSE_NORMAL)
			broker__chan_lost(b, BROKER_ELOST, "the channel was renewed");
		else
			broker__conn_lost(b, BROKER_ELOST, "the connection closed "
			    "while its channel was renewed");
	}
	return broker__begin(b, err, errlen);
}

int
broker_exchange_delete(struct broker *b, const char *name, bool if_unused,
    char *err, size_t errlen)
{
	char what[WHAT_MAX];
	int rc;

	if ((rc = broker__check_name("deleting exchange", name, false, err,
	    errlen)) != 0)
		return rc;
	snprintf(what, sizeof(what), "deleting exchange '%s'%s", name,
	    if_unused ? " if unused" : "");
	if ((rc = broker__begin(b, err, errlen)) != 0)
		return rc;
	if (amqp_exchange_delete(b->conn, b->chan, amqp_cstring_bytes(name),
	    if_unused) == NULL)
		return broker__rpc_result(b, amqp_get_rpc_reply(b->conn), what, err,
		    errlen);
	return 0;
}
