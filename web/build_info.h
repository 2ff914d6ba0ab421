/* build_info: what this binary is — cutover's version, the git commit it
 * was built from, and the version of each library it was compiled against
 * and (where the library can say) the one loaded at run time. Read by
 * `cutover --version`, /healthz and /metrics' cutover_build_info. */
#ifndef CUTOVER_BUILD_INFO_H
#define CUTOVER_BUILD_INFO_H

#include <stddef.h>

/* One library: NAME is a Prometheus label name (rabbitmq_c, libcurl, sqlite,
 * jansson, libyaml, libmicrohttpd). */
struct build_lib {
	const char *name;
	const char *built;	/* the headers' version, from their macros */
	const char *running;	/* the loaded library's, or "" when unknown */
};

#define BUILD_LIBS	6

struct build_info {
	const char *version;	/* CMake's project version, e.g. "0.1.0" */
	const char *commit;	/* short git commit at configure time, or "unknown" */
	struct build_lib libs[BUILD_LIBS];
};

/* Fills in the run-time versions: AMQP and CURL are amqp_version()'s and
 * curl_version_info()'s (the libraries cutover_web does not link; NULL:
 * unknown), the others are asked here. Call once, before any thread starts;
 * until then every running version is "". */
void build_info_init(const char *amqp, const char *curl);

/* The build's facts, with the running versions build_info_init gave. */
const struct build_info *build_info_get(void);

#endif
