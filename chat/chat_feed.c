/* chat_feed.c - the plan of a prompt and its feeding (chat_session_impl.h, docs/CHAT.md
 * "Prompt reuse").
 *
 * A prompt is first planned: each turn rendered by the template and tokenized, each image only
 * hashed (its rows are not needed to compare it), each video encoded (its frames decide its
 * text). Feeding then walks the plan against what the context already holds (items): while
 * they are the same, nothing is decoded; at the first difference the context is cut there and
 * the rest is decoded, the images in it encoded first. An image is kept or decoded whole (its
 * rows may attend to each other). When the whole plan is already held, its last item is
 * decoded again, for the logits of the last position. */
#include "chat_error.h"
#include "chat_items.h"
#include "chat_session_impl.h"
#include "frontend.h"

#include <stdlib.h>
#include <string.h>

int chat_items_push(chat_session *s, uint64_t item) {
    if (s->n_items == s->cap_items) {
        int cap = s->cap_items ? 2 * s->cap_items : 1024;
        uint64_t *v = realloc(s->items, (size_t)cap * sizeof *v);
        if (!v) return -1;
        s->items = v;
        s->cap_items = cap;
    }
    s->items[s->n_items++] = item;
    return 0;
}

void chat_plan_clear(chat_session *s) {
    for (int t = 0; t < s->n_pt; t++)
        chat_chunks_free(&s->pt[t].ch);
    s->n_pt = 0;
    s->plan_dirty = 1;
}

static void medium_free(plan_medium *m) {
    fe_encoded_free(&m->e);
    free(m->path_copy);
    memset(m, 0, sizeof *m);
}

/* The conversation's media from index `from` on leave it. */
static void media_drop(chat_session *s, int from) {
    for (int i = from; i < s->n_pm; i++)
        medium_free(&s->pm[i]);
    if (from < s->n_pm) s->n_pm = from;
}

void chat_conversation_clear(chat_session *s) {
    chat_plan_clear(s);
    media_drop(s, 0);
    chat_template_reset(&s->tmpl);
    s->kept_msgs = s->kept_media = 0;
}

void chat_conversation_keep(chat_session *s) {
    s->kept_msgs = s->tmpl.n_msgs;
    s->kept_media = s->n_pm;
}

/* Back to the conversation as it was when last kept (a refused prompt). */
static void conversation_undo(chat_session *s) {
    chat_plan_clear(s);
    while (s->tmpl.n_msgs > s->kept_msgs)
        chat_template_pop(&s->tmpl);
    media_drop(s, s->kept_media);
}

static int reserve_media(chat_session *s, int n) {
    if (s->n_pm + n <= s->cap_pm) return 0;
    int cap = s->cap_pm ? s->cap_pm : 8;
    while (cap < s->n_pm + n)
        cap *= 2;
    plan_medium *v = realloc(s->pm, (size_t)cap * sizeof *v);
    if (!v) return -1;
    s->pm = v;
    s->cap_pm = cap;
    return 0;
}

/* The rendered conversation with its media markers replaced: text pieces and image pieces. A
 * video is, per frame, "MM:SS " + the frame's rows (wrapped in <|image> ... <image|> by
 * chat_tokenize), frames joined by one space (g4v_video_prompt_text). An image is a piece without
 * rows yet. */
