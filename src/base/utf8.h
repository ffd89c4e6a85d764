/* utf8.h - strict UTF-8 (RFC 3629: shortest form, no surrogates, at most U+10FFFF), for the two
 * places that meet bytes of unknown origin: PNG iTXt chunks (Pillow drops one that is not valid
 * UTF-8) and text a client sent that `g4v serve` quotes back in a JSON error (JSON must be UTF-8).
 */
#ifndef G4V_BASE_UTF8_H
#define G4V_BASE_UTF8_H

#include <stddef.h>

/* Length (1-4) of the valid UTF-8 sequence at s[0..n), 0 if s starts no valid sequence (n = 0,
 * a stray continuation byte, an overlong form, a surrogate, above U+10FFFF, cut short). */
size_t g4v_utf8_seq_len(const char *s, size_t n);

/* 1 if s[0..n) is valid UTF-8 throughout. */
int g4v_utf8_valid(const char *s, size_t n);

/* In place on a NUL-terminated string: every byte that starts no valid sequence becomes '?'. */
void g4v_utf8_sanitize(char *s);

#endif
