/* itest_mgmt: the management tests' client and objects (itest_mgmt.h). */
#include "itest_mgmt.h"

void
imgmt_nap(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

json_t *
imgmt_ttl_args(long ttl, long expires, const char *type)
{
	json_t *a = json_object();

	assert_non_null(a);
	assert_int_equal(json_object_set_new(a, "x-message-ttl",
	    json_integer(ttl)), 0);
	if (expires > 0)
		assert_int_equal(json_object_set_new(a, "x-expires",
		    json_integer(expires)), 0);
	if (type != NULL)
		assert_int_equal(json_object_set_new(a, "x-queue-type",
		    json_string(type)), 0);
	return a;
}

void
imgmt_publish(struct ctx *c, const char *q, const char *body)
{
	char err[512];
	json_t *req, *ans = NULL;
	int rc;

	req = json_pack("{s:{}, s:s, s:s, s:s}", "properties", "routing_key",
	    q, "payload", body, "payload_encoding", "string");
	assert_non_null(req);
	rc = mgmt_request(c->m, "POST",
	    "/api/exchanges/%2F/amq.default/publish", req, &ans, NULL, err,
	    sizeof(err));
	json_decref(req);
	if (rc != 0)
		fail_msg("publish: %s", err);
	assert_true(json_is_true(json_object_get(ans, "routed")));
	json_decref(ans);
}

/* Deletes every queue, exchange and policy under the prefix. */
static void
sweep(struct ctx *c)
{
	struct mgmt_queue_list l;
	struct mgmt_policy_list pl;
	char err[512];
	size_t i, n = strlen(c->prefix);

	if (mgmt_list_queues(c->m, &l, err, sizeof(err)) == 0) {
		for (i = 0; i < l.n; i++)
			if (strncmp(l.v[i].name, c->prefix, n) == 0 &&
			    mgmt_delete_queue(c->m, l.v[i].name, 0, err,
			    sizeof(err)) < 0)
				print_message("cleanup: %s\n", err);
		mgmt_queue_list_free(&l);
	} else
		print_message("cleanup: %s\n", err);
	if (mgmt_list_policies(c->m, &pl, err, sizeof(err)) == 0) {
		for (i = 0; i < pl.n; i++)
			if (strncmp(pl.v[i].name, c->prefix, n) == 0)
				mgmt_delete_policy(c->m, pl.v[i].name, err,
				    sizeof(err));
		mgmt_policy_list_free(&pl);
	}
	mgmt_delete_exchange(c->m, c->x, err, sizeof(err));
}

int
imgmt_group_setup(void **state)
{
	struct ctx *c;
	char err[512];
	json_t *a;
	const char *p;
	size_t k;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		return -1;
	c->url = getenv("CUTOVER_TEST_MGMT");
	c->user = getenv("CUTOVER_TEST_USER");
	if (c->url == NULL || c->user == NULL ||
	    getenv("CUTOVER_TEST_PASSWORD") == NULL) {
		fprintf(stderr, "test_mgmt: set CUTOVER_TEST_MGMT, "
		    "CUTOVER_TEST_USER and CUTOVER_TEST_PASSWORD (scripts/test "
		    "does)\n");
		free(c);
		return -1;
	}
	snprintf(c->prefix, sizeof(c->prefix), "itest.mgmt.%ld.",
	    (long)getpid());
	c->re[0] = '^';
	for (p = c->prefix, k = 1; *p != '\0'; p++) {
		if (*p == '.')
			c->re[k++] = '\\';
		c->re[k++] = *p;
	}
	c->re[k] = '\0';
	snprintf(c->qa, sizeof(c->qa), "%sttl.a", c->prefix);
	snprintf(c->qb, sizeof(c->qb), "%sttl.b", c->prefix);
	snprintf(c->qc, sizeof(c->qc), "%sttl.c", c->prefix);
	snprintf(c->x, sizeof(c->x), "%sx", c->prefix);
	snprintf(c->pol, sizeof(c->pol), "%spol", c->prefix);
	if (mgmt_open(c->url, "/", c->user, PASSWORD_REF, TIMEOUT_MS, &c->m,
	    err, sizeof(err)) != 0) {
		fprintf(stderr, "test_mgmt: %s\n", err);
		free(c);
		return -1;
	}
	/* Three queues with different TTLs: two classic, one quorum. */
	a = imgmt_ttl_args(TTL_A, EXPIRES_A, NULL);
	if (mgmt_put_queue(c->m, c->qa, true, a, err, sizeof(err)) != 0)
		goto fail;
	json_decref(a);
	a = imgmt_ttl_args(TTL_B, 0, NULL);
	if (mgmt_put_queue(c->m, c->qb, true, a, err, sizeof(err)) != 0)
		goto fail;
	json_decref(a);
	a = imgmt_ttl_args(TTL_C, 0, "quorum");
	if (mgmt_put_queue(c->m, c->qc, true, a, err, sizeof(err)) != 0)
		goto fail;
	json_decref(a);
	*state = c;
	return 0;
fail:
	fprintf(stderr, "test_mgmt: setup: %s\n", err);
	json_decref(a);
	sweep(c);
	mgmt_close(c->m);
	free(c);
	return -1;
}

int
imgmt_group_teardown(void **state)
{
	struct ctx *c = *state;

	/* cmocka runs the teardown also after a setup that failed (no
	 * environment, no broker), with nothing set up. */
	if (c == NULL)
		return 0;
	sweep(c);
	mgmt_close(c->m);
	free(c);
	return 0;
}