static int build_pieces(const char *text, const plan_medium *pm, int n_media, int n_embd,
                        chat_piece **out, int *n_out, char ***strs, int *n_strs) {
    int cap = 2 * n_media + 2;
    for (int i = 0; i < n_media; i++)
        cap += 2 * (pm[i].src.medium == FE_MEDIUM_VIDEO ? pm[i].e.n_frames : 1);
    int n = 0, ns = 0, mi = 0;
    chat_piece *p = calloc((size_t)cap, sizeof *p);
    char **sv = calloc((size_t)cap, sizeof *sv);
    if (!p || !sv) goto oom;
    const char *cur = text;
    size_t mlen = strlen(CHAT_MEDIA_MARKER);
    for (;;) {
        const char *hit = strstr(cur, CHAT_MEDIA_MARKER);
        size_t len = hit ? (size_t)(hit - cur) : strlen(cur);
        char *t = malloc(len + 1);
        if (!t) goto oom;
        memcpy(t, cur, len);
        t[len] = 0;
        sv[ns++] = t;
        p[n++].text = t;
        if (!hit) break;
        if (mi >= n_media) goto oom; /* cannot happen: chat_template_render checks the count */
        int ref = mi++;
        const plan_medium *m = &pm[ref];
        if (m->src.medium == FE_MEDIUM_IMAGE) {
            p[n].item = chat_item_image(m->hash, 0);
            p[n].ref = ref;
            n++;
        }
        size_t off = 0;
        for (int k = 0; m->src.medium == FE_MEDIUM_VIDEO && k < m->e.n_frames; k++) {
            char *lab = malloc(24);
            if (!lab) goto oom;
            snprintf(lab, 24, "%s%s ", k ? " " : "", m->e.mmss[k]);
            sv[ns++] = lab;
            p[n++].text = lab;
            p[n].rows = m->e.rows + off * (size_t)n_embd;
            p[n].n_rows = m->e.frame_rows[k];
            p[n].item = chat_item_frame(chat_frame_hash(m->hash, k), m->e.frame_rows[k]);
            p[n].ref = ref;
            n++;
            off += (size_t)m->e.frame_rows[k];
        }
        cur = hit + mlen;
    }
    *out = p;
    *n_out = n;
    *strs = sv;
    *n_strs = ns;
    return 0;
oom:
    for (int i = 0; sv && i < ns; i++)
        free(sv[i]);
    free(sv);
    free(p);
    return -1;
}

/* The plan: the whole conversation rendered (the generation prompt at its end) and tokenized,
 * as one plan turn compared from position 0 with what the context holds. */
static int plan_build(chat_session *s, char *err, size_t errsz) {
    if (!s->plan_dirty) return CHAT_OK;
    chat_plan_clear(s);
    int rc = CHAT_OK, n_pieces = 0, n_strs = 0;
    char **strs = NULL;
    chat_piece *pieces = NULL;
    char *text = chat_template_render(&s->tmpl, s->o.params.system, s->o.params.think, 1, err,
                                      errsz);
    if (!text) return CHAT_ERR_INPUT;
    if (s->o.params.prefill && *s->o.params.prefill) { /* the answer's given start */
        size_t a = strlen(text), b = strlen(s->o.params.prefill);
        char *v = realloc(text, a + b + 1);
        if (!v) {
            free(text);
            seterr(err, errsz, "out of memory");
            return CHAT_ERR_INTERNAL;
        }
        memcpy(v + a, s->o.params.prefill, b + 1);
        text = v;
    }
    if (s->n_pt == s->cap_pt) {
        plan_turn *v = realloc(s->pt, sizeof *v);
        if (!v) goto oom;
        s->pt = v;
        s->cap_pt = 1;
    }
    memset(&s->pt[0], 0, sizeof s->pt[0]);
    if (build_pieces(text, s->pm, s->n_pm, s->n_embd, &pieces, &n_pieces, &strs, &n_strs))
        goto oom;
    if (chat_tokenize(s->vocab, pieces, n_pieces, 1, &s->pt[0].ch, err, errsz)) {
        rc = CHAT_ERR_INTERNAL;
        goto out;
    }
    s->n_pt = 1;
    s->plan_dirty = 0;
    s->plan_base = 0;
    s->matching = 1;
    for (int i = 0; i < s->n_pm; i++) s->pm[i].stat.reused = 0;
    goto out;
oom:
    seterr(err, errsz, "out of memory");
    rc = CHAT_ERR_INTERNAL;
out:
    for (int i = 0; strs && i < n_strs; i++)
        free(strs[i]);
    free(strs);
    free(pieces);
    free(text);
    return rc;
}

