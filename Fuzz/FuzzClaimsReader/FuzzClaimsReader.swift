// libFuzzer target for the readers of a token's header and claims (Fuzz/README.md): StrictJSONObject, the one-pass
// reader, and LazyJSONObject, which keeps where each member is and makes its value when asked for.
//
// Input: one JSON document's bytes (a payload as decoded from its base64url). A differential against
// StrictJSON.parse, at the depth limit tokens are read with (32) and at 2 (where a member's object or
// array is already at the limit). Besides "no crash, no hang", it checks of both readers:
// - the reader refuses exactly what StrictJSON refuses, with the same message at the same offset;
// - an object it accepts has the same members and values as StrictJSON's object (LazyJSONObject: each member
//   looked up by its name, and the whole object made at once);
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
        checkLazyReader(input, maxDepth: maxDepth, against: reference)
    }
    return 0
}

/// LazyJSONObject against StrictJSON's verdict and object.
private func checkLazyReader(_ input: UnsafeBufferPointer<UInt8>, maxDepth: Int, against reference: Result<JSONValue, StrictJSONError>) {
    let read = Result { () throws(StrictJSONError) in try LazyJSONObject.read(Array(input), maxDepth: maxDepth) }
    switch (reference, read) {
    case (.failure(let expected), .failure(let error)):
        require(error == expected, "depth \(maxDepth): the lazy reader refused with \(error), StrictJSON with \(expected)")
    case (.success(let value), .success(let object)):
        guard let members = value.objectValue else {
            require(object == nil, "depth \(maxDepth): the lazy reader found an object in \(value.compactJSON)")
            return
        }
        guard let object else { fatalError("depth \(maxDepth): the lazy reader found no object in \(value.compactJSON)") }
        require(object.count == members.count, "depth \(maxDepth): the lazy reader counted \(object.count) members, StrictJSON \(members.count)")
        for (name, expected) in members {
            require(object[name] == expected, "depth \(maxDepth): the lazy reader's \(name) is \(String(describing: object[name])), StrictJSON's \(expected)")
        }
        require(object.dictionary == members, "depth \(maxDepth): the lazy reader made \(object.dictionary), StrictJSON \(members)")
    case (.failure(let expected), .success(let object)):
        fatalError("depth \(maxDepth): the lazy reader accepted what StrictJSON refuses (\(expected)): \(String(describing: object?.dictionary))")
    case (.success(let value), .failure(let error)):
        fatalError("depth \(maxDepth): the lazy reader refused (\(error)) what StrictJSON accepts: \(value.compactJSON)")
    }
}
