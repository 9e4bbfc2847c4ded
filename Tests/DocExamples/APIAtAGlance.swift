// Given: the README's quick-start set.
final class EditorPrefs: PersistentPrefs {
    @Pref("Font Size", in: 6...72) var fontSize = 12
}