int chat_session_add_user_parts(chat_session *s, const chat_part *parts, int n_parts, char *err,
                                size_t errsz) {
    int rc = CHAT_OK, first = s->n_pm, n_media = 0;
    for (int k = 0; k < n_parts; k++) n_media += parts[k].media != NULL;
    chat_msg_part *mp = calloc((size_t)(n_parts > 0 ? n_parts : 1), sizeof *mp);
    if (!mp || reserve_media(s, n_media)) goto oom;
    /* every medium's identity (a video: its frames too); a bad one refuses the turn */
    for (int k = 0; k < n_parts; k++) {
        if (!parts[k].media) {
            mp[k] = (chat_msg_part){.kind = CHAT_PART_TEXT,
                                    .text = (char *)(parts[k].text ? parts[k].text : "")};
            continue;
        }
        const chat_media *md = parts[k].media;
        if (md->budget) { /* its own budget: one of the list, and a whole image per decode call */
            char msg[256];
            if (g4v_budget_check(md->budget, msg, sizeof msg)) {
                seterr(err, errsz, "%s: %s", md->path, msg);
                rc = CHAT_ERR_USAGE;
                goto out;
            }
            if (md->budget > s->n_batch) {
                seterr(err, errsz, "%s: a budget of %d soft tokens is above this session's "
                       "limit of %d", md->path, md->budget, s->n_batch);
                rc = CHAT_ERR_USAGE;
                goto out;
            }
        }
        mp[k].kind = CHAT_PART_MEDIUM;
        mp[k].medium = md->medium;
        plan_medium *m = &s->pm[s->n_pm];
        memset(m, 0, sizeof *m);
        m->src = *md;
        if (!md->data) { /* kept for a later turn's plan (g4v chat's next turn) */
            size_t n = strlen(md->path) + 1;
            if (!(m->path_copy = malloc(n))) goto oom;
            memcpy(m->path_copy, md->path, n);
            m->src.path = m->path_copy;
        }
        m->turn = s->tmpl.n_msgs;
        m->stat.medium = md->medium;
        s->n_pm++;
        rc = chat_media_hash(s, md, &m->hash, err, errsz);
        if (!rc && md->medium == FE_MEDIUM_VIDEO) rc = chat_media_encode(s, m, err, errsz);
        if (rc) goto out;
    }
    if (chat_template_add_user(&s->tmpl, mp, n_parts)) goto oom;
    s->plan_dirty = 1;
    s->turns++;
    goto out;
oom:
    seterr(err, errsz, "out of memory");
    rc = CHAT_ERR_INTERNAL;
out:
    if (rc) media_drop(s, first); /* the turn's media leave the conversation */
    free(mp);
    return rc;
}

int chat_session_add_user(chat_session *s, const chat_media *media, int n_media, const char *text,
                          char *err, size_t errsz) {
    chat_part *p = calloc((size_t)n_media + 1, sizeof *p);
    if (!p) {
        seterr(err, errsz, "out of memory");
        return CHAT_ERR_INTERNAL;
    }
    for (int i = 0; i < n_media; i++) p[i].media = &media[i];
    p[n_media].text = text; /* g4v chat: the media first, then the text */
    int rc = chat_session_add_user_parts(s, p, n_media + 1, err, errsz);
    free(p);
    return rc;
}

/* A message the template's conversation took (failed: 1, out of memory): the plan is stale. */
static int message_added(chat_session *s, int failed, char *err, size_t errsz) {
    if (failed) {
        seterr(err, errsz, "out of memory");
        return CHAT_ERR_INTERNAL;
    }
    s->plan_dirty = 1;
    return CHAT_OK;
}

int chat_session_add_answer_thought(chat_session *s, const char *text, const char *reasoning,
                                    char *err, size_t errsz) {
    return message_added(s, chat_template_add_answer(&s->tmpl, text, reasoning) != 0, err,
                         errsz);
}

int chat_session_add_tool_calls(chat_session *s, const char *text, const char *reasoning,
                                const char *tool_calls, char *err, size_t errsz) {
    return message_added(
        s, chat_template_add_tool_calls(&s->tmpl, text, reasoning, tool_calls) != 0, err, errsz);
}

int chat_session_add_tool_result(chat_session *s, const char *tool_call_id, const char *content,
                                 char *err, size_t errsz) {
    return message_added(
        s, chat_template_add_tool_result(&s->tmpl, tool_call_id, content) != 0, err, errsz);
}

int chat_session_add_system(chat_session *s, const char *text, char *err, size_t errsz) {
    return message_added(s, chat_template_add_system(&s->tmpl, text) != 0, err, errsz);
}

int chat_session_check_render(chat_session *s, char *err, size_t errsz) {
    char *text = chat_template_render(&s->tmpl, s->o.params.system, s->o.params.think, 1, err,
                                      errsz);
    if (!text) return CHAT_ERR_INPUT;
    free(text);
    return CHAT_OK;
}

int chat_session_add_answer(chat_session *s, const char *text, char *err, size_t errsz) {
    return chat_session_add_answer_thought(s, text, NULL, err, errsz);
}

static int chunk_items(const chat_chunk *k) { return k->is_image ? 1 : k->n_tokens; }

