/* auth.h - who may call the service (docs/SERVICE.md, "Security"): the API key that every
 * endpoint but /health requires as `Authorization: Bearer KEY`, where it comes from (--api-key,
 * --api-key-file, G4V_API_KEY), and the rule that a server reachable from other machines needs
 * one unless --insecure-no-auth says otherwise. */
#ifndef G4V_SERVICE_CORE_AUTH_H
#define G4V_SERVICE_CORE_AUTH_H

#include <microhttpd.h>
#include <stddef.h>

typedef struct g4v_service server;
typedef struct request request;

/* The environment variable that may hold the key (so that it is not in `ps`), and the longest
 * key accepted: keys are kept in a buffer of this size so that checking one takes the same time
 * whatever the lengths of the key and of the token sent. */
#define SVC_API_KEY_ENV "G4V_API_KEY"
#define SVC_KEY_MAX 512

/* Reads the key from --api-key, --api-key-file or G4V_API_KEY into the server (none: requests
 * need no key). 0, or G4V_SERVICE_ERR_USAGE with the reason printed. */
int svc_auth_setup(server *s);
/* Forgets the key (its bytes are overwritten before they are freed). */
void svc_auth_free(server *s);
/* Whether the server may listen on an address of this kind (loopback: this machine only): a
 * non-loopback address needs a key or --insecure-no-auth. 0 ok (with a warning where it is
 * reachable without a key), -1 refused (printed, saying what to do). */
int svc_auth_may_listen(const server *s, int loopback, const char *addr);
/* 1 if the request may go on: no key is set, or its Authorization header carries the key. */
int svc_auth_allows(const server *s, struct MHD_Connection *c);
/* The answer to a request without the key: 401, WWW-Authenticate: Bearer, and the same body
 * whatever was wrong (missing header, other scheme, wrong key). */
enum MHD_Result svc_auth_refuse(request *q);

/* 1 if got[0..glen) equals the key, its first klen bytes of key[SVC_KEY_MAX] (zero after them),
 * and klen > 0. All SVC_KEY_MAX bytes are compared whatever the first difference and whatever
 * the lengths, so the time says nothing of where a guess went wrong nor of the key's length
 * (exposed for tests/service/test_auth_compare.c). */
int svc_key_equal(const unsigned char key[SVC_KEY_MAX], size_t klen, const unsigned char *got,
                  size_t glen);

#endif
