/* hex: bytes as lowercase hexadecimal text — digests, message ids and
 * batch ids are all written this way — and hex digits read back (the
 * strict percent-decoders of the broker URL and the web server). */
#ifndef CUTOVER_HEX_H
#define CUTOVER_HEX_H

#include <stddef.h>

/* Writes the N bytes at IN as 2 * N lowercase hex digits and a NUL into
 * OUT, which must hold 2 * N + 1 bytes. Returns OUT. */
char *hex_encode(const void *in, size_t n, char *out);

/* The value of hex digit C ('0'-'9', 'a'-'f', 'A'-'F'), or -1 for any
 * other character: for decoders that refuse what is not two hex digits. */
int hex_value(int c);

#endif
