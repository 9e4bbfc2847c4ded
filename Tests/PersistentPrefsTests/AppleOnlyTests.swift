#if canImport(ObjectiveC)
    import Foundation
    import PersistentPrefsSample
    import Testing

    @testable import PersistentPrefs

    /// What only Apple's Foundation has, run in the macOS job (Linux has no key-value observing,
    /// and key-value coding there does not reach a subclass's overrides): key-value observing of
    /// `values`, key-value coding of a set's keys, and the watch of a root key through key-value
    /// observing of `UserDefaults`. The `didChangeNotification` watcher is tested everywhere
    /// (`AppleRoadTests`).
    @Suite("Apple only: KVO, KVC and the UserDefaults key observer", waitLimit)
    struct AppleOnlyTests {
        /// Counts the key-value observing notifications it receives.
        final class Counter: NSObject, @unchecked Sendable {  // `count` is a lock; the rest is immutable
            let count = Locked(0)

            override func observeValue(
                forKeyPath keyPath: String?, of object: Any?, change: [NSKeyValueChangeKey: Any]?, context: UnsafeMutableRawPointer?
            ) {
                count.withLock { $0 += 1 }
            }

            var seen: Int { count.withLock { $0 } }
        }

        /// Whether `condition` holds within `seconds`, looked at every 10 ms.
        static func eventually(within seconds: TimeInterval = 10, _ condition: () -> Bool) -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                if condition() { return true }
                Thread.sleep(forTimeInterval: 0.01)
            }
            return condition()
        }

        @Test("KVO of values hears this instance's setter and another instance's write of the same set")
        func observingValues() throws {
            let suite = TestSuite()
            defer { suite.remove() }
            let observed = SamplePrefs(key: "KVO", store: suite.store)
            let counter = Counter()
            observed.addObserver(counter, forKeyPath: "values", options: [.new], context: nil)
            defer { observed.removeObserver(counter, forKeyPath: "values") }

            observed.int = 1
            #expect(Self.eventually { counter.seen >= 1 }, "the setter was not heard")
            let before = counter.seen
            let other = SamplePrefs(key: "KVO", store: suite.store)
            other.int = 2
            #expect(Self.eventually { counter.seen > before }, "another instance's write was not heard")
            #expect(observed.int == 2)
        }

        @Test("KVC reads and writes a set's keys as the subscript does; a refused value is in lastError and raises nothing")
        func keyValueCoding() throws {
            let suite = TestSuite()
            defer { suite.remove() }
            let prefs = SamplePrefs(key: "KVC", store: suite.store)
            let key = SamplePrefs.Key.int.rawValue

            prefs.setValue(5, forKey: key)
            #expect(prefs.lastError == nil)
            #expect(prefs.value(forKey: key) as? Int == 5)
            #expect(prefs.int == 5)

            prefs.setValue("five", forKey: key)  // not an Int: refused, not raised
            #expect(prefs.lastError != nil)
            #expect(prefs.int == 5)

            prefs.setValue(nil, forKey: key)  // removed: the declared default reads again
            #expect(prefs.value(forKey: key) == nil)
            #expect(prefs.int == 12345)
        }

        @Test("a live set on the UserDefaults road hears a write of its root key through another UserDefaults object")
        func keyObserverHearsAnotherObject() throws {
            let suite = TestSuite()
            defer { suite.remove() }
            let prefs = SamplePrefs(key: "Watched", store: suite.store)
            prefs.int = 1
            let heard = Locked(0)
            let observation = prefs.observeChanges { _ in heard.withLock { $0 += 1 } }
            defer { observation.cancel() }

            let other = try #require(UserDefaults(suiteName: suite.name))
            other.set([SamplePrefs.Key.int.rawValue: 42], forKey: "Watched")
            #expect(Self.eventually { prefs.int == 42 }, "the set did not read the other object's write")
            #expect(Self.eventually { heard.withLock { $0 } >= 1 }, "the observer was not told")
        }
    }
#endif
