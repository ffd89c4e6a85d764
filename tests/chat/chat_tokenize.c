/* chat_tokenize.c - a text's token ids under a GGUF's vocabulary, for test_chat_template_ids.py:
 * what a tokenizer makes of a reference rendering (special tokens parsed, nothing added: the
 * rendering writes <bos> itself).
 *
 *   chat_tokenize LM.gguf < TEXT      prints the ids as a JSON array */
#include "chat_backend.h"
#include "llama.h"

#include <stdio.h>
#include <stdlib.h>

static void quiet(enum ggml_log_level level, const char *text, void *user) {
    (void)level;
    (void)text;
    (void)user;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: chat_tokenize LM.gguf < TEXT\n");
        return 2;
    }
    llama_log_set(quiet, NULL);
    char err[512];
    if (chat_backend_load(err, sizeof err)) { /* libllama's CPU backend, as g4v chat loads it */
        fprintf(stderr, "chat_tokenize: %s\n", err);
        return 1;
    }
    size_t cap = 1 << 16, n = 0, k;
    char *text = malloc(cap);
    while (text && (k = fread(text + n, 1, cap - n, stdin)) > 0) {
        n += k;
        if (n == cap) text = realloc(text, cap *= 2);
    }
    if (!text) return 1;
    struct llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    struct llama_model *m = llama_model_load_from_file(argv[1], mp);
    if (!m) {
        fprintf(stderr, "chat_tokenize: cannot load %s\n", argv[1]);
        return 1;
    }
    const struct llama_vocab *v = llama_model_get_vocab(m);
    int need = -llama_tokenize(v, text, (int32_t)n, NULL, 0, false, true);
    llama_token *ids = malloc((size_t)(need > 0 ? need : 1) * sizeof *ids);
    if (!ids || llama_tokenize(v, text, (int32_t)n, ids, need, false, true) != need) return 1;
    printf("[");
    for (int i = 0; i < need; i++) printf("%s%d", i ? "," : "", ids[i]);
    printf("]\n");
    free(ids);
    free(text);
    llama_model_free(m);
    return 0;
}
