/* Program builds in worker processes (backend.h: ttc_program_prebuild).
 *
 * NVIDIA's OpenCL compiles about one program at a time per process: an engine split into 16
 * parts built by 16 threads took 10.1 s where the parts' build times summed to ~100 s (H100,
 * ResNet-50, bench/RESULTS.md "Cold compile, session 6"), and the tuner's candidate programs
 * serialise the same way. Separate processes each have their own driver instance, so the
 * sources still missing from the on-disk binary cache are handed to `procs` workers: each is
 * the same Python interpreter loading only this extension module (no torch import), opening
 * the same device (same index, same environment, checked by name and driver) and building its
 * share into the cache. The caller's builds then load binaries.
 *
 * Job file (text, one field per line): "TTCJOB1", device index (a hint: the worker finds the
 * device by name and driver), device name, driver, cache
 * directory, options, count, then one source file per line. Nothing here can fail the caller:
 * a worker that cannot start, crashes or builds nothing leaves those sources to the caller's
 * own builds, which report real errors. Workers past the time limit are killed. */
#include "backend_impl.h"
#include "../target/knobs.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>


#define MAX_PROCS 32
#define WORKER_LIMIT_S 600.0

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *worker_python, *worker_module;
static int64_t n_prebuilt;
static double prebuild_s;
static int64_t n_failed;           /* workers that exited with an error, crashed or were killed */
static char last_error[1024];      /* the start of the last failed worker's output */

const char *ttc_build_procs_last_error(void) { return last_error; }

/* Keeps the start of worker w's log as the last error (under lock). */
static void note_failure(const char *tmp, int32_t w, const char *how) {
    char *path = ttc_strfmt("%s/log-%d.txt", tmp, w);
    FILE *f = path ? fopen(path, "r") : NULL;
    char text[768] = "";
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    text[n] = 0;
    if (f) fclose(f);
    free(path);
    pthread_mutex_lock(&lock);
    n_failed++;
    snprintf(last_error, sizeof last_error, "build worker %s: %s", how, text);
    pthread_mutex_unlock(&lock);
}

void ttc_build_procs_set_worker(const char *python, const char *module_path) {
    pthread_mutex_lock(&lock);
    free(worker_python);
    free(worker_module);
    worker_python = python && *python ? ttc_strdup(python) : NULL;
    worker_module = module_path && *module_path ? ttc_strdup(module_path) : NULL;
    pthread_mutex_unlock(&lock);
}

void ttc_build_procs_stats_add(ttc_program_stats *acc) {
    pthread_mutex_lock(&lock);
    acc->prebuilt += n_prebuilt;
    acc->prebuild_s += prebuild_s;
    acc->prebuild_failed += n_failed;
    pthread_mutex_unlock(&lock);
}

static bool one_line(const char *s) { return s && !strchr(s, '\n') && !strchr(s, '\r'); }

