import Foundation
import PersistentPrefs

/// Why a harness command did not succeed, and the exit code that says so.
public enum HarnessError: Error, Equatable, Sendable {
    /// The command line was wrong (unknown command, missing argument, a value that does not
    /// parse for its key). Exit code 2.
    case usage(String)
    /// The library refused the operation (its `lastError`, as a sentence). Exit code 1.
    case refused(String)

    /// The process exit code for this error.
    public var exitCode: Int32 {
        switch self {
        case .usage: return ExitCode.usage
        case .refused: return ExitCode.refused
        }
    }

    /// The message printed to standard error.
    public var message: String {
        switch self {
        case .usage(let message), .refused(let message): return message
        }
    }
}

extension HarnessError {
    /// The refusal that says the library's `error`: its sentence, and for a damaged file what
    /// resolves it (see ``DamageReport/sentence(_:)``).
    static func refused(_ error: PersistentPrefs.PrefsError) -> HarnessError {
        .refused(DamageReport.sentence(error))
    }
}

/// Runs `body`, turning what the library refuses into a refusal (exit code 1) with its sentence:
/// a `PrefsError` as ``HarnessError/refused(_:)-(PrefsError)`` says it, any other failure
/// (Foundation's, say) by its localized description. A ``HarnessError`` passes through unchanged.
func refusing<Result>(_ body: () throws -> Result) throws -> Result {
    do {
        return try body()
    } catch let error as HarnessError {
        throw error
    } catch let error as PersistentPrefs.PrefsError {
        throw HarnessError.refused(error)
    } catch {
        throw HarnessError.refused((error as NSError).localizedDescription)
    }
}

/// The harness's exit codes.
public enum ExitCode {
    /// The command succeeded.
    public static let success: Int32 = 0
    /// The library refused the operation.
    public static let refused: Int32 = 1
    /// The command line was wrong.
    public static let usage: Int32 = 2
}
