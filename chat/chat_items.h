/* chat_items.h - what a language-model context holds, as a list of items that can be compared
 * across requests, slots and server restarts (docs/CHAT.md "Prompt reuse"). An item is one
 * 64-bit value:
 *   a text token          CHAT_ITEM_TEXT | token id                    (one position)
 *   an image (or a frame)  a content hash with the top bit clear and the low 12 bits holding its
 *                          soft-token rows (one position per row, 1..4095); bit 12 set for a
 *                          video frame (its rows take <|video|> ids in the prompt, not <|image|>)
 * An image's hash covers what decides its rows: the file's bytes, the budget, and for a video
 * frame the video's bytes, its budget, frame count and the frame's index (chat_item_image). Two
 * items are the same when chat_item_same says so: an image item whose rows are not known yet
 * (low bits 0, before it is encoded) matches the same image with any row count. */
#ifndef G4V_CHAT_ITEMS_H
#define G4V_CHAT_ITEMS_H

#include <stdint.h>

#define CHAT_ITEM_TEXT 0x8000000000000000ull
#define CHAT_ITEM_ROWS_MASK 0xFFFull
#define CHAT_ITEM_FRAME 0x1000ull

static inline uint64_t chat_item_text(int32_t token) {
    return CHAT_ITEM_TEXT | (uint32_t)token;
}
static inline int chat_item_is_text(uint64_t item) { return (item & CHAT_ITEM_TEXT) != 0; }
static inline int32_t chat_item_token(uint64_t item) { return (int32_t)(uint32_t)item; }

/* An image item from a 64-bit content hash and its rows (0: not known yet). */
static inline uint64_t chat_item_image(uint64_t hash, int rows) {
    return (hash & ~CHAT_ITEM_TEXT & ~CHAT_ITEM_ROWS_MASK & ~CHAT_ITEM_FRAME) |
           ((uint64_t)rows & CHAT_ITEM_ROWS_MASK);
}
/* A video frame's item: an image item marked as a frame. */
static inline uint64_t chat_item_frame(uint64_t hash, int rows) {
    return chat_item_image(hash, rows) | CHAT_ITEM_FRAME;
}
static inline int chat_item_is_frame(uint64_t item) {
    return !(item & CHAT_ITEM_TEXT) && (item & CHAT_ITEM_FRAME);
}

/* Positions the item takes in the context: 1 for a token, the rows of an image (0 if not known). */
static inline int chat_item_n_pos(uint64_t item) {
    return chat_item_is_text(item) ? 1 : (int)(item & CHAT_ITEM_ROWS_MASK);
}

static inline int chat_item_same(uint64_t a, uint64_t b) {
    if (chat_item_is_text(a) || chat_item_is_text(b)) return a == b;
    return (a & ~CHAT_ITEM_ROWS_MASK) == (b & ~CHAT_ITEM_ROWS_MASK);
}

/* Items of a and b that are the same, from the start. */
static inline int chat_items_common(const uint64_t *a, int na, const uint64_t *b, int nb) {
    int i = 0;
    while (i < na && i < nb && chat_item_same(a[i], b[i]))
        i++;
    return i;
}

#endif
