/* fuzz_hub_header.c - the input is a safetensors file as the Hub would serve it, seen the way a
 * vision-only `g4v pull` sees it (common/hub_vision.c): its listed size is the input's
 * size, its 8-byte header length is checked by hub_st_length, the header by hub_st_parse (both
 * common/hub_parse.h), and the cut header written for the vision tensors by
 * hub_st_cut_header. No network: the parser only. Checks: a refusal is HUB_ERR_INTEGRITY (or
 * HUB_ERR_NOMEM) with a message; an accepted header lies inside the file (at most HUB_MAX_HEADER),
 * its vision tensors are vision names, unique, sorted, not overlapping, inside the data section
 * (every byte of each range is read from the input, so ASan sees a range past the file), and
 * placed back to back in the cut file; the cut header is a multiple of 8 bytes and, parsed as the
 * header of the cut file, gives the same tensors in the same order at the same places, and cuts
 * to the same bytes again (a resumed pull compares it byte for byte). docs/LIMITS.md
 * "Hub answers". */
#include "fuzz_common.h"
#include "hub_internal.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check_refusal(int rc, const char *err) {
    FZ_ASSERT(rc == HUB_ERR_INTEGRITY || rc == HUB_ERR_NOMEM, "refusal status %d", rc);
    FZ_ASSERT(err[0], "a refusal without a message (status %d)", rc);
}

static const char *field(const hub_tensor *t, const char *key, char *buf, size_t cap) {
    char *s = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(t->item, key));
    snprintf(buf, cap, "%s", s ? s : "(none)");
    free(s);
    return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[2048] = "";
    uint64_t hlen = 0;
    uint8_t zero[8] = {0};
    int rc = hub_st_length(size >= 8 ? data : zero, "model.safetensors", size, &hlen, err,
                           sizeof err);
    if (rc) {
        check_refusal(rc, err);
        return 0;
    }
    FZ_ASSERT(size >= 8 && hlen <= size - 8 && hlen <= HUB_MAX_HEADER, "header length %llu",
              (unsigned long long)hlen);
    /* the header alone in a buffer of exactly its size, as the client holds it */
    char *text = malloc(hlen ? hlen : 1);
    FZ_ASSERT(text, "out of memory");
    memcpy(text, data + 8, hlen);
    hub_st s;
    rc = hub_st_parse(&s, "model.safetensors", size, text, hlen, err, sizeof err);
    free(text);
    if (rc) {
        check_refusal(rc, err);
        hub_st_free(&s);
        return 0;
    }
    const uint64_t dsize = size - 8 - hlen;
    const uint8_t *dsec = data + 8 + hlen;
    uint64_t sum = 0;
    for (int i = 0; i < s.nt; i++) {
        const hub_tensor *t = &s.t[i];
        FZ_ASSERT(hub_is_vision_tensor(t->name), "%s is no vision tensor", t->name);
        FZ_ASSERT(t->begin <= t->end && t->end <= dsize, "%s: [%llu, %llu) of %llu", t->name,
                  (unsigned long long)t->begin, (unsigned long long)t->end,
                  (unsigned long long)dsize);
        FZ_ASSERT(!i || s.t[i - 1].end <= t->begin, "%s overlaps %s", t->name, s.t[i - 1].name);
        FZ_ASSERT(t->dst == sum, "%s at %llu in the cut file, not %llu", t->name,
                  (unsigned long long)t->dst, (unsigned long long)sum);
        for (int j = 0; j < i; j++)
            FZ_ASSERT(strcmp(t->name, s.t[j].name), "%s twice", t->name);
        fz_touch(dsec + t->begin, (size_t)(t->end - t->begin));
        sum += t->end - t->begin;
    }
    FZ_ASSERT(sum == s.bytes, "%llu vision bytes, %llu counted", (unsigned long long)s.bytes,
              (unsigned long long)sum);
    uint64_t hl = 0;
    char *cut = hub_st_cut_header(&s, &hl);
    FZ_ASSERT(cut, "no cut header");
    FZ_ASSERT(hl % 8 == 0 && strlen(cut) == hl, "cut header of %llu bytes",
              (unsigned long long)hl);
    /* the cut file's header, parsed as the client parses one: the same tensors, back to back */
    hub_st c;
    rc = hub_st_parse(&c, "cut.safetensors", 8 + hl + s.bytes, cut, hl, err, sizeof err);
    FZ_ASSERT(rc == HUB_OK, "the cut header is refused: %s", err);
    FZ_ASSERT(c.nt == s.nt && c.bytes == s.bytes, "%d tensors cut, %d parsed back", s.nt, c.nt);
    for (int i = 0; i < s.nt; i++) {
        char a[4096], b[4096];
        FZ_ASSERT(!strcmp(c.t[i].name, s.t[i].name), "tensor %d: %s, was %s", i, c.t[i].name,
                  s.t[i].name);
        FZ_ASSERT(c.t[i].begin == s.t[i].dst && c.t[i].dst == s.t[i].dst &&
                      c.t[i].end - c.t[i].begin == s.t[i].end - s.t[i].begin,
                  "%s moved", s.t[i].name);
        FZ_ASSERT(!strcmp(field(&c.t[i], "dtype", a, sizeof a),
                          field(&s.t[i], "dtype", b, sizeof b)),
                  "%s: dtype %s, was %s", s.t[i].name, a, b);
        FZ_ASSERT(!strcmp(field(&c.t[i], "shape", a, sizeof a),
                          field(&s.t[i], "shape", b, sizeof b)),
                  "%s: shape %s, was %s", s.t[i].name, a, b);
    }
    uint64_t hl2 = 0;
    char *cut2 = hub_st_cut_header(&c, &hl2);
    FZ_ASSERT(cut2 && hl2 == hl && !memcmp(cut, cut2, hl), "cutting the cut header changes it");
    free(cut2);
    free(cut);
    hub_st_free(&c);
    hub_st_free(&s);
    return 0;
}
