/* chat_prefill.h - feeds a prompt of text and soft-token rows to a Gemma 4 text model in libllama
 * exactly as libmtmd does (mtmd_tokenize + mtmd_helper_eval_chunks; docs/CHAT.md §3), using only
 * llama.h. The chat front end (g4v chat) and the bit-exactness test against libmtmd call it.
 *
 * The prompt is a list of pieces: text, or one image's rows (N rows of n_embd floats, unscaled).
 * It is cut into chunks as mtmd_tokenize cuts it: every text piece is tokenized on its own
 * (parse_special, no BOS/EOS) and appended to the current text chunk; an image piece appends the
 * tokenization of "<|image>" to it, becomes an image chunk of its own, and "<image|>" starts the
 * next text chunk. BOS (when asked and the vocabulary adds one) goes at the very start. */
#ifndef G4V_CHAT_PREFILL_H
#define G4V_CHAT_PREFILL_H

#include <stddef.h>
#include <stdint.h>

#include "llama.h"

typedef struct chat_piece {
    const char *text;  /* a text piece, or NULL for an image */
    const float *rows; /* the image's rows: n_rows x n_embd floats, or NULL while the image is
                          not encoded yet (then item says which image it is) */
    int n_rows;        /* 0 while not known */
    uint64_t item;     /* the image as a chat item (chat_items.h), or 0 */
    int ref;           /* the caller's index of the image (where to encode it from) */
} chat_piece;

typedef struct chat_chunk {
    int is_image;
    llama_token *tokens; /* text chunk */
    int n_tokens;        /* text tokens, or image rows (0 while not known) */
    const float *rows;   /* image chunk (not owned; NULL while not encoded) */
    uint64_t item;       /* image chunk: its chat item */
    int ref;             /* image chunk: the piece's ref */
} chat_chunk;

typedef struct chat_chunks {
    chat_chunk *v;
    int n, cap;
    int n_pos;                  /* positions the chunks take: text tokens + image rows */
    int n_text_tokens, n_image_rows, n_images;
} chat_chunks;

/* Gemma 4's rule for bidirectional attention over an image's rows (libmtmd's
 * mtmd_decode_use_non_causal): the unified 12B embedder always; a vision tower unless the text
 * model's input width is 1536 or 2560 (e2b, e4b: causal). */
int chat_use_non_causal(int unified, int n_embd_inp);

/* Cuts pieces into chunks (see above). add_bos: this is the start of the sequence. 0, or -1 with
 * a message in err. */
int chat_tokenize(const struct llama_vocab *vocab, const chat_piece *pieces, int n_pieces,
                  int add_bos, chat_chunks *out, char *err, size_t errsz);
void chat_chunks_free(chat_chunks *c);

/* Decodes the chunks at *n_past on sequence seq as mtmd_helper_eval_chunks(..., n_batch,
 * logits_last = true) does: a text chunk in calls of up to n_batch tokens, logits for the last
 * token of the prompt only; an image chunk's rows as llama_batch.embd at consecutive positions,
 * in calls of up to n_batch rows (the context's n_batch and n_ubatch must hold a whole image for
 * the bidirectional case to be right), inside llama_set_causal_attn(ctx, false) ... (ctx, true)
 * when non_causal. *n_past advances. 0, or -1 with a message. */
int chat_decode_chunks(struct llama_context *lctx, llama_seq_id seq, const chat_chunks *c,
                       int non_causal, int n_batch, llama_pos *n_past, char *err, size_t errsz);

/* One chunk as chat_decode_chunks decodes it, a text chunk from its token `from` on (prompt
 * reuse resumes inside a chunk; an image is always decoded whole: from must be 0), with the
 * logits of its last token when logits_last. 0, or -1 with a message. */
int chat_decode_chunk(struct llama_context *lctx, llama_seq_id seq, const chat_chunk *k, int from,
                      int non_causal, int n_batch, int logits_last, llama_pos *n_past, char *err,
                      size_t errsz);

/* Rows from .. from+count-1 of an image chunk at *n_past on (advanced by count), in calls of
 * up to n_batch rows; causal attention only (rows decoded in pieces cannot attend to later
 * ones). The pieces of an image that others' steps go between (chat_feed.c). 0, or -1. */
int chat_decode_image_rows(struct llama_context *lctx, llama_seq_id seq, const chat_chunk *k,
                           int from, int count, int n_batch, llama_pos *n_past, char *err,
                           size_t errsz);

#endif
