#if FUZZING
    import Foundation
    @testable import PersistentPrefs
    @testable import PersistentPrefsSync

    extension FuzzTarget {
        /// A device file from another machine, as a pass reads it: parsed as a property list, then as a log. A log it
        /// reads is written as a device file and read back the same; a refused one names why.
        static func devicefile(_ data: Data) {
            guard case .success(let parsed) = PlistFile.parse(data), case .success(let dictionary) = PlistValue.normalizedSet(parsed, for: .loading)
            else { return }
            switch DeviceFile.log(from: dictionary) {
            case .failure(let refusal):
                require(!refusal.reason.isEmpty, "a device file refused without a reason: \(shown(data))")
            case .success(let log):
                let published = (log.published.wall, log.published.counter)
                require(log.entries.values.allSatisfy { ($0.stamp.wall, $0.stamp.counter) <= published }, "an entry after published: \(shown(data))")
                let written: Data
                do {
                    written = try PlistWriting.portableData(DeviceFile.dictionary(of: log))
                } catch {
                    fatalError("a log read from \(shown(data)) cannot be written: \(error)")
                }
                guard case .success(let again) = PlistFile.parse(written),
                    case .success(let normalized) = PlistValue.normalizedSet(again, for: .loading),
                    case .success(let back) = DeviceFile.log(from: normalized)
                else { fatalError("a device file written from \(shown(data)) does not read back") }
                require(back == log, "a device file read from \(shown(data)) reads back otherwise")
            }
        }
    }
#endif
