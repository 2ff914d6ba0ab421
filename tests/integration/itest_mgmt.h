/* itest_mgmt: what the management API client tests share: the group's setup
 * and teardown on the test node, short naps, queue TTL arguments and
 * publishes. Names from here are prefixed imgmt_.
 *
 * test_mgmt_*.c: the management API client (mgmt.h) against a real RabbitMQ
 * node: CUTOVER_TEST_MGMT (e.g. http://127.0.0.1:15672), CUTOVER_TEST_USER,
 * password env:CUTOVER_TEST_PASSWORD, and CUTOVER_TEST_AMQP for the one
 * test that needs a consumer. Every object is created through the
 * management API under the prefix "itest.mgmt.<pid>." and deleted at the
 * end, even when a test fails. Listing at scale is measured by
 * bench/old_path, not here. */
#ifndef CUTOVER_ITEST_MGMT_H
#define CUTOVER_ITEST_MGMT_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cmocka.h>
/* rabbitmq-c itself, for one consumer that is not the project's. */
#include <amqp.h>
#include <amqp_tcp_socket.h>

#include "clock.h"
#include "itest_run.h"
#include "broker/mgmt.h"
#include "mgmt_test.h"

#define PASSWORD_REF	"env:CUTOVER_TEST_PASSWORD"
#define TIMEOUT_MS	10000L
#define TTL_A		600000	/* ms: no expiry during the test */
#define TTL_B		1200000
#define TTL_C		1800000
#define EXPIRES_A	3600000

struct ctx {
	const char	*url;
	const char	*user;
	struct mgmt	*m;
	char		 prefix[64];	/* "itest.mgmt.<pid>." */
	char		 re[96];	/* the prefix as a regex, "^..." */
	char		 qa[128], qb[128], qc[128];
	char		 x[128];	/* a topic exchange */
	char		 pol[128];	/* a policy */
};

void imgmt_nap(long ms);

json_t *imgmt_ttl_args(long ttl, long expires, const char *type);

/* Publishes BODY to queue Q through the default exchange (management API). */
void imgmt_publish(struct ctx *c, const char *q, const char *body);

int imgmt_group_setup(void **state);

int imgmt_group_teardown(void **state);

#endif