static uint64_t chunk_item(const chat_chunk *k, int j) {
    if (!k->is_image) return chat_item_text(k->tokens[j]);
    return chat_item_image(k->item, k->n_tokens) | (k->item & CHAT_ITEM_FRAME);
}

int chat_session_plan_items(chat_session *s, uint64_t **out, int *n_out) {
    char err[256];
    if (plan_build(s, err, sizeof err)) return -1;
    int n = s->plan_base;
    for (int t = 0; t < s->n_pt; t++)
        for (int k = 0; k < s->pt[t].ch.n; k++)
            n += chunk_items(&s->pt[t].ch.v[k]);
    uint64_t *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    if (!v) return -1;
    memcpy(v, s->items, (size_t)s->plan_base * sizeof *v);
    int i = s->plan_base;
    for (int t = 0; t < s->n_pt; t++)
        for (int k = 0; k < s->pt[t].ch.n; k++)
            for (int j = 0; j < chunk_items(&s->pt[t].ch.v[k]); j++)
                v[i++] = chunk_item(&s->pt[t].ch.v[k], j);
    *out = v;
    *n_out = n;
    return 0;
}

/* Where feeding resumes: turn t, chunk k, token j (n_pt, 0, 0: nothing left). */
typedef struct cursor {
    int t, k, j;
} cursor;

/* The last item of the plan, as a cursor, and its positions (0 if the plan is empty). */
static int last_item(const chat_session *s, cursor *c) {
    for (int t = s->n_pt - 1; t >= 0; t--) {
        const chat_chunks *ch = &s->pt[t].ch;
        if (!ch->n) continue;
        const chat_chunk *k = &ch->v[ch->n - 1];
        *c = (cursor){t, ch->n - 1, k->is_image ? 0 : k->n_tokens - 1};
        return k->is_image ? k->n_tokens : 1;
    }
    return 0;
}

/* Walks the plan against items[plan_base..): how far it is the same. Image chunks that match
 * learn their rows from the item held. */
static cursor match(chat_session *s, int *i_out, llama_pos *pos_out) {
    int i = s->plan_base;
    llama_pos pos = *pos_out;
    for (int t = 0; t < s->n_pt; t++) {
        chat_chunks *ch = &s->pt[t].ch;
        for (int k = 0; k < ch->n; k++) {
            chat_chunk *c = &ch->v[k];
            for (int j = 0; j < chunk_items(c); j++) {
                if (!s->matching || i >= s->n_items || !chat_item_same(s->items[i], chunk_item(c, j))) {
                    *i_out = i;
                    *pos_out = pos;
                    return (cursor){t, k, j};
                }
                if (c->is_image && !c->n_tokens) c->n_tokens = chat_item_n_pos(s->items[i]);
                pos += chat_item_n_pos(s->items[i]);
                i++;
            }
        }
    }
    *i_out = i;
    *pos_out = pos;
    return (cursor){s->n_pt, 0, 0};
}

static int at_or_after(cursor a, cursor b) {
    return a.t != b.t ? a.t > b.t : a.k != b.k ? a.k > b.k : a.j >= b.j;
}

/* The image chunks at or after c whose rows are not set yet: fn(s, x, arg) on each. */
static int each_image_rest(chat_session *s, cursor c, int (*fn)(chat_session *, chat_chunk *,
                                                                void *), void *arg) {
    for (int t = c.t; t < s->n_pt; t++) {
        chat_chunks *ch = &s->pt[t].ch;
        for (int k = t == c.t ? c.k : 0; k < ch->n; k++) {
            chat_chunk *x = &ch->v[k];
            if (!x->is_image || x->rows) continue;
            int rc = fn(s, x, arg);
            if (rc) return rc;
        }
    }
    return 0;
}

typedef struct todo_list {
    plan_medium **v;
    int n, cap;
} todo_list;

/* Collects a chunk's medium when it is not encoded yet (once). -1 out of memory. */
static int collect(chat_session *s, chat_chunk *x, void *arg) {
    todo_list *l = arg;
    plan_medium *m = &s->pm[x->ref];
    if (m->e.rows) return 0;
    for (int i = 0; i < l->n; i++)
        if (l->v[i] == m) return 0;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 8;
        plan_medium **v = realloc(l->v, (size_t)cap * sizeof *v);
        if (!v) return -1;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = m;
    return 0;
}

