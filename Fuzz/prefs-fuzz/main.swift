// The fuzz driver: `prefs-fuzz TARGET [libFuzzer options] [CORPUS…]` runs one target (see
// Targets.swift and Fuzz/README.md). Built by `Fuzz/run` with libFuzzer and AddressSanitizer;
// a plain `swift build` compiles only the line below, which points there.
#if FUZZING
    import Foundation

    @_silgen_name("LLVMFuzzerRunDriver")
    func runDriver(
        _ argc: UnsafeMutablePointer<Int32>,
        _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
        _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
    ) -> Int32

    let arguments = CommandLine.arguments
    guard arguments.count >= 2, let target = FuzzTarget(rawValue: arguments[1]) else {
        let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
        FileHandle.standardError.write(Data("usage: prefs-fuzz TARGET [libFuzzer options] [CORPUS…]; TARGET is one of \(names)\n".utf8))
        exit(2)
    }
    FuzzTarget.selected = target
    // libFuzzer reads its own options: the program's name, then everything after the target.
    var argc = CommandLine.argc - 1
    var argv = CommandLine.unsafeArgv
    argv[1] = argv[0]
    var shifted = argv + 1
    exit(
        runDriver(&argc, &shifted) { bytes, count in
            FuzzTarget.selected.run(bytes.map { Data(bytes: $0, count: count) } ?? Data())
            return 0
        })
#else
    print("prefs-fuzz is built by Fuzz/run, with libFuzzer and AddressSanitizer (see Fuzz/README.md)")
#endif