static bool write_file(const char *path, const char *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fwrite(data, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

/* The Python side of a worker: load the extension from its file without importing the package
 * (which imports torch) and run the job. */
static const char WORKER_CODE[] =
    "import sys, importlib.util as u\n"
    "s = u.spec_from_file_location('torchtrt_c._C', sys.argv[1])\n"
    "m = u.module_from_spec(s)\n"
    "s.loader.exec_module(m)\n"
    "sys.exit(m._build_worker(sys.argv[2]))\n";

void ttc_program_prebuild(ttc_device *d, const char *const *srcs, int32_t n, const char *options,
                          const char *cache_dir, int32_t procs, int64_t bytes_per_proc) {
    if (!d || n < 2 || procs < 2 || !d->be->program_cached || !ttc_target_keep_binaries(&d->facts)) return;
    if (!options) options = "";
    ttc_device *const *devs;
    int32_t nd = 0, idx = -1;
    if (ttc_device_list(&devs, &nd) != TTC_OK) { ttc_clear_error(); return; }
    for (int32_t i = 0; i < nd; i++)
        if (devs[i] == d) idx = i;
    char *dir = ttc_cache_dir(cache_dir);
    pthread_mutex_lock(&lock);
    char *python = worker_python ? ttc_strdup(worker_python) : NULL;
    char *module = worker_module ? ttc_strdup(worker_module) : NULL;
    pthread_mutex_unlock(&lock);
    int32_t *todo = ttc_calloc((size_t)n, sizeof(int32_t));
    char tmp[] = "/tmp/ttc-build-XXXXXX";
    bool have_tmp = false;
    int32_t nt = 0, np = 0, made = 0;
    pid_t pids[MAX_PROCS];
    char *jobs[MAX_PROCS] = {0};
    char **files = NULL;
    if (idx < 0 || !dir || !python || !module || !todo || !one_line(dir) || !one_line(options) ||
        !one_line(d->facts.name) || !one_line(d->facts.driver))
        goto done;
    for (int32_t i = 0; i < n; i++)
        if (srcs[i] && !d->be->program_cached(d, srcs[i], options, dir)) todo[nt++] = i;
    if (nt < 2) goto done;
    /* a worker costs an interpreter and a driver context (~0.5 s on the H100) before it
     * compiles anything: one per bytes_per_proc of source at most, none below two */
    size_t total = 0;
    for (int32_t i = 0; i < nt; i++) total += strlen(srcs[todo[i]]);
    if (bytes_per_proc > 0 && (int64_t)(total / (size_t)bytes_per_proc) < procs) procs = (int32_t)(total / (size_t)bytes_per_proc);
    if (procs < 2) goto done;
    if (!mkdtemp(tmp)) goto done;
    have_tmp = true;
    files = ttc_calloc((size_t)nt, sizeof(char *));
    if (!files) goto done;
    /* the longest sources first, each to the worker with the least source so far */
    for (int32_t i = 1; i < nt; i++) {
        int32_t c = todo[i], j = i;
        size_t len = strlen(srcs[c]);
        while (j > 0 && strlen(srcs[todo[j - 1]]) < len) { todo[j] = todo[j - 1]; j--; }
        todo[j] = c;
    }
    np = procs < nt ? procs : nt;
    if (np > MAX_PROCS) np = MAX_PROCS;
    size_t load[MAX_PROCS] = {0};
    FILE *jf[MAX_PROCS] = {0};
    int32_t count[MAX_PROCS] = {0};
    int32_t *owner = ttc_calloc((size_t)nt, sizeof(int32_t));
    if (!owner) goto done;
    for (int32_t i = 0; i < nt; i++) {
        int32_t best = 0;
        for (int32_t w = 1; w < np; w++)
            if (load[w] < load[best]) best = w;
        owner[i] = best;
        count[best]++;
        load[best] += strlen(srcs[todo[i]]);
        files[i] = ttc_strfmt("%s/src-%d.cl", tmp, i);
        if (!files[i] || !write_file(files[i], srcs[todo[i]], strlen(srcs[todo[i]]))) { free(owner); goto done; }
    }
    for (int32_t w = 0; w < np; w++) {
        jobs[w] = ttc_strfmt("%s/job-%d.txt", tmp, w);
        jf[w] = jobs[w] ? fopen(jobs[w], "w") : NULL;
        if (jf[w]) fprintf(jf[w], "TTCJOB1\n%d\n%s\n%s\n%s\n%s\n%d\n", idx, d->facts.name, d->facts.driver, dir, options, count[w]);
    }
    for (int32_t i = 0; i < nt; i++)
        if (jf[owner[i]]) fprintf(jf[owner[i]], "%s\n", files[i]);
    free(owner);
    bool jobs_ok = true;
    for (int32_t w = 0; w < np; w++) {
        if (!jf[w] || fclose(jf[w]) != 0) jobs_ok = false;
        jf[w] = NULL;
    }
    if (!jobs_ok) goto done;
    double t0 = ttc_now_s();
    /* workers see the settings code set (torchtrt_c.settings.override) as their environment */
    char **env = ttc_knob_environ();
    for (int32_t w = 0; env && w < np; w++) {
        char *log = ttc_strfmt("%s/log-%d.txt", tmp, w);
        posix_spawn_file_actions_t fa;
        if (!log || posix_spawn_file_actions_init(&fa) != 0) { free(log); break; }
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        posix_spawn_file_actions_adddup2(&fa, 1, 2);
        char *argv[] = {python, (char *)"-S", (char *)"-c", (char *)WORKER_CODE, module, jobs[w], NULL};
        pid_t pid;
        if (posix_spawn(&pid, python, &fa, NULL, argv, env) == 0) pids[made++] = pid;
        posix_spawn_file_actions_destroy(&fa);
        free(log);
    }
    ttc_knob_environ_free(env);
    /* wait for all; past the limit, kill what is left (its sources get built by the caller) */
    int32_t left = made;
    bool alive[MAX_PROCS];
    for (int32_t w = 0; w < made; w++) alive[w] = true;
    while (left > 0) {
        for (int32_t w = 0; w < made; w++) {
            if (!alive[w]) continue;
            int st;
            pid_t r = waitpid(pids[w], &st, WNOHANG);
            if (r == pids[w] || (r < 0 && errno != EINTR)) {
                alive[w] = false;
                left--;
                if (r < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
                    note_failure(tmp, w, r < 0 ? "lost" : WIFEXITED(st) ? "failed" : "crashed");
            }
        }
        if (left == 0) break;
        if (ttc_now_s() - t0 > WORKER_LIMIT_S) {
            for (int32_t w = 0; w < made; w++)
                if (alive[w]) {
                    kill(pids[w], SIGKILL);
                    waitpid(pids[w], NULL, 0);
                    alive[w] = false;
                    note_failure(tmp, w, "killed at the time limit");
                }
            break;
        }
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
    int64_t built = 0;
    for (int32_t i = 0; i < nt; i++)
        if (d->be->program_cached(d, srcs[todo[i]], options, dir)) built++;
    pthread_mutex_lock(&lock);
    n_prebuilt += built;
    prebuild_s += ttc_now_s() - t0;
    pthread_mutex_unlock(&lock);
done:
    if (have_tmp) {
        for (int32_t i = 0; files && i < nt; i++) {
            if (files[i]) unlink(files[i]);
            free(files[i]);
        }
        for (int32_t w = 0; w < np; w++) {
            char *log = ttc_strfmt("%s/log-%d.txt", tmp, w);
            if (log) unlink(log);
            free(log);
            if (jobs[w]) unlink(jobs[w]);
        }
        rmdir(tmp);
    }
    for (int32_t w = 0; w < MAX_PROCS; w++) free(jobs[w]);
    free(files);
    free(todo);
    free(dir);
    free(python);
    free(module);
}

/* ---- the worker ---- */
static char *read_line(FILE *f) {
    char buf[4096];
    if (!fgets(buf, sizeof buf, f)) return NULL;
    size_t n = strlen(buf);
    if (n && buf[n - 1] == '\n') buf[--n] = 0;
    return ttc_strdup(buf);
}

static char *read_all(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *data = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (data = malloc((size_t)n + 1))) {
            if (fread(data, 1, (size_t)n, f) != (size_t)n) { free(data); data = NULL; }
            else data[n] = 0;
        }
    }
    fclose(f);
    return data;
}

int ttc_build_procs_worker(const char *job_path) {
    FILE *f = fopen(job_path, "r");
    if (!f) { fprintf(stderr, "build worker: cannot open %s\n", job_path); return 2; }
    char *fields[7] = {0};
    int rc = 2;
    for (int i = 0; i < 7; i++)
        if (!(fields[i] = read_line(f))) goto out;
    if (strcmp(fields[0], "TTCJOB1")) goto out;
    int idx = atoi(fields[1]), count = atoi(fields[6]);
    ttc_device *const *devs;
    int32_t nd = 0;
    if (ttc_device_list(&devs, &nd) != TTC_OK) {
        fprintf(stderr, "build worker: no devices: %s\n", ttc_last_error());
        goto out;
    }
    /* the same device: by name and driver (indices differ between processes where discovery
     * depends on the process, e.g. PoCL's companion device), the index breaking ties */
    ttc_device *d = NULL;
    for (int32_t i = 0; i < nd; i++) {
        bool same = !strcmp(devs[i]->facts.name, fields[2]) && !strcmp(devs[i]->facts.driver, fields[3]);
        if (same && (!d || i == idx)) d = devs[i];
    }
    if (!d) {
        fprintf(stderr, "build worker: no device %s (%s) among %d\n", fields[2], fields[3], (int)nd);
        goto out;
    }
    rc = 0;
    for (int i = 0; i < count; i++) {
        char *path = read_line(f), *src = path ? read_all(path) : NULL;
        ttc_program *p = NULL;
        if (!src || ttc_program_build(d, src, fields[5], fields[4], &p) != TTC_OK) {
            fprintf(stderr, "build worker: %s: %s\n", path ? path : "(missing line)", src ? ttc_last_error() : "unreadable");
            ttc_clear_error();
            rc = 1;
        }
        ttc_program_free(p);
        free(src);
        free(path);
    }
out:
    for (int i = 0; i < 7; i++) free(fields[i]);
    fclose(f);
    return rc;
}
