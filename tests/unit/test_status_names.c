/* test_status_names: every module's return codes, from its table: each
 * has words of its own within the module (a log or a message tells them
 * apart), 0 is the module's success, and a value outside the table reads
 * as unknown rather than as one of them. */

#include <string.h>

#include "cm.h"
#include "broker/broker.h"
#include "broker/mgmt.h"
#include "file_read.h"
#include "flag.h"
#include "publish.h"
#include "store.h"

struct code {
	int code;
	const char *what;
};

/* The codes of one module's table, and its name function. */
struct module {
	const char *name;
	const struct code *codes;
	size_t n;
	const char *(*words)(int);
	const char *unknown;		/* what a value outside the table reads */
};

#define CODE_ROW(name, code, what) { code, what },
static const struct code broker_codes[] = { BROKER_STATUS_MAP(CODE_ROW) };
static const struct code mgmt_codes[] = { MGMT_STATUS_MAP(CODE_ROW) };
static const struct code flag_codes[] = { FLAG_STATUS_MAP(CODE_ROW) };
static const struct code store_codes[] = { STORE_STATUS_MAP(CODE_ROW) };
static const struct code publish_codes[] = { PUBLISH_STATUS_MAP(CODE_ROW) };
static const struct code file_codes[] = { FILE_READ_MAP(CODE_ROW) };
#undef CODE_ROW

#define MODULE(n, c, f, u) { n, c, sizeof(c) / sizeof(c[0]), f, u }
static const struct module modules[] = {
	MODULE("broker", broker_codes, broker_status_name, "unknown"),
	MODULE("mgmt", mgmt_codes, mgmt_status_name, "unknown"),
	MODULE("flag", flag_codes, flag_status_name, "unknown"),
	MODULE("store", store_codes, store_status_name, "unknown"),
	/* publish's callers print any failure it did not name as failed */
	MODULE("publish", publish_codes, publish_status_name, "failed"),
	MODULE("file_read", file_codes, file_read_status_name, "unknown"),
};
#undef MODULE

static void
test_each_code_has_its_own_words(void **state)
{
	(void)state;
	for (size_t m = 0; m < sizeof(modules) / sizeof(modules[0]); m++) {
		const struct module *mo = &modules[m];

		assert_int_equal(mo->codes[0].code, 0);
		for (size_t i = 0; i < mo->n; i++) {
			if (strcmp(mo->words(mo->codes[i].code), mo->codes[i].what) != 0)
				fail_msg("%s: code %d reads '%s', its table says '%s'", mo->name,
				    mo->codes[i].code, mo->words(mo->codes[i].code),
				    mo->codes[i].what);
			if (i > 0 && mo->codes[i].code >= 0)
				fail_msg("%s: code %d is not negative", mo->name, mo->codes[i].code);
			for (size_t k = 0; k < i; k++)
				if (strcmp(mo->codes[k].what, mo->codes[i].what) == 0)
					fail_msg("%s: codes %d and %d both read '%s'", mo->name,
					    mo->codes[k].code, mo->codes[i].code, mo->codes[i].what);
		}
		assert_string_equal(mo->words(-1000), mo->unknown);
		assert_string_equal(mo->words(1), mo->unknown);
	}
}

CM_MAIN(NULL, NULL,
	cmocka_unit_test(test_each_code_has_its_own_words))
