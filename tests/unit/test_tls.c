/* test_tls: the plan's TLS settings (tls.h): the words for each refused
 * certificate, the places they name, the passphrase reference (never its
 * value in a message) and the loud warning of verify: false. */

#include <stdlib.h>
#include <string.h>

#include <openssl/x509_vfy.h>

#include "cm.h"
#include "tls.h"

static void
test_verify_words(void **state)
{
	struct tls_opts t = { .where = "broker.tls (p.yaml:7:3)" };
	char out[512];

	(void)state;
	tls_verify_words(X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY, "h", &t,
	    "dflt", out, sizeof(out));
	assert_non_null(strstr(out, "unknown CA"));
	assert_non_null(strstr(out, "set ca in broker.tls (p.yaml:7:3)"));
	tls_verify_words(X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN, "h", &t, "dflt",
	    out, sizeof(out));
	assert_non_null(strstr(out, "unknown CA"));
	tls_verify_words(X509_V_ERR_CERT_HAS_EXPIRED, "h", &t, "dflt", out,
	    sizeof(out));
	assert_true(strncmp(out, "expired:", 8) == 0);
	tls_verify_words(X509_V_ERR_HOSTNAME_MISMATCH, "broker.example", &t,
	    "dflt", out, sizeof(out));
	assert_non_null(strstr(out, "name mismatch"));
	assert_non_null(strstr(out, "'broker.example'"));
	tls_verify_words(X509_V_ERR_IP_ADDRESS_MISMATCH, "127.0.0.2", NULL,
	    "dflt", out, sizeof(out));
	assert_non_null(strstr(out, "name mismatch"));
	assert_non_null(strstr(out, "dflt"));
	tls_verify_words(9999, "h", NULL, "dflt", out, sizeof(out));
	assert_non_null(strstr(out, "X.509 error 9999"));
}

static void
test_passphrase(void **state)
{
	struct tls_opts t = { .key_passphrase = "env:TLS_UNIT_PP" };
	const char *v;
	char err[256];

	(void)state;
	unsetenv("TLS_UNIT_PP");
	assert_int_equal(tls_passphrase(NULL, &v, err, sizeof(err)), 0);
	assert_null(v);
	assert_int_equal(tls_passphrase(&t, &v, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not set"));
	setenv("TLS_UNIT_PP", "hunter2-pp", 1);
	assert_int_equal(tls_passphrase(&t, &v, err, sizeof(err)), 0);
	assert_string_equal(v, "hunter2-pp");
	t.key_passphrase = "hunter2-literal";
	assert_int_equal(tls_passphrase(&t, &v, err, sizeof(err)), -1);
	assert_null(strstr(err, "hunter2-literal"));
}

static void
test_copy_and_warning(void **state)
{
	struct tls_opts a = { 0 }, b;
	char w[512];

	(void)state;
	assert_null(tls_insecure_warning(NULL, "broker.tls", w, sizeof(w)));
	assert_null(tls_insecure_warning(&a, "broker.tls", w, sizeof(w)));
	a.no_verify = true;
	a.ca_file = strdup("/x/ca.pem");
	a.where = strdup("flag.tls (p.yaml:9:3)");
	assert_non_null(tls_insecure_warning(&a, "flag.tls", w, sizeof(w)));
	assert_non_null(strstr(w, "TLS VERIFICATION IS OFF"));
	assert_non_null(strstr(w, "flag.tls (p.yaml:9:3)"));
	assert_int_equal(tls_opts_copy(&b, &a), 0);
	assert_true(b.no_verify);
	assert_string_equal(b.ca_file, "/x/ca.pem");
	assert_ptr_not_equal(b.ca_file, a.ca_file);
	tls_opts_free(&a);
	tls_opts_free(&b);
	assert_null(b.ca_file);
	assert_int_equal(tls_opts_copy(&b, NULL), 0);
	assert_false(b.no_verify);
	assert_null(b.where);
}

CM_MAIN(NULL, NULL,
	cmocka_unit_test(test_verify_words),
	cmocka_unit_test(test_passphrase),
	cmocka_unit_test(test_copy_and_warning))
