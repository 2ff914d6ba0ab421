/* plan_tls: a plan's `tls` map (under broker and under flag) into a
 * struct tls_opts (tls.h): which CA bundle to trust, the client
 * certificate and key for mutual TLS, the key's passphrase (an env:NAME
 * reference), the name the server's certificate must carry, and
 * `verify: false`, the only way to turn verification off. Refuses what a
 * client could not honour: a certificate without its key, a passphrase
 * without a key, verify: false with settings it would ignore, and files
 * that cannot be read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "plan_load_int.h"

static const char expect[] = "a mapping with ca, cert, key, key_passphrase, "
    "server_name and verify";

/* Reports KEY of S naming a file that cannot be opened for reading. */
static void
check_file(struct loader *ld, const struct sect *s, const char *key,
    const char *path)
{
	yaml_node_t *n;
	char what[128];
	FILE *f;

	if (path == NULL || (f = fopen(path, "r")) == NULL) {
		if (path != NULL && (n = py_field(ld, s, key, 0, "")) != NULL)
			py_err_at(ld, n, "%s: cannot read '%s'; expected a "
			    "readable PEM file", py_label(what, sizeof(what), s,
			    key), path);
		return;
	}
	fclose(f);
}

void
pt_load_tls(struct loader *ld, const struct sect *parent, const char *path,
    struct tls_opts *t)
{
	static const char *const keys[] = { "ca", "cert", "key",
	    "key_passphrase", "server_name", "verify", NULL };
	struct sect s;
	yaml_node_t *n;
	bool verify = true;
	char where[512], what[128];

	if (py_get_map(ld, parent, "tls", 0, expect, path, &s) != 0 || s.map == NULL)
		return;
	py_check_keys(ld, &s, keys);
	snprintf(where, sizeof(where), "%s (%s:%d:%d)", path,
	    ld->p->file != NULL ? ld->p->file : "plan",
	    py_mark_num(s.map->start_mark.line),
	    py_mark_num(s.map->start_mark.column));
	free(t->where);
	t->where = py_copy(ld, where);
	py_get_text(ld, &s, "ca", 0, "the path of a PEM bundle of the CAs to "
	    "trust", &t->ca_file);
	py_get_text(ld, &s, "cert", 0, "the path of the client certificate "
	    "(PEM)", &t->cert_file);
	py_get_text(ld, &s, "key", 0, "the path of the client certificate's "
	    "private key (PEM)", &t->key_file);
	py_get_secret(ld, &s, "key_passphrase", 0, "env:TLS_KEY_PASSPHRASE",
	    &t->key_passphrase);
	py_get_text(ld, &s, "server_name", 0, "the name the server's "
	    "certificate must carry", &t->server_name);
	if ((n = py_field(ld, &s, "verify", 0, "")) != NULL &&
	    py_conv_bool(ld, n, py_label(what, sizeof(what), &s, "verify"),
	    &verify) == 0)
		t->no_verify = !verify;
	if ((t->cert_file == NULL) != (t->key_file == NULL))
		py_err_at(ld, s.map, "%s has %s without %s; expected both cert "
		    "and key for a client certificate, or neither", path,
		    t->cert_file != NULL ? "cert" : "key",
		    t->cert_file != NULL ? "key" : "cert");
	if (t->key_passphrase != NULL && t->key_file == NULL)
		py_err_at(ld, s.map, "%s has key_passphrase without key",
		    path);
	if (t->no_verify && (t->ca_file != NULL || t->server_name != NULL))
		py_err_at(ld, n, "%s.verify is false: the %s given would not be "
		    "checked; expected either verify: false or %s", path,
		    t->ca_file != NULL ? "ca" : "server_name",
		    t->ca_file != NULL ? "ca" : "server_name");
	check_file(ld, &s, "ca", t->ca_file);
	check_file(ld, &s, "cert", t->cert_file);
	check_file(ld, &s, "key", t->key_file);
}

void
pt_check_used(struct loader *ld, const struct sect *parent, const char *path,
    const struct tls_opts *t, const char *const *urls, size_t nurls)
{
	yaml_node_pair_t *pair;
	size_t i;

	if (t->where == NULL ||
	    (pair = py_find_pair(ld, parent->map, "tls")) == NULL)
		return;
	for (i = 0; i < nurls; i++)
		if (urls[i] != NULL && (strncasecmp(urls[i], "amqps://", 8) == 0 ||
		    strncasecmp(urls[i], "https://", 8) == 0))
			return;
	py_err_at(ld, py_key_node(ld, pair), "%s is given but no URL of %s "
	    "uses TLS; expected amqps:// or https:// URLs, or no %s", path,
	    parent->path, path);
}
