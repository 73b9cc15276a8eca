// libFuzzer's entry point for FuzzStrictJSON (only built with GATEHOUSE_FUZZ set, scripts/fuzz.sh); the target
// itself is Fuzz/FuzzStrictJSON/FuzzStrictJSON.swift, which `swift test` also runs on its seeds (FuzzReplayTests).
import FuzzTargets

@_cdecl("LLVMFuzzerTestOneInput")
public func entry(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    fuzzStrictJSON(data, size)
}
