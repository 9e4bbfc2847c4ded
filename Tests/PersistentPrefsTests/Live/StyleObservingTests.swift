import Foundation
@testable import PersistentPrefs
import Testing

/// Observing the single-key styles: `UserDefaultsContainer` and `@SettingsStorage`.
@Suite("Observing UserDefaultsContainer and @SettingsStorage keys", .linuxSuiteFiles, waitLimit)
struct StyleObservingTests {
    private enum Key: CodingKey { case age, name, planet }

    @Test("a container key: another process's write and this process's own are observed, other keys are not")
    func container() throws {
        let suite = TestSuite()
        defer { suite.remove() }
        let container = UserDefaultsContainer(keyedBy: Key.self, userDefaults: suite.store.userDefaults)
        let ages = EventLog()
        // Each event with the age read as it arrives: a later write's value marks the event that
        // must come after every event an earlier write could cause (one set's events are ordered).
        let observation = container.observeChanges(to: .age) { event in
            let age: Int? = container[.age]
            ages.append(event, reading: age ?? -1)
        }
        defer { observation.cancel() }

        let run = try suite.sharedChild.run("prefs-test-helper", ["container-write", suite.name, "-"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(ages.wait { $0.values.contains(20) })
        #expect(ages.events == [PrefsChangeEvent(root: "age", keys: ["age"], storeIdentifier: suite.store.identifier)])
        let age: Int? = container[.age]
        #expect(age == 20)

        container[.name] = "Bo"  // another key: nothing
        container[.age] = 21  // this process: heard through the watcher too, once
        #expect(ages.wait { $0.values.contains(21) })
        #expect(ages.values == [20, 21])
        container[.age] = 21  // an equal value: nothing
        container[.age] = 22  // the marker: every event the equal write could cause comes before its own
        #expect(ages.wait { $0.values.contains(22) })
        #expect(ages.values == [20, 21, 22])
    }

    @Test("a container key's date changed by a fraction of a second is observed")
    func subSecondDate() throws {
        let suite = TestSuite()
        defer { suite.remove() }
        let container = UserDefaultsContainer(keyedBy: Key.self, userDefaults: suite.store.userDefaults)
        let second = 786_000_000.0
        container[.planet] = Date(timeIntervalSinceReferenceDate: second + 0.25)
        let fractions = EventLog()
        let observation = container.observeChanges(to: .planet) { event in
            let when: Date? = container[.planet]
            fractions.append(event, reading: Int(((when?.timeIntervalSinceReferenceDate ?? 0) - second) * 100))
        }
        defer { observation.cancel() }
        container[.planet] = Date(timeIntervalSinceReferenceDate: second + 0.75)
        #expect(fractions.wait { $0.values.contains(75) })
    }

    @Test("a @SettingsStorage property: $property.changes() yields each change, until cancelled")
    func settingsStorage() async throws {
        let suite = TestSuite()
        defer { suite.remove() }
        let settings = ObservedSettings(defaults: suite.store.userDefaults)
        // One write at a time, each awaited before the next: two writes the watcher sees together
        // are one event, so two writes in a row could never yield two.
        var events = settings.$volume.changes().makeAsyncIterator()
        settings.volume = 3
        #expect(await events.next()?.keys == ["volume"])
        #expect(settings.volume == 3)
        suite.store.userDefaults.set(4, forKey: "volume")  // plain UserDefaults code
        _ = suite.store.userDefaults.synchronize()
        #expect(await events.next()?.keys == ["volume"])
        #expect(settings.volume == 4)
    }
}

/// A class with one `@SettingsStorage` property on a suite of the test's own.
final class ObservedSettings {
    @SettingsStorage var volume: Int

    init(defaults: UserDefaults) {
        _volume = SettingsStorage(wrappedValue: 1, "volume", store: defaults)
    }
}
