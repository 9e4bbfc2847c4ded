import Foundation
@testable import PersistentPrefs
import Testing

/// Observing the single-key styles: `UserDefaultsContainer` and `@SettingsStorage`.
@Suite("Observing UserDefaultsContainer and @SettingsStorage keys")
struct StyleObservingTests {
    private enum Key: CodingKey { case age, name, planet }

    @Test("a container key: another process's write and this process's own are observed, other keys are not")
    func container() throws {
        let suite = TestSuite()
        defer { suite.remove() }
        let container = UserDefaultsContainer(keyedBy: Key.self, userDefaults: suite.store.userDefaults)
        let ages = EventLog()
        let observation = container.observeChanges(to: .age) { ages.append($0) }
        defer { observation.cancel() }

        let run = try suite.sharedChild.run("prefs-test-helper", ["container-write", suite.name, "-"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(ages.wait { $0.events.count == 1 })
        #expect(ages.events.first == PrefsChangeEvent(root: "age", keys: ["age"], storeIdentifier: suite.store.identifier))
        let age: Int? = container[.age]
        #expect(age == 20)

        container[.name] = "Bo"  // another key: nothing
        container[.age] = 21  // this process: heard through the watcher too
        #expect(ages.wait { $0.events.count == 2 })
        usleep(100_000)
        #expect(ages.events.count == 2)
        container[.age] = 21  // an equal value: nothing
        usleep(100_000)
        #expect(ages.events.count == 2)
    }

    @Test("a @SettingsStorage property: $property.changes() yields each change, until cancelled")
    func settingsStorage() async throws {
        let suite = TestSuite()
        defer { suite.remove() }
        let settings = ObservedSettings(defaults: suite.store.userDefaults)
        let stream = settings.$volume.changes()
        let reader = Task {
            var seen: [PrefsChangeEvent] = []
            for await event in stream {
                seen.append(event)
                if seen.count == 2 { break }
            }
            return seen
        }
        settings.volume = 3
        try await Task.sleep(nanoseconds: 200_000_000)  // one event at a time
        suite.store.userDefaults.set(4, forKey: "volume")  // plain UserDefaults code
        _ = suite.store.userDefaults.synchronize()
        let seen = await reader.value
        #expect(seen.map(\.keys) == [["volume"], ["volume"]])
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
