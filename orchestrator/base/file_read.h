/* file_read: a file read whole into memory, with a bound on its size: the
 * one reader of plans, configurations, message bodies and exports. Each
 * caller words the failure for its own reader (a plan's error says what a
 * plan should be), so this returns which failure it was. */
#ifndef CUTOVER_FILE_READ_H
#define CUTOVER_FILE_READ_H

#include <stddef.h>

#include "errbuf.h"

/* file_read's return codes: X(NAME, CODE, WHAT). */
#define FILE_READ_MAP(X)						\
	X(FILE_READ_OK, 0, "read")					\
	X(FILE_READ_EOPEN, -1, "cannot open it")			\
	X(FILE_READ_EREAD, -2, "read error")				\
	X(FILE_READ_EBIG, -3, "larger than the bound")			\
	X(FILE_READ_ENOMEM, -4, "out of memory")

/* enum file_read_status, and file_read_status_name(RC): what code RC means,
 * in a few words ("cannot open it"); "unknown" for a code that is not
 * file_read's. */
ERRBUF_CODES(file_read_status, FILE_READ_MAP, file_read_status_name);

/* Reads file PATH whole into a new NUL-terminated *OUT (its length, the
 * NUL not counted, in *LEN; free with free()). Returns FILE_READ_OK, or
 * another code with *OUT NULL: FILE_READ_EOPEN and FILE_READ_EREAD leave
 * errno as the failing call set it; FILE_READ_EBIG when the file holds
 * more than MAX bytes (nothing past MAX + 4096 is read). */
int file_read(const char *path, size_t max, char **out, size_t *len);

#endif
