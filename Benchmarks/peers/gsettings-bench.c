// The GSettings side of prefs-bench's coalescing rows: a burst of g_settings_set_int calls of
// one key, each timed (the call returns before any I/O: the backend queues the change), then
// g_settings_sync(), which returns when the backend has handed every queued change on (for
// dconf: when dconf-service has answered each change it was sent, after writing its database).
//
// usage: gsettings-bench N
//   Sets the int key "k0" of the schema org.prefsbench.Burst (11 int keys, path
//   /org/prefsbench/burst/) N times, then syncs. The schema is compiled by build.sh into the
//   folder prefs-bench passes as GSETTINGS_SCHEMA_DIR. Run it with XDG_CONFIG_HOME and
//   XDG_RUNTIME_DIR pointing to throwaway folders (prefs-bench does, under dbus-run-session with
//   GSETTINGS_BACKEND=dconf), never on a user's real configuration.
// Output: one line "MEDIAN_NS P99_NS SYNC_NS REPLACEMENTS LAST_NS BACKEND": the median and 99th
// percentile of one g_settings_set_int call; the time of the g_settings_sync() after the last
// call; how many times the backend's file was replaced (renamed into place, seen by inotify)
// from the first call of the burst until 300 ms after the sync (a thread reads the events as they
// come); the time from the return of
// the last call to the last of those replacements (-1 when there was none); the backend's type
// (DConfSettingsBackend: the database $XDG_CONFIG_HOME/dconf/user; GKeyfileSettingsBackend:
// $XDG_CONFIG_HOME/glib-2.0/settings/keyfile; anything else writes no file).
// Built by Benchmarks/peers/build.sh when gio-2.0 is installed (libglib2.0-dev).
#define G_SETTINGS_ENABLE_BACKEND
#include <gio/gio.h>
#include <gio/gsettingsbackend.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int compare_doubles(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/// What the watcher thread saw: IN_MOVED_TO events of the backend's file name.
static struct {
    int fd;
    const char *name;
    atomic_int count;
    _Atomic int64_t last;
} watched;

/// Reads the inotify events as they arrive (so the kernel never merges two unread identical
/// events), counting each IN_MOVED_TO of the watched name and recording its arrival time.
static void *watch_replacements(void *unused) {
    (void)unused;
    char buffer[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    for (;;) {
        const ssize_t length = read(watched.fd, buffer, sizeof buffer);
        if (length <= 0) {
            if (length < 0 && errno == EINTR) continue;
            return NULL;
        }
        const int64_t arrived = now_ns();
        for (char *at = buffer; at < buffer + length;) {
            const struct inotify_event *event = (const struct inotify_event *)at;
            if ((event->mask & IN_MOVED_TO) && event->len > 0 && strcmp(event->name, watched.name) == 0) {
                atomic_store(&watched.last, arrived);
                atomic_fetch_add(&watched.count, 1);
            }
            at += sizeof(struct inotify_event) + event->len;
        }
    }
}

int main(int argc, char **argv) {
    const long n = argc == 2 ? atol(argv[1]) : 0;
    if (n <= 0) {
        fprintf(stderr, "usage: gsettings-bench N (N > 0)\n");
        return 2;
    }
    const char *config = g_get_user_config_dir();
    GSettings *settings = g_settings_new("org.prefsbench.Burst");
    GSettingsBackend *backend = g_settings_backend_get_default();
    const char *type = G_OBJECT_TYPE_NAME(backend);
    char *folder = NULL;
    const char *name = NULL;
    if (strstr(type, "DConf") != NULL) {
        folder = g_build_filename(config, "dconf", NULL);
        name = "user";
    } else if (strstr(type, "Keyfile") != NULL) {
        folder = g_build_filename(config, "glib-2.0", "settings", NULL);
        name = "keyfile";
    }
    if (folder != NULL) {
        g_mkdir_with_parents(folder, 0700);
        watched.fd = inotify_init1(IN_CLOEXEC);
        watched.name = name;
        pthread_t reader;
        if (watched.fd < 0 || inotify_add_watch(watched.fd, folder, IN_MOVED_TO) < 0 ||
            pthread_create(&reader, NULL, watch_replacements, NULL) != 0) {
            fprintf(stderr, "gsettings-bench: cannot watch %s: %s\n", folder, strerror(errno));
            return 1;
        }
    }

    // The group of 11 keys written and made durable before the burst.
    for (int k = 0; k < 11; ++k) {
        char key[8];
        snprintf(key, sizeof key, "k%d", k);
        g_settings_set_int(settings, key, k);
    }
    g_settings_sync();
    g_usleep(300000);  // the setup's writes land before the burst's are counted
    const int before_burst = atomic_load(&watched.count);

    double *calls = g_new(double, n);
    int64_t burst_end = 0;
    for (long i = 0; i < n; ++i) {
        const int64_t before = now_ns();
        g_settings_set_int(settings, "k0", (int)(i + 1));
        burst_end = now_ns();
        calls[i] = (double)(burst_end - before);
    }
    const int64_t before_sync = now_ns();
    g_settings_sync();
    const double sync = (double)(now_ns() - before_sync);
    g_usleep(300000);
    const int replacements = atomic_load(&watched.count) - before_burst;
    const int64_t last = replacements > 0 ? atomic_load(&watched.last) : -1;
    if (g_settings_get_int(settings, "k0") != (int)n) {
        fprintf(stderr, "gsettings-bench: k0 reads %d after the burst, not %ld\n", g_settings_get_int(settings, "k0"), n);
        return 1;
    }

    qsort(calls, (size_t)n, sizeof(double), compare_doubles);
    const double median = calls[n / 2];
    const double p99 = calls[n * 99 / 100 < n ? n * 99 / 100 : n - 1];
    printf("%.1f %.1f %.1f %d %.1f %s\n", median, p99, sync, replacements, last < 0 ? -1.0 : (double)(last - burst_end), type);
    g_free(calls);
    g_free(folder);
    g_object_unref(settings);
    return 0;
}