static int point_at_rows(chat_session *s, chat_chunk *x, void *arg) {
    (void)arg;
    plan_medium *m = &s->pm[x->ref];
    x->rows = m->e.rows;
    x->n_tokens = m->e.n_rows;
    x->item = chat_item_image(x->item, m->e.n_rows);
    return 0;
}

/* Encodes the images at or after c that are not encoded yet, all in one call to the encoder
 * (g4v serve's contexts may encode them together, as they do the images of conversations that
 * arrive together). */
static int encode_rest(chat_session *s, cursor c, chat_feed_stats *st, char *err, size_t errsz) {
    todo_list l = {0};
    if (each_image_rest(s, c, collect, &l)) {
        free(l.v);
        seterr(err, errsz, "out of memory");
        return CHAT_ERR_INTERNAL;
    }
    int rc = chat_media_encode_all(s, l.v, l.n, err, errsz);
    for (int i = 0; i < l.n; i++)
        if (l.v[i]->e.rows) {
            st->encode_s += l.v[i]->stat.seconds;
            l.v[i]->stat.cache_hit ? st->images_cached++ : st->images_encoded++;
        }
    free(l.v);
    if (rc) return rc;
    return each_image_rest(s, c, point_at_rows, NULL);
}

/* Positions the plan still needs from c on. */
static int rest_positions(const chat_session *s, cursor c) {
    int n = 0;
    for (int t = c.t; t < s->n_pt; t++) {
        const chat_chunks *ch = &s->pt[t].ch;
        for (int k = t == c.t ? c.k : 0; k < ch->n; k++)
            n += ch->v[k].n_tokens - (t == c.t && k == c.k ? c.j : 0);
    }
    return n;
}

static void plan_counts(chat_session *s, cursor c, chat_feed_stats *st) {
    for (int t = 0; t < s->n_pt; t++) {
        st->text_tokens += s->pt[t].ch.n_text_tokens;
        for (int k = 0; k < s->pt[t].ch.n; k++) {
            const chat_chunk *x = &s->pt[t].ch.v[k];
            if (!x->is_image) continue;
            st->image_rows += x->n_tokens;
            if (!at_or_after((cursor){t, k, 0}, c) &&
                s->pm[x->ref].src.medium == FE_MEDIUM_IMAGE) {
                s->pm[x->ref].stat.reused = 1;
                s->pm[x->ref].stat.n_rows = x->n_tokens;
                s->pm[x->ref].stat.n_frames = 1;
                st->images_reused++;
            }
        }
    }
}

/* The plan is over: its media's stats are kept for chat_session_prefill's result. */
static void plan_done(chat_session *s) {
    free(s->fed_media);
    s->fed_media = NULL;
    s->n_fed_media = 0;
    if (s->n_pm && (s->fed_media = malloc((size_t)s->n_pm * sizeof *s->fed_media))) {
        for (int i = 0; i < s->n_pm; i++)
            s->fed_media[i] = s->pm[i].stat;
        s->n_fed_media = s->n_pm;
    }
    chat_plan_clear(s);
}

/* The plan is refused before the context changed: the messages added since the conversation was
 * last kept leave it (g4v chat's refused turn; g4v serve restarts per request anyway). */
static int plan_refused(chat_session *s, int rc) {
    plan_done(s);
    conversation_undo(s);
    s->turns = s->tmpl.n_msgs;
    return rc;
}

/* One call of an image's rows on the engine thread: rows from .. from+count-1, or the whole
 * image attended both ways. */
typedef struct image_piece {
    chat_session *s;
    const chat_chunk *x;
    int from, count;
    char *err;
    size_t errsz;
} image_piece;

static int decode_piece(void *arg) {
    image_piece *p = arg;
    chat_session *s = p->s;
    if (s->non_causal)
        return chat_decode_chunk(s->lctx, s->seq, p->x, 0, 1, s->n_batch, 0, &s->n_past, p->err,
                                 p->errsz);
    return chat_decode_image_rows(s->lctx, s->seq, p->x, p->from, p->count, s->n_batch,
                                  &s->n_past, p->err, p->errsz);
}

/* An image's rows, between the engine's steps (embeddings cannot share a call with tokens).
 * Attended both ways they are one call; causal, they go in pieces of what one step takes now
 * (chat_engine_piece: the whole image unless others are answering), and the others' steps go
 * between the pieces, so that their streams do not stop for a long image. */
