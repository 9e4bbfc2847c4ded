import Foundation
import PersistentPrefs
import Testing

/// Tests of instances without an explicit store. They change the process-wide
/// ``PersistentPrefs/groupID``, so they run one at a time (every other test passes a store).
@Suite("The default store: groupID and userDefaults", .serialized)
struct DefaultStoreTests {
    // MARK: - groupID and userDefaults

    @Test("groupID selects the suite; userDefaults is the one in use; changing it redirects")
    func groupIDSelectsSuite() throws {
        Self.withTwoSuites { first, second in
            PersistentPrefs.groupID = first.name
            let prefs = MixedPrefs(key: "grouped", values: ["Int": 1])
            #expect(prefs.lastError == nil)
            #expect(prefs.userDefaults === first.store.userDefaults)
            #expect(first.store.userDefaults.dictionary(forKey: "grouped") != nil)

            PersistentPrefs.groupID = second.name
            #expect(prefs.userDefaults === second.store.userDefaults)
            #expect(prefs.values.isEmpty)
            prefs.int = 2
            #expect(MixedPrefs(key: "grouped", store: second.store).int == 2)
            #expect(MixedPrefs(key: "grouped", store: first.store).int == 1)
            #expect(PersistentPrefs(store: InMemoryStore()).userDefaults == nil)
        }
    }

    @Test("a @Pref read after groupID changes reads the new suite, not the answer it remembered")
    func groupIDChangesRememberedReads() {
        final class Grouped: PersistentPrefs {
            @Pref("Volume") var volume = 5
        }
        Self.withTwoSuites { first, second in
            PersistentPrefs.groupID = first.name
            let prefs = Grouped(key: "grouped", values: ["Volume": 1])
            #expect(prefs.volume == 1 && prefs.volume == 1)
            PersistentPrefs.groupID = second.name
            #expect(prefs.volume == 5)
            PersistentPrefs.groupID = first.name
            #expect(prefs.volume == 1)
        }
    }

    /// Runs `body` with two suites of its own, and `groupID` back to `nil` and both removed after.
    static func withTwoSuites(_ body: (TestSuite, TestSuite) throws -> Void) rethrows {
        let first = TestSuite()
        let second = TestSuite()
        defer {
            PersistentPrefs.groupID = nil
            first.remove()
            second.remove()
        }
        try body(first, second)
    }

    @Test("a subclass overriding init with implicitly unwrapped parameters (RVS style) works")
    func rvsStyleInit() {
        let suite = TestSuite()
        defer {
            PersistentPrefs.groupID = nil
            suite.remove()
        }
        PersistentPrefs.groupID = suite.name
        let first = RVSStylePrefs(key: "rvs", values: ["Int": 5])
        #expect(first.lastError == nil)
        #expect(RVSStylePrefs(key: "rvs").int == 5)
        let unnamed = RVSStylePrefs(key: nil)
        #expect(unnamed.key == "RVSStylePrefs")
        #expect(unnamed.values.isEmpty)
        #expect(suite.store.userDefaults.dictionary(forKey: "rvs")?.count == 1)
    }

    @Test("a groupID that cannot be a suite is reported by every operation, and nothing is written")
    func invalidGroupID() {
        defer { PersistentPrefs.groupID = nil }
        PersistentPrefs.groupID = "../escape"
        let prefs = MixedPrefs(key: "r", values: ["Int": 1])
        #expect(prefs.lastError == .invalidSuiteName(name: "../escape", reason: "the suite name \"../escape\" contains '/' or NUL"))
        prefs.int = 2
        #expect(prefs.lastError?.description.contains("../escape") == true)
    }

    @Test("an empty groupID selects the standard suite")
    func emptyGroupIDIsStandard() {
        // Checked on the store the instances would open, so that no test touches the test
        // process's own standard suite.
        defer { PersistentPrefs.groupID = nil }
        PersistentPrefs.groupID = ""
        #expect(UserDefaultsStore(suiteName: PersistentPrefs.groupID)?.userDefaults === UserDefaults.standard)
    }
}

@Suite("Suite names")
struct SuiteNameTests {
    @Test(
        "names that would escape the preferences folder or alias a special domain are refused, with a reason",
        arguments: ["", "../x", "a/b", "/etc/passwd", "..", ".", "NSGlobalDomain", "..hidden"])
    func refused(name: String) {
        #expect(throws: PersistentPrefs.PrefsError.self) { try UserDefaultsStore.named(name) }
        do {
            _ = try UserDefaultsStore.named(name)
        } catch let error as PersistentPrefs.PrefsError {
            guard case .invalidSuiteName(let refused, let reason) = error else {
                Issue.record("expected invalidSuiteName, got \(error)")
                return
            }
            #expect(refused == name)
            #expect(!reason.isEmpty)
            #expect(error.description.contains("cannot be a UserDefaults suite"))
        } catch {
            Issue.record("unexpected \(error)")
        }
        if !name.isEmpty { #expect(UserDefaultsStore(suiteName: name) == nil) }
    }

    @Test("a valid name opens")
    func valid() throws {
        let suite = TestSuite()
        defer { suite.remove() }
        #expect(try UserDefaultsStore.named(suite.name).identifier == suite.store.identifier)
    }
}
