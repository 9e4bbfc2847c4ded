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

    // The target is the first argument. libFuzzer starts the program again for some jobs
    // (`-merge=1`, `-fork`) with its own options only: the child finds the target in the
    // environment, set here.
    let arguments = CommandLine.arguments
    let named = arguments.count >= 2 ? FuzzTarget(rawValue: arguments[1]) : nil
    guard let target = named ?? ProcessInfo.processInfo.environment["PREFS_FUZZ_TARGET"].flatMap(FuzzTarget.init) else {
        let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
        FileHandle.standardError.write(Data("usage: prefs-fuzz TARGET [libFuzzer options] [CORPUS…]; TARGET is one of \(names)\n".utf8))
        exit(2)
    }
    FuzzTarget.selected = target
    setenv("PREFS_FUZZ_TARGET", target.rawValue, 1)
    // Suites (the api target's) live in the scratch folder, never in the user's preferences.
    let config = scratch.appendingPathComponent("config", isDirectory: true)
    try? FileManager.default.createDirectory(at: config, withIntermediateDirectories: true)
    setenv("XDG_CONFIG_HOME", config.path, 1)
    // libFuzzer reads its own options: the program's name, then everything after the target.
    var argc = CommandLine.argc
    var shifted = CommandLine.unsafeArgv
    if named != nil {
        argc -= 1
        shifted[1] = shifted[0]
        shifted += 1
    }
    exit(
        runDriver(&argc, &shifted) { bytes, count in
            FuzzTarget.selected.run(bytes.map { Data(bytes: $0, count: count) } ?? Data())
            return 0
        })
#else
    print("prefs-fuzz is built by Fuzz/run, with libFuzzer and AddressSanitizer (see Fuzz/README.md)")
#endif
