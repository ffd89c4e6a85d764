/* g4v.h - the public API of libg4v: Gemma 4 vision embeddings ("soft tokens") on the CPU.
 *
 * This header is the whole public surface. Everything under src/ is internal.
 *
 *   g4v_model  a checkpoint directory loaded once (weights memory-mapped and packed); immutable,
 *              shared by any number of threads.
 *   g4v_ctx    one per calling thread: a thread pool and a workspace that grows to the largest
 *              image seen and is reused, so encoding allocates nothing in the steady state.
 *
 * Every call returns a g4v_status (G4V_OK is 0). Nothing here prints, exits or aborts on bad input.
 * g4v_model_load writes its error message into a caller buffer; calls on a ctx leave theirs in
 * g4v_ctx_error(ctx). There is no global mutable state.
 *
 * Using the output with a language model (SPEC.md section E): for an image with N soft tokens,
 * the prompt holds boi, N x image, eoi token ids (g4v_prompt_tokens). Embed the text tokens as the
 * model does (Gemma 4 multiplies text embeddings by bf16(sqrt(T))), then copy the N feature rows
 * unscaled into the N image-token positions, in order. See examples/splice.c.
 */
#ifndef G4V_H
#define G4V_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define G4V_VERSION_MAJOR 0
#define G4V_VERSION_MINOR 1
#define G4V_VERSION_PATCH 0

#if defined(G4V_BUILDING_LIBRARY)
#define G4V_API __attribute__((visibility("default")))
#else
#define G4V_API
#endif

/* Status codes. Stable numbers: callers may switch on them. */
typedef enum g4v_status {
    G4V_OK = 0,
    G4V_ERR_ARG = 1,         /* a caller argument is invalid (NULL, unsupported budget, ...) */
    G4V_ERR_IO = 2,          /* a file cannot be opened, read or mapped */
    G4V_ERR_MODEL = 3,       /* the checkpoint is malformed or disagrees with its config */
    G4V_ERR_IMAGE = 4,       /* the image cannot be decoded (corrupt, truncated, unsupported) */
    G4V_ERR_LIMIT = 5,       /* an input exceeds a configured limit (pixels, header size, ...) */
    G4V_ERR_NOMEM = 6,       /* an allocation failed */
    G4V_ERR_UNSUPPORTED = 7, /* a valid input that this library does not handle */
    G4V_ERR_INTERNAL = 8     /* a bug: please report it */
} g4v_status;

/* Short constant name of a status ("G4V_ERR_MODEL"); never NULL. */
G4V_API const char *g4v_status_name(int status);

/* Library version as "MAJOR.MINOR.PATCH". */
G4V_API const char *g4v_version(void);

#ifdef __cplusplus
}
#endif
#endif
