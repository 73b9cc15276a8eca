// libFuzzer's entry point for FuzzCELExpression (only built with GATEHOUSE_FUZZ set, scripts/fuzz.sh); the target
// itself is Fuzz/FuzzCELExpression/FuzzCELExpression.swift, which `swift test` also runs on its seeds (FuzzReplayTests).
import FuzzTargets

@_cdecl("LLVMFuzzerTestOneInput")
public func entry(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    fuzzCELExpression(data, size)
}
