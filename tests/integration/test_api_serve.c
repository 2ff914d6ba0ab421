/* test_api_serve (integration): serve itself under what goes wrong: an idle
 * connection timed out, the database file removed under it. */
#include "itest_api.h"

static void
test_idle_connection_times_out(void **state)
{
	static const char partial[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n";
	struct timespec t0, t1;
	char buf[256];
	ssize_t n;
	double s;
	int fd;

	(void)state;
	/* Half a request, then nothing: the server hangs up after its idle
	 * timeout (15 s), without an answer. */
	assert_true((fd = itest_connect(iapi_port, 40)) >= 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(send(fd, partial, sizeof(partial) - 1, MSG_NOSIGNAL),
	    (ssize_t)sizeof(partial) - 1);
	n = recv(fd, buf, sizeof(buf), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	close(fd);
	s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	assert_true(n <= 0);
	if (s < 10 || s > 25)
		fail_msg("closed after %.1f s, expected about 15", s);
}

/* The database file removed under a running serve: /healthz says so (503,
 * with what to do), /metrics exports it, the log says it once, and the
 * engine takes no further action; serve still stops cleanly. */
static void
test_database_removed_under_serve(void **state)
{
	char kept[sizeof(iapi_db)], path[sizeof(iapi_db) + 8], line[4096];
	struct resp r;
	int said = 0, i;
	FILE *f;

	(void)state;
	assert_int_equal(iapi_stop_server(), 0);
	memcpy(kept, iapi_db, sizeof(kept));
	snprintf(iapi_db, sizeof(iapi_db), "%s/removed.db", iapi_dir);
	iapi_start_server(iapi_ops);
	iapi_http("GET", "/healthz", NULL, NULL, 0, NULL, &r);
	assert_int_equal(r.status, 200);
	iapi_resp_clear(&r);
	unlink(iapi_db);
	snprintf(path, sizeof(path), "%s-wal", iapi_db);
	unlink(path);
	snprintf(path, sizeof(path), "%s-shm", iapi_db);
	unlink(path);
	for (i = 0; i < 100; i++) {
		iapi_http("GET", "/healthz", NULL, NULL, 0, NULL, &r);
		if (r.status == 503)
			break;
		iapi_resp_clear(&r);
		iapi_sleep_ms(50);
	}
	iapi_assert_error(&r, 503);
	assert_non_null(strstr(r.body, "removed.db is gone"));
	assert_non_null(strstr(r.body, "restore the file from a backup"));
	iapi_resp_clear(&r);
	iapi_http("GET", "/metrics", TOKEN_ALICE, NULL, 0, NULL, &r);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "\ncutover_database_file_ok 0\n"));
	iapi_resp_clear(&r);
	iapi_sleep_ms(500);	/* a few engine turns (--poll-ms 100): said once */
	assert_int_equal(iapi_stop_server(), 0);
	assert_non_null(f = fopen(iapi_logfile, "r"));
	while (fgets(line, sizeof(line), f) != NULL)
		said += strstr(line, "removed.db is gone") != NULL &&
		    strstr(line, "takes no action") != NULL && strstr(line, "msg=\"http") == NULL;
	fclose(f);
	assert_int_equal(said, 1);
	memcpy(iapi_db, kept, sizeof(iapi_db));
	iapi_start_server(iapi_ops);
}

ITEST_MAIN(iapi_main,
	cmocka_unit_test(test_idle_connection_times_out),
	cmocka_unit_test(test_database_removed_under_serve))
