import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// One variable of the process's environment, for the library and `prefs-harness`
/// (`package` access).
///
/// `getenv` reads the one variable; `ProcessInfo.processInfo.environment` copies the whole
/// environment into a new dictionary on every call.
package enum ProcessEnvironment {
    /// The value of the environment variable `name`, or `nil` when it is not set.
    package static func value(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }
}
