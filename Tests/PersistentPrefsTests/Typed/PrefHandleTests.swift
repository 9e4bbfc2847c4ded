import Foundation
import PersistentPrefs
import PersistentPrefsSample
import Testing

/// `$property`: a typed reset of one key, and the property's values as an async sequence.
@Suite("A @Pref property's handle: $volume.reset() and $volume.values", waitLimit)
struct PrefHandleTests {
    @Test("$volume.reset() removes the key, so the property reads its default; the handle names its key")
    func reset() throws {
        let store = InMemoryStore()
        let prefs = AudioPrefs(key: "A", store: store)
        prefs.volume = 9
        prefs.theme = .dark
        #expect(prefs.$volume.key == "Volume" && prefs.$volume.defaultValue == 5 && prefs.$volume.value == 9)
        prefs.$volume.reset()
        #expect(prefs.volume == 5 && prefs.lastError == nil)
        #expect(try store.load(root: "A")?["Volume"] == nil, "removed, not the default written")
        #expect(prefs.theme == .dark, "the other keys stay")
    }

    @Test("values gives the value now, then each change in order")
    func valuesInOrder() async throws {
        let store = InMemoryStore()
        let prefs = AudioPrefs(key: "A", store: store)
        prefs.volume = 2
        var iterator = prefs.$volume.values.makeAsyncIterator()
        #expect(await iterator.next() == 2)
        let writer = AudioPrefs(key: "A", store: store)
        for volume in [3, 4, 5] { writer.volume = volume }
        writer.theme = .light  // another key: no value
        writer.$volume.reset()  // back to the default
        writer.volume = 11
        var seen: [Int] = []
        while seen.count < 5, let next = await iterator.next() { seen.append(next) }
        #expect(seen == [3, 4, 5, 5, 11], "the reset is a change to the default, 5")
    }

    @Test("values hears another process's write")
    func valuesFromAnotherProcess() async throws {
        let (child, directory) = ChildProcess.inTemporaryConfigHome()
        defer { directory.remove() }
        let folder = directory.path + "/sets"
        let prefs = AudioPrefs(key: "A", store: PlistFileStore(directory: URL(fileURLWithPath: folder)))
        var iterator = prefs.$volume.values.makeAsyncIterator()
        #expect(await iterator.next() == 5)
        #expect(try child.run("prefs-test-helper", ["audio-set", folder, "A", "volume", "8"]).stdout == "ok\n")
        #expect(await iterator.next() == 8)
    }
}
