import Foundation

/// Gives ``PersistentPrefs`` its `Self`-typed methods (``batch(_:)``, ``transaction(_:)``, ``update(_:_:)``,
/// ``set(_:_:)``), so a subclass's batch body gets the subclass: a protocol extension can take a `Self`-typed closure,
/// a class method cannot. Nothing else needs to adopt it.
public protocol PrefsTransacting: AnyObject {}
