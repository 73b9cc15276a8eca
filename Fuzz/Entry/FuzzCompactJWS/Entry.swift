// libFuzzer's entry point for FuzzCompactJWS (only built with GATEHOUSE_FUZZ set, scripts/fuzz.sh); the target
// itself is Fuzz/FuzzCompactJWS/FuzzCompactJWS.swift, which `swift test` also runs on its seeds (FuzzReplayTests).
import FuzzTargets

@_cdecl("LLVMFuzzerTestOneInput")
public func entry(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    fuzzCompactJWS(data, size)
}
