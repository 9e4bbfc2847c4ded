import PersistentPrefs

// Version 2 of a set whose version 0 stored "Size" and a Bool "Dark Mode".
final class DocumentPrefs: PersistentPrefs {
    @Pref("Font Size") var fontSize = 12
    @Pref("Appearance") var appearance = "light"

    override class var schemaVersion: Int { 2 }
    override class var migrations: [PrefsMigration] {
        [
            .renameKey("Size", to: "Font Size"),                      // 0 → 1
            PrefsMigration("Dark Mode to Appearance") { set in         // 1 → 2
                let dark = set.removeValue(forKey: "Dark Mode") as? Bool ?? false
                set["Appearance"] = dark ? "dark" : "light"
            },
        ]
    }
}
