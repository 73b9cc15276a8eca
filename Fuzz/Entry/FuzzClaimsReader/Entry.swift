// libFuzzer's entry point for FuzzClaimsReader (only built with GATEHOUSE_FUZZ set, scripts/fuzz.sh); the target
// itself is Fuzz/FuzzClaimsReader/FuzzClaimsReader.swift, which `swift test` also runs on its seeds (FuzzReplayTests).
import FuzzTargets

@_cdecl("LLVMFuzzerTestOneInput")
public func entry(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    fuzzClaimsReader(data, size)
}
