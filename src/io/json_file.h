/* json_file.h - small JSON files (config.json, model.safetensors.index.json) read with a size
 * limit checked before anything is allocated, parsed with cJSON, and typed field readers that
 * fail with the file and key in the message.
 *
 * cJSON keeps the whole tree in memory (~10x the text); that is why the limit comes first.
 * Integers are read through the double cJSON stores, so only values up to 2^53 are exact; the
 * readers reject anything that is not an integral number in the stated range.
 */
#ifndef G4V_IO_JSON_FILE_H
#define G4V_IO_JSON_FILE_H

#include "base/error.h"

#include <cjson/cJSON.h>
#include <stdint.h>

/* Reads and parses path (at most max_bytes, the max_config_bytes limit). Missing/unreadable ->
 * G4V_ERR_IO, too large -> G4V_ERR_LIMIT, malformed -> G4V_ERR_MODEL. *out must be freed with
 * cJSON_Delete. */
int g4v_json_load(const char *path, uint64_t max_bytes, cJSON **out, g4v_err *err);

/* Parses text[0..n) as one JSON value followed only by whitespace; what names the text in
 * messages. NULL on failure with a G4V_ERR_MODEL message giving the byte offset. */
cJSON *g4v_json_parse(const char *text, size_t n, const char *what, g4v_err *err);

/* cJSON_ParseWithLengthOpts(text, n, end, 0) under the process-wide lock that keeps cJSON's
 * global error variable race-free. Every cJSON parse in libg4v must go through here (a ctest
 * checks that no other file calls cJSON_Parse*). */
cJSON *g4v_json_parse_text(const char *text, size_t n, const char **end);

/* A non-negative integral JSON number <= 2^53, or -1 if v is anything else. */
int64_t g4v_json_uint(const cJSON *v);

/* Optional fields of obj: absent (or null) keeps *out (the default). Present but of the wrong
 * type or out of [lo, hi] -> G4V_ERR_MODEL naming what.key. */
int g4v_json_int_field(const cJSON *obj, const char *key, int64_t lo, int64_t hi, const char *what,
                       int64_t *out, g4v_err *err);
int g4v_json_double_field(const cJSON *obj, const char *key, double lo, double hi, const char *what,
                          double *out, g4v_err *err);
int g4v_json_bool_field(const cJSON *obj, const char *key, const char *what, int *out,
                        g4v_err *err);

#endif
