/* small_gguf.h - a tiny GGUF file written byte by byte (GGUF v3: header, string metadata, F32
 * tensor infos, 32-byte aligned data), for the tests of g4v_gguf_read_info: it does not use the
 * library's reader, so it can check it. Two v.* tensors and one other; the metadata of a Gemma 4
 * mmproj plus a chat template. */
#ifndef G4V_TESTS_SMALL_GGUF_H
#define G4V_TESTS_SMALL_GGUF_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static void sg_u32(FILE *f, uint32_t v) { fwrite(&v, 4, 1, f); } /* little-endian hosts only */
static void sg_u64(FILE *f, uint64_t v) { fwrite(&v, 8, 1, f); }
static void sg_str(FILE *f, const char *s) {
    sg_u64(f, strlen(s));
    fwrite(s, 1, strlen(s), f);
}

/* 0 on success. */
static int small_gguf_write(const char *path) {
    static const char *const kv[][2] = {{"general.architecture", "clip"},
                                        {"general.type", "mmproj"},
                                        {"clip.vision.projector_type", "gemma4v"},
                                        {"tokenizer.chat_template", "{{ messages }}"}};
    static const char *const tensors[] = {"v.blk.0.attn_q.weight", "v.patch_embd.weight",
                                          "mm.input_projection.weight"};
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    fwrite("GGUF", 1, 4, f);
    sg_u32(f, 3);
    sg_u64(f, 3); /* tensors */
    sg_u64(f, 4); /* metadata pairs */
    for (int i = 0; i < 4; i++) {
        sg_str(f, kv[i][0]);
        sg_u32(f, 8); /* GGUF_TYPE_STRING */
        sg_str(f, kv[i][1]);
    }
    for (int i = 0; i < 3; i++) {
        sg_str(f, tensors[i]);
        sg_u32(f, 1);           /* dimensions */
        sg_u64(f, 4);           /* 4 elements */
        sg_u32(f, 0);           /* GGML_TYPE_F32 */
        sg_u64(f, 32 * (uint64_t)i); /* offset in the data section */
    }
    long at = ftell(f);
    static const unsigned char zeros[128];
    fwrite(zeros, 1, (size_t)((32 - at % 32) % 32), f); /* general.alignment's default */
    fwrite(zeros, 1, 96, f);
    return fclose(f) ? -1 : 0;
}

#endif
