/* fuzz_common.h - what the fuzz harnesses share: a private scratch directory, file writes, the
 * paths of the committed companion files and of the tiny model, and the checks that turn a
 * silent misbehaviour (a bad status, an empty message, a broken invariant) into a crash that
 * libFuzzer records.
 *
 * Every harness defines LLVMFuzzerTestOneInput. Built with -fsanitize=fuzzer it is a libFuzzer
 * target; linked with replay_main.c it replays corpus and regression files (any compiler, no
 * sanitizer needed), which is how ctest runs the regressions. Nothing here is thread-safe: one
 * input at a time, as libFuzzer calls it.
 */
#ifndef G4V_FUZZ_COMMON_H
#define G4V_FUZZ_COMMON_H

#include "base/error.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A per-process scratch directory (created on first use, removed at exit). Under /dev/shm when
 * it is writable, so that writing each input costs no disk I/O; G4V_FUZZ_TMP overrides. */
const char *fz_workdir(void);

/* dir/name; aborts when it does not fit (only fixed names are used). */
void fz_path(char *out, size_t cap, const char *dir, const char *name);

/* Writes (replaces) dir/name with n bytes; aborts on failure (a broken harness, not a finding). */
void fz_write(const char *dir, const char *name, const void *data, size_t n);

/* Copies the committed companion file fuzz/data/<sub>/<name> into dir. */
void fz_copy_data(const char *sub, const char *name, const char *dir);

/* The tiny checkpoint directory for the encode harness (G4V_FUZZ_MODEL, else the one the build
 * generated). */
const char *fz_model_dir(void);

/* Reads every byte of p[0..n) so that ASan sees an out-of-bounds view or a bad mapping. */
void fz_touch(const void *p, size_t n);

/* A failed call must return a real error status (not G4V_OK, not G4V_ERR_INTERNAL, not an
 * unknown number) and leave a message in err. Aborts with both printed otherwise. */
void fz_check_failure(int status, const g4v_err *err, const char *what);

/* Aborts with a message when cond is false: an invariant the library promises was broken. */
#define FZ_ASSERT(cond, ...) ((cond) ? (void)0 : fz_die(__FILE__, __LINE__, #cond, __VA_ARGS__))
void fz_die(const char *file, int line, const char *cond, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 4, 5)));

#endif