static int decode_image(chat_session *s, const chat_chunk *x, char *err, size_t errsz) {
    image_piece p = {.s = s, .x = x, .err = err, .errsz = errsz};
    while (p.from < x->n_tokens) {
        p.count = s->non_causal ? x->n_tokens : chat_engine_piece(s->engine);
        if (p.count > x->n_tokens - p.from) p.count = x->n_tokens - p.from;
        int rc = chat_engine_call(s->engine, decode_piece, &p);
        if (rc) return rc;
        p.from += p.count;
    }
    return 0;
}

/* One chunk of the plan from its token `from` on: text in the engine's shared steps (the logits
 * of its last token into s->logits when logits_last), an image as decode_image says. */
static int decode_chunk(chat_session *s, const chat_chunk *x, int from, int logits_last,
                        char *err, size_t errsz) {
    if (x->is_image) {
        if (from) {
            seterr(err, errsz, "an image is decoded whole (from %d)", from);
            return -1;
        }
        return decode_image(s, x, err, errsz);
    }
    char msg[300];
    if (chat_engine_decode(s->engine, s->seq, x->tokens + from, x->n_tokens - from, s->n_past,
                           logits_last ? s->logits : NULL, msg, sizeof msg)) {
        seterr(err, errsz, "on the prompt text: %s", msg);
        return -1;
    }
    s->n_past += x->n_tokens - from;
    return 0;
}

