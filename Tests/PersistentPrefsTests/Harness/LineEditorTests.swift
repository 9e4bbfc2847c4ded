import Foundation
import PrefsHarnessKit
import Testing

/// The prompt's line editor, key by key (the terminal part is checked by hand in tmux: see the
/// closing note of issue 14).
@Suite("Harness: line editor")
struct LineEditorTests {
    /// Feeds `bytes` as a terminal would send them; returns the final state and the last outcome.
    static func type(
        _ bytes: [UInt8], history: [String] = [], completions: @escaping ([String]) -> [String] = { _ in [] }
    ) -> (LineEditor.State, LineEditor.Outcome) {
        var state = LineEditor.State()
        var outcome = LineEditor.Outcome.editing
        for key in LineEditor.keys(bytes) {
            outcome = state.apply(key, history: history, completions: completions)
            if outcome != .editing { break }
        }
        return (state, outcome)
    }

    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
    static let left: [UInt8] = [0x1B, 0x5B, 0x44]
    static let right: [UInt8] = [0x1B, 0x5B, 0x43]
    static let up: [UInt8] = [0x1B, 0x5B, 0x41]
    static let down: [UInt8] = [0x1B, 0x5B, 0x42]
    static let home: [UInt8] = [0x1B, 0x5B, 0x48]
    static let end: [UInt8] = [0x1B, 0x4F, 0x46]
    static let delete: [UInt8] = [0x1B, 0x5B, 0x33, 0x7E]

    @Test("escape sequences and control keys decode to keys, not text")
    func decoding() {
        #expect(LineEditor.keys(Self.left + Self.right + Self.up + Self.down) == [.left, .right, .up, .down])
        #expect(LineEditor.keys(Self.home + Self.end + [0x1B, 0x5B, 0x31, 0x7E] + [0x1B, 0x5B, 0x34, 0x7E]) == [.home, .end, .home, .end])
        #expect(LineEditor.keys(Self.delete + [0x7F, 0x09, 0x0D, 0x03, 0x04]) == [.delete, .backspace, .tab, .enter, .interrupt, .endOfInput])
        #expect(LineEditor.keys(Self.bytes("é😀")) == [.character("é"), .character("😀")])
        #expect(LineEditor.keys([0x1B, 0x5B, 0x32, 0x30, 0x7E]) == [.ignored])  // F9: not text
    }

    @Test("arrows, Home/End, Backspace and Delete edit the line; Enter submits it")
    func editing() {
        // "set int 5", then change the 5 to 7 and fix "int" → "Int" at the start of the word.
        let keys = Self.bytes("set int 5") + [0x7F] + Self.bytes("7") + Self.left + Self.left + Self.left + Self.left + [0x7F]
            + Self.bytes("I") + Self.end + Self.bytes("0") + Self.home + Self.delete + Self.bytes("S") + [0x0D]
        let (_, outcome) = Self.type(keys)
        #expect(outcome == .submit("Set Int 70"))
        let (state, _) = Self.type(Self.bytes("abc") + [0x01] + Self.bytes("x") + [0x05] + Self.bytes("y"))
        #expect(state.text == "xabcy")
        #expect(Self.type(Self.bytes("abcdef") + Self.left + Self.left + [0x0B]).0.text == "abcd")
        #expect(Self.type(Self.bytes("abcdef") + Self.left + Self.left + [0x15]).0.text == "ef")
    }

    @Test("the history file follows XDG_STATE_HOME, else HOME, never the account's home when HOME is elsewhere")
    func historyFile() {
        func file(_ variables: [String: String]) -> String { LineEditor.historyFile(environment: { variables[$0] }).path }
        #expect(file(["XDG_STATE_HOME": "/s", "HOME": "/h"]) == "/s/prefs-harness/history")
        #expect(file(["HOME": "/h"]) == "/h/.local/state/prefs-harness/history")
        #expect(file(["XDG_STATE_HOME": "relative", "HOME": "/h"]) == "/h/.local/state/prefs-harness/history")
        #expect(file([:]) == NSHomeDirectory() + "/.local/state/prefs-harness/history")
    }

    @Test("Up and Down walk the history and come back to the line being typed")
    func history() {
        let history = ["list", "get int"]
        #expect(Self.type(Self.up + [0x0D], history: history).1 == .submit("get int"))
        #expect(Self.type(Self.up + Self.up + Self.up + [0x0D], history: history).1 == .submit("list"))
        #expect(Self.type(Self.bytes("draft") + Self.up + Self.up + Self.down + Self.down + [0x0D], history: history).1 == .submit("draft"))
        #expect(Self.type(Self.up + Self.bytes("x") + [0x0D], history: history).1 == .submit("get intx"))
    }

    @Test("Tab completes to the shared prefix, with a space after a single candidate")
    func completion() {
        let completions: ([String]) -> [String] = { previous in
            previous.isEmpty ? ["get", "set", "settings", "quit"] : ["int", "string"]
        }
        #expect(Self.type(Self.bytes("q\t"), completions: completions).0.text == "quit ")
        #expect(Self.type(Self.bytes("se\t"), completions: completions).0.text == "set")
        #expect(Self.type(Self.bytes("set i\t"), completions: completions).0.text == "set int ")
        #expect(Self.type(Self.bytes("x\t"), completions: completions).0.text == "x")
    }

    @Test("Ctrl-C clears a half-typed line and leaves on an empty one; Ctrl-D leaves on an empty line")
    func leaving() {
        let (cleared, outcome) = Self.type(Self.bytes("half typed") + [0x03])
        #expect(cleared.text.isEmpty && outcome == .editing)
        #expect(Self.type(Self.bytes("half") + [0x03, 0x03]).1 == .leave)
        #expect(Self.type([0x04]).1 == .leave)
        #expect(Self.type(Self.bytes("ab") + Self.left + [0x04]).0.text == "a")
    }
}
