/* model_store_internal.h - what the store readers (store_hf.c, store_ollama.c,
 * store_lmstudio.c) share with model_store.c: file tests, case-insensitive lookups, the checks
 * that decide whether a file is a Gemma 4 model g4v can use, and the GGUF-folder picker. */
#ifndef G4V_MODEL_STORE_INTERNAL_H
#define G4V_MODEL_STORE_INTERNAL_H

#include "model_store.h"

#include <stddef.h>
#include <stdint.h>

/* What a lookup is for: the parts whose usability decides m->usable. */
enum { MS_WANT_VISION = 1, MS_WANT_TEXT = 2, MS_WANT_ANY = 3 };

int ms_is_dir(const char *p);
int ms_is_file(const char *p); /* a regular file, symlinks followed */
uint64_t ms_file_size(const char *p); /* 0 when absent */
/* snprintf for messages and names, where a cut text is acceptable (GCC's truncation warning
 * does not look into it): returns what snprintf returns. */
int ms_msg(char *out, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* snprintf that reports truncation: 0, or -1 when out did not hold it all. */
int ms_fmt(char *out, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The entry of dir named name, exactly or else case-insensitively, as dir/entry into out.
 * 1 found, 0 not. */
int ms_find_ci(const char *dir, const char *name, char *out, size_t cap);
/* The sorted names of dir's entries (hidden ones skipped); free with ms_names_free. */
int ms_names(const char *dir, char ***names, int *n);
void ms_names_free(char **names, int n);
/* 1 if a model's name says Gemma 4 ("gemma-4", "gemma4", "gemma_4", any case). */
int ms_name_is_gemma4(const char *name);
/* "org/name" or "org/name:QUANT" (letters, digits, '.', '_', '-'): 1 with the parts. */
int ms_parse_repo_id(const char *v, char *org, size_t ocap, char *name, size_t ncap, char *quant,
                     size_t qcap);

/* A JSON file (at most 16 MB) parsed, or NULL with the reason in why. */
struct cJSON;
struct cJSON *ms_read_json(const char *path, char *why, size_t cap);

/* The checks: 1 usable, 0 not (the reason in why). */
int ms_check_checkpoint(const char *dir, char *why, size_t cap);
int ms_check_mmproj(const char *path, char *why, size_t cap);
/* A text GGUF. *vision_tensors (may be NULL): how many v.* tensors the file itself holds;
 * *has_template (may be NULL): 1 if it carries tokenizer.chat_template. */
int ms_check_text(const char *path, int *vision_tensors, int *has_template, char *why,
                  size_t cap);

/* A folder of GGUF files (a GGUF repo snapshot, an LM Studio model folder): the mmproj into
 * mmproj ("" if none) and, into text, the text GGUF whose quantization tag is quant (NULL: the
 * only one, else Q4_K_M, else the first by name). 0, or -1 with the reason in err (quant absent:
 * the tags there). */
int ms_gguf_folder_pick(const char *dir, const char *quant, char *text, size_t tcap,
                        char *mmproj, size_t mcap, char *err, size_t ecap);
/* Every text GGUF of a folder (split parts after the first left out), sorted. */
int ms_gguf_folder_texts(const char *dir, char ***names, int *n);
/* The quantization tag of a GGUF file name: "Q4_K_M" for "gemma-4-E4B-it-Q4_K_M.gguf". */
void ms_quant_of(const char *file, char *out, size_t cap);
/* Fills m->usable and m->why from its vision and text parts as want asks. */
void ms_judge(ms_model *m, int want);

int ms_list_push(ms_list *l, const ms_model *m);

/* The stores (the rows of model_store.c's table). find: MS_OK (m filled, m->usable judged for want), MS_ERR_NOT_FOUND (no such
 * repo: looked says where it looked) or MS_ERR_UNUSABLE/MS_ERR_USAGE (err says why). */
int ms_hf_find(const char *org, const char *name, const char *quant, const char *revision,
               int want, ms_model *m, char *looked, size_t lcap, char *err, size_t ecap);
int ms_hf_list(ms_list *l, int all);
/* LM Studio keeps no revisions: revision is ignored. */
int ms_lms_find(const char *org, const char *name, const char *quant, const char *revision,
                int want, ms_model *m, char *looked, size_t lcap, char *err, size_t ecap);
int ms_lms_list(ms_list *l, int all);
int ms_ollama_list(ms_list *l, int all);
/* Each store's folders (ms_store_dirs). */
int ms_hf_dirs(char (*dirs)[MS_PATH_MAX], int max);
int ms_lms_dirs(char (*dirs)[MS_PATH_MAX], int max);
int ms_ollama_dirs(char (*dirs)[MS_PATH_MAX], int max);

#endif
