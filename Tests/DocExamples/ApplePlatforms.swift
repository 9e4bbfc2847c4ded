// Given: the README's quick-start set; and, where Foundation has no app groups (Linux), the
// method the example calls, so the example is still type-checked there.
final class EditorPrefs: PersistentPrefs {
    @Pref("Font Size", in: 6...72) var fontSize = 12
}
#if !canImport(ObjectiveC)
    extension FileManager {
        func containerURL(forSecurityApplicationGroupIdentifier group: String) -> URL? { nil }
    }
#endif

