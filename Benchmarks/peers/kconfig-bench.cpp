// The KConfig side of `prefs-bench --peers`: the same rows as the library's, timed here and
// printed as nanoseconds per operation, so that one prefs-bench run can set them side by side.
//
// usage: kconfig-bench FILE MODE N
//   MODE  write11     writeEntry of one key + sync, group of 11 keys
//         write1000   writeEntry of one key + sync, group of 1,000 keys
//         batch1000   writeEntry of 1,000 keys + one sync
//         fresh1000   as a program's first write: a new file, one readEntry (untimed), then
//                     writeEntry of 1,000 keys + one sync, nothing written before
//         readint     readEntry(key, int), N times
//         readstring  readEntry(key, QString), N times
//         burst       N writeEntry calls of one key (in memory until sync), group of 11 keys,
//                     each timed, then the one sync() that makes them durable
// Output: one number, nanoseconds per operation; for burst one line of three numbers,
// "MEDIAN_NS P99_NS SYNC_NS": the median and 99th percentile of one writeEntry call and the
// time of the sync() after the last call.
// Built by Benchmarks/peers/build.sh when KConfig's headers are installed (libkf5config-dev).
#include <KConfig>
#include <KConfigGroup>
#include <QCoreApplication>
#include <QString>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

static volatile long long sink;

int main(int argc, char **argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: kconfig-bench FILE write11|write1000|batch1000|fresh1000|readint|readstring|burst N\n");
        return 2;
    }
    const QString file = QString::fromLocal8Bit(argv[1]);
    const std::string mode = argv[2];
    const long n = std::atol(argv[3]);
    if (n <= 0) {
        std::fprintf(stderr, "kconfig-bench: N must be a positive number, not '%s'\n", argv[3]);
        return 2;
    }
    const int width = (mode == "write11" || mode == "readint" || mode == "readstring" || mode == "burst") ? 11 : 1000;
    QStringList keys;
    for (int k = 0; k < width; ++k) keys << QStringLiteral("k%1").arg(k);

    KConfig config(file, KConfig::SimpleConfig);
    KConfigGroup group(&config, "Wide");
    if (mode == "fresh1000") {
        sink = group.readEntry(keys[0], 0);
        const auto started = std::chrono::steady_clock::now();
        for (long i = 0; i < n; ++i) {
            for (int k = 0; k < width; ++k) group.writeEntry(keys[k], int(i + k));
            if (!config.sync()) return 1;
        }
        const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - started).count() / double(n);
        std::printf("%.1f\n", ns);
        return 0;
    }
    for (int k = 0; k < width; ++k) group.writeEntry(keys[k], k);
    group.writeEntry("s", QStringLiteral("Any String"));
    if (!config.sync()) {
        std::fprintf(stderr, "kconfig-bench: cannot write %s\n", argv[1]);
        return 1;
    }

    if (mode == "burst") {
        using Clock = std::chrono::steady_clock;
        std::vector<double> calls(size_t(n), 0.0);
        for (long i = 0; i < n; ++i) {
            const auto before = Clock::now();
            group.writeEntry(keys[0], int(i + 1));
            calls[size_t(i)] = std::chrono::duration<double, std::nano>(Clock::now() - before).count();
        }
        const auto before = Clock::now();
        if (!config.sync()) return 1;
        const double sync = std::chrono::duration<double, std::nano>(Clock::now() - before).count();
        std::sort(calls.begin(), calls.end());
        const double median = calls[calls.size() / 2];
        const double p99 = calls[std::min(calls.size() - 1, calls.size() * 99 / 100)];
        std::printf("%.1f %.1f %.1f\n", median, p99, sync);
        return 0;
    }

    const auto started = std::chrono::steady_clock::now();
    if (mode == "write11" || mode == "write1000") {
        for (long i = 0; i < n; ++i) {
            group.writeEntry(keys[0], int(i + 1));
            if (!config.sync()) return 1;
        }
    } else if (mode == "batch1000") {
        for (long i = 0; i < n; ++i) {
            for (int k = 0; k < width; ++k) group.writeEntry(keys[k], int(i + k + 1));
            if (!config.sync()) return 1;
        }
    } else if (mode == "readint") {
        long long total = 0;
        for (long i = 0; i < n; ++i) total += group.readEntry(keys[0], 0);
        sink = total;
    } else if (mode == "readstring") {
        long long total = 0;
        for (long i = 0; i < n; ++i) total += group.readEntry("s", QString()).size();
        sink = total;
    } else {
        std::fprintf(stderr, "kconfig-bench: unknown mode '%s'\n", mode.c_str());
        return 2;
    }
    const auto elapsed = std::chrono::steady_clock::now() - started;
    const double ns = std::chrono::duration<double, std::nano>(elapsed).count() / double(n);
    std::printf("%.1f\n", ns);
    return 0;
}
