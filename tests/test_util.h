/* test_util.h - a minimal assertion kit for the C tests: CHECK records a failure and goes on,
 * REQUIRE stops the test function; test_summary() prints "N passed, N failed" and gives the
 * exit status. */
#ifndef G4V_TEST_UTIL_H
#define G4V_TEST_UTIL_H

#include <stdio.h>
#include <string.h>

static int tu_passed, tu_failed;

#define CHECK(cond)                                                                            \
    do {                                                                                       \
        if (cond) {                                                                            \
            tu_passed++;                                                                       \
        } else {                                                                               \
            tu_failed++;                                                                       \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);           \
        }                                                                                      \
    } while (0)

#define CHECK_MSG(cond, ...)                                                                   \
    do {                                                                                       \
        if (cond) {                                                                            \
            tu_passed++;                                                                       \
        } else {                                                                               \
            tu_failed++;                                                                       \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);           \
            fprintf(stderr, __VA_ARGS__);                                                      \
            fputc('\n', stderr);                                                               \
        }                                                                                      \
    } while (0)

#define REQUIRE(cond)                                                                          \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            tu_failed++;                                                                       \
            fprintf(stderr, "%s:%d: REQUIRE failed: %s\n", __FILE__, __LINE__, #cond);         \
            return;                                                                            \
        }                                                                                      \
        tu_passed++;                                                                           \
    } while (0)

/* CHECK that haystack contains needle (for error-message assertions). */
#define CHECK_CONTAINS(haystack, needle)                                                       \
    CHECK_MSG(strstr((haystack), (needle)) != NULL, "\"%s\" does not contain \"%s\"",          \
              (haystack), (needle))

static inline int test_summary(const char *name) {
    printf("%s: %d passed, %d failed\n", name, tu_passed, tu_failed);
    return tu_failed ? 1 : 0;
}

#endif
