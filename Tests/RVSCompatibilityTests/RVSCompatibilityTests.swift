import Foundation
import PersistentPrefs
import Testing

/// A suite of the test's own, removed (file and all) when the test ends.
private func withIsolatedSuite(_ body: () throws -> Void) rethrows {
    let name = "PersistentPrefsRVSTests-\(UUID().uuidString)"
    defer {
        UserDefaults(suiteName: name)?.removePersistentDomain(forName: name)
        let base = PreferencesFile.preferencesDirectory.path
        for file in (try? FileManager.default.contentsOfDirectory(atPath: base)) ?? [] where file.hasPrefix(name) {
            try? FileManager.default.removeItem(atPath: base + "/" + file)
        }
    }
    try RVSStyleTestSet.$isolatedSuite.withValue(name, operation: body)
}

/// RVS_PersistentPrefs code, compiled in Swift 5 mode against PersistentPrefs.
@Suite("RVS_PersistentPrefs source compatibility (Swift 5 mode)")
struct RVSCompatibilityTests {
    @Test("the README's keyed initialiser writes the defaults once, and accessors read them")
    func keyedInitialiser() {
        withIsolatedSuite {
            let prefs = RVSStyleTestSet(key: "Main")
            #expect(prefs.lastError == nil)
            #expect(prefs.int == 12345)
            #expect(prefs.string == "Any String")
            #expect(prefs.array == ["One", "Two", "Three"])
            #expect(prefs.dictionary == ["One": "1", "Two": "2"])
            #expect(prefs.date == Date(timeIntervalSince1970: 1_600_000_000))
            #expect(prefs.count == 5)
            prefs.int = 7
            let again = RVSStyleTestSet(key: "Main")
            #expect(again.int == 7)
        }
    }

    @Test("values: nil, an implicitly unwrapped nil, and omitted values only load the set")
    func nilValues() {
        withIsolatedSuite {
            let seeded = RVSStyleTestSet(key: "Nil", values: ["Integer Value": 3])
            #expect(seeded.int == 3)
            let explicitNil = RVSStyleTestSet(key: "Nil", values: nil)
            #expect(explicitNil.lastError == nil)
            #expect(explicitNil.int == 3)
            let unwrapped: [String: Any]! = nil
            let forwarded = RVSStyleTestSet(key: "Nil", values: unwrapped)
            #expect(forwarded.lastError == nil)
            #expect(forwarded.count == 1)
            let store = InMemoryStore()
            try? store.save(["Integer Value": 4], root: "Nil")
            let base = PersistentPrefs(key: "Nil", values: nil, store: store)
            #expect(base.lastError == nil)
            #expect(base["Integer Value"] as? Int == 4)
            let keyOnly: String! = "Nil"
            #expect(RVSStyleTestSet(key: keyOnly, values: nil).int == 3)
        }
    }

    @Test("an overridden count is used, and reflects the stored set")
    func overriddenCount() {
        withIsolatedSuite {
            let prefs = RVSStyleTestSet(key: "Count", values: ["Integer Value": 1, "String Value": "a"])
            #expect(prefs.count == 2)
            prefs.clear()
            #expect(prefs.count == 0)
        }
    }

    @Test("RVS's own test flow: default root key, keyed sets, replacing and clearing")
    func simpleFlow() {
        withIsolatedSuite {
            let testClass = RVSStyleSimpleSet()
            testClass.values = ["First": 1, "Next": "HELO", "Test": true, "Last": 4.5]
            #expect(testClass.first == 1)
            #expect(testClass.next == "HELO")
            #expect(testClass.test == true)
            #expect(testClass.last == 4.5)
            let keyed = RVSStyleSimpleSet(key: "TestInstance-2")
            #expect(keyed.first != 1)
            keyed.values = ["First": 12, "Next": "HIHOWAYA", "Test": false, "Last": 26.2]
            #expect(testClass.first == 1)
            #expect(RVSStyleSimpleSet().last == 4.5)
            #expect(RVSStyleSimpleSet(key: "TestInstance-2").next == "HIHOWAYA")
            testClass.values = [:]
            #expect(RVSStyleSimpleSet().count == 0)
            keyed.clear()
            #expect(keyed.count == 0)
        }
    }

    @Test("RVS's errors: the four cases it documents, switched over with the one-line default")
    func errorCases() {
        withIsolatedSuite {
            let prefs = RVSStyleTestSet(key: "Errors")
            prefs.values = ["Unknown": 1]
            var described = ""
            if let error = prefs.lastError {
                switch error {
                case .incorrectKeys(let invalidElements): described = "keys \(invalidElements)"
                case .valuesNotPlistCompatible(let invalidElements): described = "values \(invalidElements)"
                case .noStoredPrefsForKey(let key): described = "missing \(key)"
                case .unknownError(let error): described = "unknown \(String(describing: error))"
                default: described = "other \(error)"  // the one line RVS code adds
                }
            }
            #expect(described == "keys [\"Unknown\"]")
            prefs["Integer Value"] = NSNull()
            if case .valuesNotPlistCompatible(let keys)? = prefs.lastError {
                #expect(keys == ["Integer Value"])
            } else {
                Issue.record("expected valuesNotPlistCompatible, got \(String(describing: prefs.lastError))")
            }
            #expect(prefs.int == 12345)
        }
    }
}
