/* errbuf: the error buffer every module fills (DESIGN.md §5: functions
 * return 0 or a negative code, and the caller reads why in char *err,
 * size_t errlen). One formatter for all of them. */
#ifndef CUTOVER_ERRBUF_H
#define CUTOVER_ERRBUF_H

#include <stddef.h>

/* Formats FMT into ERR (ERRLEN bytes), replacing what it held and cutting
 * off what does not fit; ERR stays NUL-terminated. Does nothing when ERR
 * is NULL or ERRLEN is 0, so callers may pass an optional buffer. */
void errbuf_set(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A module's table of return codes is X(NAME, CODE, WHAT) rows
 * (BROKER_STATUS_MAP), written once in its header; the rest is made from
 * it. ERRBUF_CODES(TAG, MAP, NAME_FN), in the header, declares the enum
 * TAG (a NAME = CODE each row) and the name function, const char
 * *NAME_FN(int rc); ERRBUF_NAME_FUNCTION(NAME_FN, MAP, UNKNOWN), in one
 * .c file of the module, defines it: the WHAT of the row whose CODE is
 * RC, UNKNOWN for any other value. */
#define ERRBUF_ENUM(name, code, what) name = code,
#define ERRBUF_CASE(name, code, what) case code: return what;
#define ERRBUF_CODES(tag, map, name_fn)					\
	enum tag { map(ERRBUF_ENUM) };					\
	const char *name_fn(int rc)
#define ERRBUF_NAME_FUNCTION(name_fn, map, unknown)			\
	const char *							\
	name_fn(int rc)							\
	{								\
		switch (rc) {						\
		map(ERRBUF_CASE)					\
		}							\
		return unknown;						\
	}

/* Replaces every occurrence of SECRET in the message S with "***", in
 * place (a secret of 1 or 2 bytes becomes as many '*'): S never grows.
 * Does nothing when S or SECRET is NULL or SECRET is empty. */
void errbuf_redact(char *s, const char *secret);

#endif
