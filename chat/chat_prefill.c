/* chat_prefill.c - the prompt, as libmtmd would feed it, through llama.h alone (chat_prefill.h). */
#include "chat_prefill.h"
#include "chat_error.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int chat_use_non_causal(int unified, int n_embd_inp) {
    if (unified) return 1;
    return n_embd_inp != 1536 && n_embd_inp != 2560;
}

void chat_chunks_free(chat_chunks *c) {
    if (!c) return;
    for (int i = 0; i < c->n; i++) free(c->v[i].tokens);
    free(c->v);
    memset(c, 0, sizeof *c);
}

static chat_chunk *push_chunk(chat_chunks *c) {
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 8;
        chat_chunk *v = realloc(c->v, (size_t)cap * sizeof *v);
        if (!v) return NULL;
        c->v = v;
        c->cap = cap;
    }
    chat_chunk *k = &c->v[c->n++];
    memset(k, 0, sizeof *k);
    return k;
}

/* Appends tokens to the last chunk if it is text, else to a new text chunk (mtmd's add_text). */
static int add_tokens(chat_chunks *c, const llama_token *t, int n) {
    if (n == 0) return 0;
    chat_chunk *k = c->n && !c->v[c->n - 1].is_image ? &c->v[c->n - 1] : push_chunk(c);
    if (!k) return -1;
    llama_token *v = realloc(k->tokens, (size_t)(k->n_tokens + n) * sizeof *v);
    if (!v) return -1;
    memcpy(v + k->n_tokens, t, (size_t)n * sizeof *v);
    k->tokens = v;
    k->n_tokens += n;
    c->n_pos += n;
    c->n_text_tokens += n;
    return 0;
}

/* llama_tokenize(text, add_special = false, parse_special = true), as mtmd's
 * mtmd_tokenize_text_internal calls it. */
static int add_text(chat_chunks *c, const struct llama_vocab *vocab, const char *text,
                    char *err, size_t errsz) {
    size_t len = strlen(text);
    if (len > INT_MAX / 2) {
        seterr(err, errsz, "prompt text too long (%zu bytes)", len);
        return -1;
    }
    int cap = (int)len + 2;
    llama_token *t = malloc((size_t)cap * sizeof *t);
    if (!t) goto oom;
    int n = llama_tokenize(vocab, text, (int32_t)len, t, cap, false, true);
    if (n < 0 && n != INT_MIN) {
        cap = -n;
        llama_token *t2 = realloc(t, (size_t)cap * sizeof *t);
        if (!t2) goto oom;
        t = t2;
        n = llama_tokenize(vocab, text, (int32_t)len, t, cap, false, true);
    }
    if (n < 0) {
        free(t);
        seterr(err, errsz, "cannot tokenize the prompt text");
        return -1;
    }
    int rc = add_tokens(c, t, n);
    free(t);
    if (rc) goto oom;
    return 0;
oom:
    free(t);
    seterr(err, errsz, "out of memory tokenizing the prompt");
    return -1;
}

int chat_tokenize(const struct llama_vocab *vocab, const chat_piece *pieces, int n_pieces,
                  int add_bos, chat_chunks *out, char *err, size_t errsz) {
    memset(out, 0, sizeof *out);
    for (int i = 0; i < n_pieces; i++) {
        const chat_piece *p = &pieces[i];
        if (p->text) {
            if (add_text(out, vocab, p->text, err, errsz)) goto fail;
            continue;
        }
        if (p->n_rows < 0 || (!p->rows && !p->item) || (p->rows && p->n_rows <= 0)) {
            seterr(err, errsz, "image %d has no rows", out->n_images + 1);
            goto fail;
        }
        /* mtmd_tokenizer::add_media: img_beg tokenized on its own, the image chunk, img_end */
        if (add_text(out, vocab, "<|image>", err, errsz)) goto fail;
        chat_chunk *k = push_chunk(out);
        if (!k) {
            seterr(err, errsz, "out of memory");
            goto fail;
        }
        k->is_image = 1;
        k->rows = p->rows;
        k->n_tokens = p->n_rows;
        k->item = p->item;
        k->ref = p->ref;
        out->n_pos += p->n_rows;
        out->n_image_rows += p->n_rows;
        out->n_images++;
        if (add_text(out, vocab, "<image|>", err, errsz)) goto fail;
    }
    if (add_bos && llama_vocab_get_add_bos(vocab)) { /* mtmd_tokenizer::tokenize */
        llama_token bos = llama_vocab_bos(vocab);
        if (out->n && !out->v[0].is_image) {
            chat_chunk *k = &out->v[0];
            llama_token *v = realloc(k->tokens, (size_t)(k->n_tokens + 1) * sizeof *v);
            if (!v) goto oom;
            memmove(v + 1, v, (size_t)k->n_tokens * sizeof *v);
            v[0] = bos;
            k->tokens = v;
            k->n_tokens++;
        } else {
            if (!push_chunk(out)) goto oom;
            memmove(out->v + 1, out->v, (size_t)(out->n - 1) * sizeof *out->v);
            memset(&out->v[0], 0, sizeof out->v[0]);
            out->v[0].tokens = malloc(sizeof(llama_token));
            if (!out->v[0].tokens) goto oom;
            out->v[0].tokens[0] = bos;
            out->v[0].n_tokens = 1;
        }
        out->n_pos++;
        out->n_text_tokens++;
    }
    return 0;
oom:
    seterr(err, errsz, "out of memory");
fail:
    chat_chunks_free(out);
    return -1;
}

