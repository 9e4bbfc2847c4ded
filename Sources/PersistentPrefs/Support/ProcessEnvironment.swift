import Foundation

/// One variable of the process's environment, for the library and `prefs-harness` (`package` access): `getenv`
/// reads one variable, where `ProcessInfo.processInfo.environment` copies the whole environment on every call.
package enum ProcessEnvironment {
    /// The value of the environment variable `name`, or `nil` when it is not set.
    package static func value(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }
}

extension ProcessEnvironment {
    /// When this process started (to the system's clock tick), or `nil` where the system does not say. A date at or
    /// after it was made while the process runs.
    package static let startDate: Date? = {
        #if os(Linux) || os(Android)
            // Field 22 of /proc/self/stat: the start, in clock ticks since boot.
            guard let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { return nil }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            var boot = timespec()
            let ticks = sysconf(Int32(_SC_CLK_TCK))
            guard fields.count > 19, let started = Double(fields[19]), ticks > 0, clock_gettime(CLOCK_BOOTTIME, &boot) == 0 else { return nil }
            let age = Double(boot.tv_sec) + Double(boot.tv_nsec) / 1e9 - started / Double(ticks)
            return Date(timeIntervalSinceNow: -age)
        #elseif canImport(Darwin)
            var info = kinfo_proc()
            var size = MemoryLayout<kinfo_proc>.stride
            var name: [Int32] = [CTL_KERN, KERN_PROC, KERN_PROC_PID, getpid()]
            guard sysctl(&name, 4, &info, &size, nil, 0) == 0 else { return nil }
            let started = info.kp_proc.p_un.__p_starttime  // `p_starttime` is a C macro for this field
            return Date(timeIntervalSince1970: Double(started.tv_sec) + Double(started.tv_usec) / 1e6)
        #else
            return nil
        #endif
    }()
}