/* FNV-1a over items[0..n) */
static uint64_t items_hash(const uint64_t *items, int n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = 0; i < n; i++) {
        h ^= items[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* The logits at the end of the prompt just fed, kept for the same prompt again. */
static void hold_logits(chat_session *s) {
    size_t nv = (size_t)llama_vocab_n_tokens(s->vocab);
    if (!s->held_logits && !(s->held_logits = malloc(nv * sizeof *s->held_logits))) {
        s->held_items = -1;
        return;
    }
    memcpy(s->held_logits, s->logits, nv * sizeof *s->held_logits);
    s->held_items = s->n_items;
    s->held_hash = items_hash(s->items, s->n_items);
}

static int feed(chat_session *s, chat_feed_stats *st, char *err, size_t errsz) {
    memset(st, 0, sizeof *st);
    int rc = plan_build(s, err, errsz);
    if (rc) return plan_refused(s, rc);
    for (int i = s->kept_media; i < s->n_pm; i++) /* the videos new since the last feed */
        if (s->pm[i].src.medium == FE_MEDIUM_VIDEO) {
            st->encode_s += s->pm[i].stat.seconds;
            s->pm[i].stat.cache_hit ? st->images_cached++ : st->images_encoded++;
        }
    llama_memory_t mem = llama_get_memory(s->lctx);
    llama_pos base_pos = 0;
    for (int i = 0; i < s->plan_base; i++)
        base_pos += chat_item_n_pos(s->items[i]);
    int i = 0;
    llama_pos pos = base_pos;
    cursor c = match(s, &i, &pos);
    if (c.t == s->n_pt && s->held_logits && s->held_items == i && i <= s->n_items &&
        items_hash(s->items, i) == s->held_hash) {
        /* all held, and it is the prompt last fed: its logits as they were computed then (a
         * decode of its last position alone would round differently, and a seeded answer
         * would not be the one the same request got before) */
        plan_counts(s, c, st);
        if (i < s->n_items) {
            chat_engine_lock(s->engine);
            llama_memory_seq_rm(mem, s->seq, pos, -1);
            chat_engine_unlock(s->engine);
            s->n_items = i;
        }
        s->n_past = pos;
        st->reused_pos = (int)(pos - base_pos);
        memcpy(s->logits, s->held_logits,
               (size_t)llama_vocab_n_tokens(s->vocab) * sizeof *s->logits);
        s->matching = 0;
        s->plan_base = s->n_items;
        plan_done(s);
        chat_conversation_keep(s);
        return CHAT_OK;
    }
    if (c.t == s->n_pt) { /* all held: the last item again, for the logits */
        cursor l;
        int n = last_item(s, &l);
        if (!n) {
            seterr(err, errsz, "nothing to feed");
            return plan_refused(s, CHAT_ERR_INTERNAL);
        }
        c = l;
        i--;
        pos -= n;
    }
    /* the images to decode first: a bad one refuses the prompt before the context changes */
    rc = encode_rest(s, c, st, err, errsz);
    if (rc) return plan_refused(s, rc);
    plan_counts(s, c, st);
    int need = rest_positions(s, c);
    if (pos + need + 1 > s->n_ctx) {
        seterr(err, errsz,
               "the prompt does not fit in the context: it needs %d more positions (%d text "
               "tokens and %d image rows in all) + 1 to answer, %d of %d are left (--ctx)",
               need, st->text_tokens, st->image_rows, s->n_ctx - (int)pos, s->n_ctx);
        return plan_refused(s, CHAT_ERR_INPUT);
    }
    if (i < s->n_items) { /* what differs goes */
        chat_engine_lock(s->engine);
        llama_memory_seq_rm(mem, s->seq, pos, -1);
        chat_engine_unlock(s->engine);
        s->n_items = i;
    }
    if (s->n_items < s->held_items) s->held_items = -1; /* decoded again from before its end */
    s->n_past = pos;
    st->reused_pos = (int)(pos - base_pos);
    int items0 = s->n_items;
    llama_pos past0 = pos;
    double t1 = fe_now_s();
    for (int t = c.t; t < s->n_pt; t++) {
        chat_chunks *ch = &s->pt[t].ch;
        for (int k = t == c.t ? c.k : 0; k < ch->n; k++) {
            chat_chunk *x = &ch->v[k];
            int from = t == c.t && k == c.k ? c.j : 0;
            if (decode_chunk(s, x, from, k == ch->n - 1, err, errsz)) goto fail;
            for (int j = from; j < chunk_items(x); j++)
                if (chat_items_push(s, chunk_item(x, j))) {
                    seterr(err, errsz, "out of memory");
                    goto fail;
                }
        }
    }
    st->prefill_s = fe_now_s() - t1;
    st->decoded_pos = (int)(s->n_past - past0);
    hold_logits(s);
    s->matching = 0;
    s->plan_base = s->n_items;
    plan_done(s);
    chat_conversation_keep(s);
    return CHAT_OK;
fail:
    chat_engine_lock(s->engine);
    llama_memory_seq_rm(mem, s->seq, past0, -1);
    chat_engine_unlock(s->engine);
    s->n_past = past0;
    s->n_items = items0;
    s->matching = 0;
    s->plan_base = s->n_items;
    plan_refused(s, 0);
    return CHAT_ERR_INTERNAL;
}

int chat_session_prompt(const chat_session *s, char **text, int32_t **ids, int *n_ids) {
    int n = 0;
    for (int i = 0; i < s->n_items; i++)
        n += chat_item_n_pos(s->items[i]);
    int32_t *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    size_t cap = 256, len = 0;
    char *t = malloc(cap);
    if (!v || !t) goto oom;
    t[0] = 0;
    int k = 0;
    for (int i = 0; i < s->n_items; i++) {
        uint64_t it = s->items[i];
        int rows = chat_item_is_text(it) ? 1 : chat_item_n_pos(it);
        for (int r = 0; r < rows; r++) {
            char piece[256];
            int m;
            if (chat_item_is_text(it)) {
                v[k] = chat_item_token(it);
                m = llama_token_to_piece(s->vocab, v[k], piece, (int32_t)sizeof piece - 1, 0,
                                         true);
                if (m < 0) m = 0;
            } else { /* the processor's placeholder ids for the rows */
                int frame = chat_item_is_frame(it);
                v[k] = frame ? s->vinfo.video_token_id : s->vinfo.image_token_id;
                m = snprintf(piece, sizeof piece, "%s", frame ? "<|video|>" : "<|image|>");
            }
            k++;
            if (len + (size_t)m + 1 > cap) {
                while (len + (size_t)m + 1 > cap) cap *= 2;
                char *t2 = realloc(t, cap);
                if (!t2) goto oom;
                t = t2;
            }
            memcpy(t + len, piece, (size_t)m);
            len += (size_t)m;
            t[len] = 0;
        }
    }
    *text = t;
    *ids = v;
    *n_ids = k;
    return 0;
oom:
    free(v);
    free(t);
    return -1;
}

int chat_session_feed(chat_session *s, chat_feed_stats *st, char *err, size_t errsz) {
    int rc = feed(s, st, err, errsz);
    /* refused: its media will not be decoded now (fed: chat_session_generate's first token) */
    if (rc) chat_media_fed(s);
    return rc;
}
