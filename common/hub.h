/* hub.h - the Hugging Face Hub client of the front ends (`g4v pull`, `hf:` model names): a
 * repository's files fetched over HTTP (libcurl) the way huggingface_hub fetches them, whole
 * files into the standard Hugging Face cache, or only the vision tower of a safetensors
 * checkpoint into g4v's own cache (docs/GUIDE.md "Models by name").
 *
 * Whole files (hub_pull with HUB_WHOLE, a GGUF repo, a repo that is no checkpoint) go to
 * $HF_HUB_CACHE (else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
 * ~/.cache/huggingface/hub) as huggingface_hub lays them out: models--ORG--NAME/blobs/ETAG,
 * snapshots/COMMIT/FILE -> ../../blobs/ETAG, refs/REVISION. A blob is written as
 * blobs/ETAG.incomplete (resumed with Range after a drop or Ctrl-C), checked against the size
 * and, for LFS files, the sha256 the Hub lists, and only then renamed into place, under a lock
 * per blob (.locks/models--ORG--NAME/ETAG.lock) so that concurrent pulls give one copy.
 *
 * Vision only (the default for a safetensors checkpoint): the config files whole, each weight
 * file's safetensors header (two Range requests), then only the byte ranges of the vision
 * tensors (names starting vision_tower., vision_embedder. or embed_vision., with or without
 * "model."; adjacent ranges merged into one request), written as a vision-only checkpoint (the
 * same shard names, their headers cut to the vision tensors, a cut index) in
 * models--ORG--NAME/partial/COMMIT of $G4V_HUB_CACHE (else $XDG_CACHE_HOME/g4v/hub, else
 * ~/.cache/g4v/hub), under a lock (partial/COMMIT.lock), renamed to models--ORG--NAME/vision/COMMIT
 * when it is complete; never into the Hugging Face cache, whose readers would take the cut files
 * for whole ones. An interrupted vision-only pull resumes too: each cut shard holds its tensors'
 * bytes in order, so its length says where the next pull of that commit continues (hub_vision.c).
 *
 * Environment, as huggingface_hub reads it: HF_ENDPOINT (default https://huggingface.co),
 * HF_TOKEN, else the file HF_TOKEN_PATH, else $HF_HOME/token (what `hf auth login` writes);
 * HF_HUB_OFFLINE=1 refuses every request. The token goes only to the endpoint's own scheme, host
 * and port (the Hub redirects downloads to a CDN host, which never sees it) and is never printed.
 * Every answer is hostile input: docs/LIMITS.md "Hub answers".
 */
#ifndef G4V_HUB_H
#define G4V_HUB_H

#include <stddef.h>
#include <stdint.h>

#define HUB_PATH_MAX 4096

/* Results of hub_pull and hub_find_local. */
enum {
    HUB_OK = 0,
    HUB_ERR_USAGE,     /* a malformed repo id or revision */
    HUB_ERR_OFFLINE,   /* HF_HUB_OFFLINE is set and the model is not on disk */
    HUB_ERR_AUTH,      /* 401/403: gated or private */
    HUB_ERR_NOT_FOUND, /* 404: no such repo, revision or file */
    HUB_ERR_NET,       /* the connection failed, or retries ran out */
    HUB_ERR_INTEGRITY, /* an answer that contradicts itself or the listing (sizes, sha256, names) */
    HUB_ERR_DISK,      /* cannot write the cache (disk full, permissions) */
    HUB_ERR_NOMEM
};

/* hub_opts.mode */
enum {
    HUB_AUTO = 0,   /* vision only for a safetensors checkpoint, else every file */
    HUB_WHOLE = 1,  /* every file (of the quantization, for a GGUF repo given one) */
    HUB_VISION = 2  /* vision only; an error for a repo that is no safetensors checkpoint */
};

/* One progress report: a file started, moved on, or finished. */
typedef struct hub_progress {
    const char *file;       /* the repo path of the file */
    uint64_t file_done, file_total;
    uint64_t done, total;   /* over every byte this pull fetches */
    int event;              /* 0 progress, 1 file started, 2 file done, 3 file already there */
} hub_progress;

typedef struct hub_opts {
    const char *repo;     /* "org/name" */
    const char *revision; /* branch, tag or commit; NULL or "" for "main" */
    int mode;             /* HUB_AUTO, HUB_WHOLE, HUB_VISION */
    const char *quant;    /* a GGUF repo: only the .gguf files of this quantization (and the
                             mmproj); NULL: every file */
    void (*progress)(void *user, const hub_progress *p); /* NULL: none (called ~10 times/s) */
    void *user;
} hub_opts;

typedef struct hub_result {
    char commit[41];
    char path[HUB_PATH_MAX]; /* the snapshot folder (whole) or the vision-only checkpoint */
    int vision_only;
    int files, files_reused;
    uint64_t fetched;        /* bytes transferred now */
    uint64_t wanted;         /* bytes of the result (vision only: the cut files) */
    uint64_t whole;          /* bytes of the whole repository at that commit */
} hub_result;

/* Fetches o->repo at o->revision. HUB_OK with r filled, else an HUB_ERR_* with a message in err
 * that says what to do (and never holds the token). */
int hub_pull(const hub_opts *o, hub_result *r, char *err, size_t ecap);

/* A vision-only checkpoint of repo at revision already in g4v's hub cache, without the network:
 * 1 with its folder in out (and the commit in commit[41] when not NULL), else 0. */
int hub_find_vision(const char *repo, const char *revision, char *out, size_t cap, char *commit);

/* 1 when HF_HUB_OFFLINE asks for no network (1, ON, YES, TRUE in any case). */
int hub_offline(void);

/* "hf:ORG/NAME[@REV][:QUANT]" into its parts (quant may be NULL when not wanted: then a ":" is
 * an error). 1 if value starts with "hf:" and is well formed; 0 if it does not start with
 * "hf:"; -1 (the reason in err) if it does but is malformed. */
int hub_parse_name(const char *value, char *repo, size_t rcap, char *rev, size_t vcap,
                   char *quant, size_t qcap, char *err, size_t ecap);

#endif
