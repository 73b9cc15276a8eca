// libFuzzer's entry point for FuzzHTTP1RequestParser (only built with GATEHOUSE_FUZZ set, scripts/fuzz.sh); the target
// itself is Fuzz/FuzzHTTP1RequestParser/FuzzHTTP1RequestParser.swift, which `swift test` also runs on its seeds (FuzzReplayTests).
import FuzzTargets

@_cdecl("LLVMFuzzerTestOneInput")
public func entry(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    fuzzHTTP1RequestParser(data, size)
}
