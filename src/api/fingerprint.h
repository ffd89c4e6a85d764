/* fingerprint.h - the model's identity (g4v_model_fingerprint): a SHA-256 over everything that
 * determines the features, computed from an open checkpoint. docs/SERVICE.md "Model identity"
 * lists what goes in and what stays out.
 */
#ifndef G4V_API_FINGERPRINT_H
#define G4V_API_FINGERPRINT_H

#include "base/error.h"
#include "kernels/sha256.h"
#include "encoder/encoder.h" /* G4V_NUMERICS_VERSION */
#include "io/checkpoint.h"

/* The tag that opens the hashed text; a new layout of the hashed fields gets a new tag. */
#define G4V_FINGERPRINT_TAG "g4v-vision-fingerprint/1"

/* Hashes ck for the given math mode (its g4v_math_mode_name is hashed) with threads
 * workers (<= 0: one per CPU; the digest does not depend on it). drop_pages: after hashing a
 * tensor, drop its pages from memory again (read-only file mappings only, as
 * g4v_encoder_opts.drop_mapped_pages). */
int g4v_fingerprint_compute(const g4v_checkpoint *ck, g4v_math_mode mode, int threads,
                            int drop_pages, char hex[G4V_SHA256_HEX], g4v_err *err);

#endif
