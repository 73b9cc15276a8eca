// libFuzzer target for StrictJSON.parse (Fuzz/README.md).
//
// Input: one JSON document's bytes. Refusals (StrictJSONError) are expected. Besides "no crash, no
// hang", it checks:
// - a refusal's offset lies within the document;
// - an accepted document's `compactJSON` parses again, to an equal value, whose `compactJSON` is the
//   same text (serialization round-trips and is deterministic);
// - the validator that makes no values (`StrictJSON.validate`) gives the same verdict, and the MCP message scan
//   (`MCPMessage.scan`) accepts exactly what the tree reader accepts, with the same message (issue 56).
@testable import Gatehouse
import FuzzSupport
import GatehouseSyntax

/// One input (libFuzzer's entry point calls it, Fuzz/Entry/FuzzStrictJSON; FuzzReplayTests replays the seeds through it).
public func fuzzStrictJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeBufferPointer(start: data, count: size)
    let validated = (try? StrictJSON.validate(input)) != nil
    require(validated == ((try? StrictJSON.parse(input)) != nil), "the validator and the parser disagree")
    let scanned = MCPMessage.scan(input)
    let tree = try? MCPMessage.readTree(input).get()
    require(scanned == tree, "the MCP scan reads \(String(describing: scanned)), the tree \(String(describing: tree))")
    let value: JSONValue
    do {
        value = try StrictJSON.parse(input)
    } catch {
        if printOutcome { print(error) }
        require(error.offset >= 0 && error.offset <= size, "error offset \(error.offset) outside \(size) bytes: \(error)")
        return 0
    }
    let text = value.compactJSON
    if printOutcome { print(text) }
    let again: JSONValue
    do {
        again = try StrictJSON.parse(Array(text.utf8))
    } catch {
        fatalError("compactJSON of an accepted document is refused: \(error)\n\(text)")
    }
    require(again == value, "compactJSON parses to a different value:\n\(text)")
    require(Array(again.compactJSON.utf8) == Array(text.utf8), "compactJSON is not deterministic:\n\(text)\n\(again.compactJSON)")
    return 0
}
