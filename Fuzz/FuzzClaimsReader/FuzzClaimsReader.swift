// libFuzzer target for StrictJSONObject, the one-pass reader of a token's header and claims (Fuzz/README.md).
//
// Input: one JSON document's bytes (a payload as decoded from its base64url). A differential against
// StrictJSON.parse, at the depth limit tokens are read with (32) and at 2 (where a member's object or
// array is already at the limit). Besides "no crash, no hang", it checks:
// - the reader refuses exactly what StrictJSON refuses, with the same message at the same offset;
// - an object it accepts has the same members and values as StrictJSON's object;
// - a valid document that is not an object is nil, never members.
@testable import Gatehouse
import FuzzSupport
import GatehouseSyntax

/// One input (libFuzzer's entry point calls it, Fuzz/Entry/FuzzClaimsReader; FuzzReplayTests replays the seeds through it).
public func fuzzClaimsReader(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeBufferPointer(start: data, count: size)
    for maxDepth in [32, 2] {
        let reference = Result { () throws(StrictJSONError) in try StrictJSON.parse(buffer: input, maxDepth: maxDepth) }
        let read = Result { () throws(StrictJSONError) in try StrictJSONObject.members(of: input, maxDepth: maxDepth) }
        switch (reference, read) {
        case (.failure(let expected), .failure(let error)):
            if printOutcome { print(error) }
            require(error == expected, "depth \(maxDepth): the reader refused with \(error), StrictJSON with \(expected)")
        case (.success(let value), .success(let members)):
            if printOutcome { print(members.map { JSONValue.object($0).compactJSON } ?? "not an object") }
            require(members == value.objectValue, "depth \(maxDepth): the reader read \(String(describing: members)), StrictJSON \(value)")
        case (.failure(let expected), .success(let members)):
            fatalError("depth \(maxDepth): the reader accepted what StrictJSON refuses (\(expected)): \(String(describing: members))")
        case (.success(let value), .failure(let error)):
            fatalError("depth \(maxDepth): the reader refused (\(error)) what StrictJSON accepts: \(value.compactJSON)")
        }
    }
    return 0
}
