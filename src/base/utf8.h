/* utf8.h - strict UTF-8 (RFC 3629: shortest form, no surrogates, at most U+10FFFF) for PNG iTXt
 * chunks (Pillow drops one that is not valid UTF-8). Its core, g4v_utf8_seq_len, is public
 * (g4v.h): the front ends' checks of text they print as JSON (common/utf8.c) call it rather
 * than keep a second copy.
 */
#ifndef G4V_BASE_UTF8_H
#define G4V_BASE_UTF8_H

#include <stddef.h>

#include "g4v.h" /* g4v_utf8_seq_len: public, the one copy the front ends use too */

/* 1 if s[0..n) is valid UTF-8 throughout. */
int g4v_utf8_valid(const char *s, size_t n);

#endif
