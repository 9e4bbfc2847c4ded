import Foundation
import PersistentPrefs
import PersistentPrefsSample
import Testing

// The atomic read-modify-write of the other styles: `SettingsManageable.update(_:)` under the
// settings file's lock (in the SettingsManageable suite, which runs one test at a time: they
// share the settings folder), `UserDefaultsContainer.update(_:as:_:)` under the suite's.
extension SettingsManageableTests {
    @Test("SettingsManageable struct: 8 threads × 50 updates, each from its own copy → exactly 400")
    func settingsStruct() {
        withSettingsDirectory { _ in
            let failures = Flag()
            DispatchQueue.concurrentPerform(iterations: 8) { _ in
                var mine = Plain()  // a stale copy: update re-reads the file under its lock
                for _ in 0..<50 {
                    do { try mine.update { $0.volume += 1 } } catch { failures.set() }
                }
            }
            #expect(!failures.isSet)
            var loaded = Plain()
            let didLoad = loaded.load()
            #expect(didLoad)
            #expect(loaded.volume == 5 + 400)
        }
    }

    @Test("SettingsManageable: the body's error comes out unchanged and nothing is written; a bad file is left alone")
    func settingsErrors() throws {
        try withSettingsDirectory { _ in
            var plain = Plain()
            try plain.update { $0.name = "first" }
            #expect(plain.name == "first")
            #expect(throws: SomeFailure.self) {
                try plain.update { settings in
                    settings.name = "second"
                    throw SomeFailure()
                }
            }
            var loaded = Plain()
            let didLoad = loaded.load()
            #expect(didLoad)
            #expect(loaded.name == "first")
            try Data("not a plist".utf8).write(to: plain.settingsURL())
            let error = #expect(throws: PersistentPrefs.PrefsError.self) { try plain.update { $0.volume = 1 } }
            guard case .decodingFailed(let path, _)? = error else {
                Issue.record("expected decodingFailed, got \(String(describing: error))")
                return
            }
            #expect(path == plain.settingsURL().path)
            #expect(try Data(contentsOf: plain.settingsURL()) == Data("not a plist".utf8))

            // A write of the same file inside its own update would wait for itself: refused,
            // naming the file, and nothing written.
            try FileManager.default.removeItem(at: plain.settingsURL())
            var outer = Plain()
            let nested = #expect(throws: PersistentPrefs.PrefsError.self) {
                try outer.update { settings in
                    settings.volume = 7
                    try Plain(volume: 8).updateThrowing()
                }
            }
            #expect(nested == .transactionInProgress(root: plain.settingsURL().path))
            #expect(!FileManager.default.fileExists(atPath: plain.settingsURL().path))
        }
    }

    @Test("SettingsManageableObject: update changes the shared object in place")
    func settingsObject() throws {
        try withSettingsDirectory { _ in
            #expect(AppSettings.shared.load())
            let before = AppSettings.shared.fontSize
            try AppSettings.shared.update { $0.fontSize += 2 }
            #expect(AppSettings.shared.fontSize == before + 2)
            let file = try PropertyListDecoder().decode(AppSettings.self, from: Data(contentsOf: AppSettings.shared.settingsURL()))
            #expect(file.fontSize == before + 2)
        }
    }

}

@Suite("UserDefaultsContainer transactions", waitLimit)
struct ContainerTransactionTests {
    @Test("UserDefaultsContainer: 8 threads × 50 update increments → exactly 400; type mismatch refused")
    func container() throws {
        let suite = TestSuite()
        defer { suite.remove() }
        let failures = Flag()
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            let container = UserDefaultsContainer(keyedBy: AnyKey.self, userDefaults: suite.store.userDefaults)
            for _ in 0..<50 {
                do { try container.update(.number, as: Int.self) { $0 = ($0 ?? 0) + 1 } } catch { failures.set() }
            }
        }
        #expect(!failures.isSet)
        let container = UserDefaultsContainer(keyedBy: AnyKey.self, userDefaults: suite.store.userDefaults)
        let count: Int? = container[.number]
        #expect(count == 400)
        container[.text] = "words"
        #expect(throws: PersistentPrefs.PrefsError.self) {
            try container.update(.text, as: Int.self) { $0 = 1 }
        }
        #expect(container.lastError != nil)
        let text: String? = container[.text]
        #expect(text == "words")
        try container.update(.text, as: String.self) { $0 = nil }
        let removed: String? = container[.text]
        #expect(removed == nil)
    }
}
