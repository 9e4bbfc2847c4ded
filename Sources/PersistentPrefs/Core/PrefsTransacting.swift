import Foundation

/// Gives ``PersistentPrefs`` its `Self`-typed methods: ``batch(_:)``, ``transaction(_:)``, the
/// typed ``update(_:_:)`` and the throwing ``set(_:_:)``.
///
/// `PersistentPrefs` adopts it; a class method cannot take a `Self`-typed closure, a protocol
/// extension can, so a subclass's batch body gets the subclass (`prefs.batch { $0.volume = 7 }`).
/// Nothing else needs to adopt it.
public protocol PrefsTransacting: AnyObject {}