static int decode_text(struct llama_context *lctx, llama_seq_id seq, const chat_chunk *k, int from,
                       int n_batch, int logits_last, llama_pos *n_past, char *err, size_t errsz) {
    /* mtmd_helper_eval_chunk_single: batches of up to n_batch tokens, logits on the last one */
    struct llama_batch b = llama_batch_init(n_batch, 0, 1);
    int i = from;
    while (i < k->n_tokens) {
        b.n_tokens = 0;
        for (; i < k->n_tokens && b.n_tokens < n_batch; i++) {
            int j = b.n_tokens++;
            b.token[j] = k->tokens[i];
            b.pos[j] = (*n_past)++;
            b.n_seq_id[j] = 1;
            b.seq_id[j][0] = seq;
            b.logits[j] = 0;
        }
        if (logits_last && i == k->n_tokens) b.logits[b.n_tokens - 1] = 1;
        int rc = llama_decode(lctx, b);
        if (rc != 0) {
            llama_batch_free(b);
            seterr(err, errsz, "llama_decode failed on the prompt text (%d)%s", rc,
                   rc == 1 ? ": the context is full" : "");
            return -1;
        }
    }
    llama_batch_free(b);
    return 0;
}

static int decode_image(struct llama_context *lctx, llama_seq_id seq_id, const chat_chunk *k,
                        int from, int n, int non_causal, int n_batch, llama_pos *n_past,
                        char *err, size_t errsz) {
    /* mtmd_helper_decode_image_chunk: 1-D positions, logits off, the rows as they are */
    if (!k->rows || n <= 0 || from < 0 || from + n > k->n_tokens) {
        seterr(err, errsz, "an image chunk without its rows");
        return -1;
    }
    llama_pos *pos = malloc((size_t)n * sizeof *pos);
    int32_t *n_seq = malloc((size_t)n * sizeof *n_seq);
    llama_seq_id seq0 = seq_id;
    llama_seq_id **seq = malloc((size_t)(n + 1) * sizeof *seq);
    int8_t *logits = calloc((size_t)n, 1);
    int rc = -1;
    if (!pos || !n_seq || !seq || !logits) {
        seterr(err, errsz, "out of memory");
        goto done;
    }
    for (int i = 0; i < n; i++) {
        pos[i] = *n_past + i;
        n_seq[i] = 1;
        seq[i] = &seq0;
    }
    seq[n] = NULL;
    if (non_causal) llama_set_causal_attn(lctx, false);
    for (int off = 0; off < n; off += n_batch) {
        int m = n - off < n_batch ? n - off : n_batch;
        struct llama_batch b = {
            .n_tokens = m,
            .token = NULL,
            .embd = (float *)(k->rows + (size_t)(from + off) *
                                            (size_t)llama_model_n_embd_inp(llama_get_model(lctx))),
            .pos = pos + off,
            .n_seq_id = n_seq + off,
            .seq_id = seq + off,
            .logits = logits + off,
        };
        int r = llama_decode(lctx, b);
        if (r != 0) {
            if (non_causal) llama_set_causal_attn(lctx, true);
            seterr(err, errsz, "llama_decode failed on an image's rows (%d)%s", r,
                   r == 1 ? ": the context is full" : "");
            goto done;
        }
    }
    if (non_causal) llama_set_causal_attn(lctx, true);
    *n_past += n;
    rc = 0;
done:
    free(pos);
    free(n_seq);
    free(seq);
    free(logits);
    return rc;
}

int chat_decode_chunks(struct llama_context *lctx, llama_seq_id seq, const chat_chunks *c,
                       int non_causal, int n_batch, llama_pos *n_past, char *err, size_t errsz) {
    if (n_batch <= 0) {
        seterr(err, errsz, "n_batch must be positive");
        return -1;
    }
    for (int i = 0; i < c->n; i++) {
        int rc = chat_decode_chunk(lctx, seq, &c->v[i], 0, non_causal, n_batch, i == c->n - 1,
                                   n_past, err, errsz);
        if (rc) return rc;
    }
    return 0;
}

int chat_decode_chunk(struct llama_context *lctx, llama_seq_id seq, const chat_chunk *k, int from,
                      int non_causal, int n_batch, int logits_last, llama_pos *n_past, char *err,
                      size_t errsz) {
    if (n_batch <= 0 || from < 0 || (k->is_image && from) || (!k->is_image && from >= k->n_tokens)) {
        seterr(err, errsz, "bad chunk decode (n_batch %d, from %d of %d)", n_batch, from,
               k->n_tokens);
        return -1;
    }
    return k->is_image ? decode_image(lctx, seq, k, 0, k->n_tokens, non_causal, n_batch, n_past,
                                      err, errsz)
                       : decode_text(lctx, seq, k, from, n_batch, logits_last, n_past, err, errsz);
}

int chat_decode_image_rows(struct llama_context *lctx, llama_seq_id seq, const chat_chunk *k,
                           int from, int count, int n_batch, llama_pos *n_past, char *err,
                           size_t errsz) {
    if (!k->is_image || n_batch <= 0) {
        seterr(err, errsz, "bad image rows decode (n_batch %d)", n_batch);
        return -1;
    }
    return decode_image(lctx, seq, k, from, count, 0, n_batch, n_past, err, errsz);
}
