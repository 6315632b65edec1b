/*
 * A tiny C test harness: CHECK records a failure with file:line and a message and goes
 * on; TEST_MAIN runs the listed tests and prints "N passed, N failed".
 *
 *   static void test_add(void) { CHECK(1 + 1 == 2, "got %d", 1 + 1); }
 *   TEST_MAIN(test_add)
 */
#ifndef TTC_CTEST_H
#define TTC_CTEST_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int ctest_failures_in_test;
static int ctest_passed, ctest_failed;

#define CHECK(cond, ...)                                                               \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            ctest_failures_in_test++;                                                  \
            fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond);   \
            fprintf(stderr, " " __VA_ARGS__);                                          \
            fprintf(stderr, "\n");                                                     \
        }                                                                              \
    } while (0)

#define CHECK_OK(expr)                                                                 \
    do {                                                                               \
        ttc_status _s = (expr);                                                        \
        CHECK(_s == TTC_OK, "%s -> %s: %s", #expr, ttc_status_name(_s), ttc_last_error()); \
    } while (0)

static inline void ctest_run(const char *name, void (*fn)(void)) {
    ctest_failures_in_test = 0;
    fn();
    if (ctest_failures_in_test) { ctest_failed++; fprintf(stderr, "FAIL %s\n", name); }
    else { ctest_passed++; printf("ok   %s\n", name); }
}

#define CTEST_RUN(fn) ctest_run(#fn, fn);
#define TEST_MAIN(...)                                                                 \
    int main(void) {                                                                   \
        void (*fns[])(void) = {__VA_ARGS__};                                           \
        const char *names = #__VA_ARGS__;                                              \
        size_t n = sizeof fns / sizeof fns[0];                                         \
        char buf[4096]; strncpy(buf, names, sizeof buf - 1); buf[sizeof buf - 1] = 0;  \
        char *save = NULL, *tok = strtok_r(buf, ", \n", &save);                        \
        for (size_t i = 0; i < n; i++) {                                               \
            ctest_run(tok ? tok : "?", fns[i]);                                        \
            tok = strtok_r(NULL, ", \n", &save);                                       \
        }                                                                              \
        printf("%d passed, %d failed\n", ctest_passed, ctest_failed);                  \
        return ctest_failed ? 1 : 0;                                                   \
    }
#endif
