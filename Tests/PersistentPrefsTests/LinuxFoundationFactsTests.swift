import Foundation
import PersistentPrefs
import Testing

/// What the suite-file road (Linux's) relies on swift-corelibs-foundation not to have: values
/// `UserDefaults` forces or registers for a suite. The road asks nothing of `UserDefaults` for
/// them (it does not even make the object to read a set); should a Foundation ever show them,
/// these fail, and the road must read them again.
@Suite("Linux's Foundation: nothing forced or registered for the suite-file road to read")
struct LinuxFoundationFactsTests {
    @Test("a suite object shows no registered defaults and forces no key", .linuxSuiteFiles)
    func nothingForcedOrRegistered() throws {
        #if !canImport(ObjectiveC)
            let suite = TestSuite()
            defer { suite.remove() }
            let key = "FactsProbe-\(UUID().uuidString)"
            UserDefaults.standard.register(defaults: [key: ["Volume": 3]])
            let object = try #require(UserDefaults(suiteName: suite.name))
            object.register(defaults: [key: ["Volume": 4]])
            #expect(object.volatileDomain(forName: UserDefaults.registrationDomain)[key] == nil)
            #expect(UserDefaults.standard.volatileDomain(forName: UserDefaults.registrationDomain)[key] == nil)
            #expect(!object.objectIsForced(forKey: key) && !UserDefaults.standard.objectIsForced(forKey: key))
        #endif
    }
}
