import Foundation
import PersistentPrefs

// A drag changes the width on every frame; the file is written at most four times a second.
final class WindowState: PersistentPrefs {
    override class var coalescingInterval: TimeInterval? { 0.25 }
    @Pref("Sidebar Width") var sidebarWidth = 240.0
}

// When the drag ends: durable now, and other processes see it.
func dragEnded(_ state: WindowState) throws {
    try state.synchronize()
}
