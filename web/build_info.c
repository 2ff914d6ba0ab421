/* build_info: cutover's version and commit, and its libraries' versions,
 * built (header macros) and running (each library's own call). */
#include <stdio.h>

#include <amqp.h>
#include <curl/curlver.h>
#include <jansson.h>
#include <microhttpd.h>
#include <sqlite3.h>
#include <yaml.h>

#include "build_info.h"
#include "build_info_gen.h"

/* MHD_VERSION is 0xMMmmpp00 in hex digits: "0.9.75" for 0x00097500. */
static char mhd_built[24];

static struct build_info info = {
	CUTOVER_VERSION, CUTOVER_COMMIT, {
		{ "rabbitmq_c", AMQP_VERSION_STRING, "" },
		{ "libcurl", LIBCURL_VERSION, "" },
		{ "sqlite", SQLITE_VERSION, "" },
		{ "jansson", JANSSON_VERSION, "" },
		{ "libyaml", CUTOVER_LIBYAML_BUILT, "" },
		{ "libmicrohttpd", mhd_built, "" },
	}
};

void
build_info_init(const char *amqp, const char *curl)
{
	const char *mhd = MHD_get_version();

	snprintf(mhd_built, sizeof(mhd_built), "%x.%x.%x",
	    (unsigned)(MHD_VERSION >> 24) & 0xff, (unsigned)(MHD_VERSION >> 16) & 0xff,
	    (unsigned)(MHD_VERSION >> 8) & 0xff);
	info.libs[0].running = amqp ? amqp : "";
	info.libs[1].running = curl ? curl : "";
	info.libs[2].running = sqlite3_libversion();
	info.libs[3].running = jansson_version_str();
	info.libs[4].running = yaml_get_version_string();
	info.libs[5].running = mhd ? mhd : "";
}

const struct build_info *
build_info_get(void)
{
	return &info;
}
