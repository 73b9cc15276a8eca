import Foundation  // EXPLORE (temporary)
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

@testable import Gatehouse

// MARK: - Harness shared with HTTP1RequestParserDifferentialTests

/// Bytes shown as an escaped string in failure messages (controls, CR, LF and non-ASCII visible).
struct RequestBytes: Equatable, Hashable, ExpressibleByStringLiteral, CustomStringConvertible {
    var bytes: [UInt8]

    init(_ bytes: [UInt8]) { self.bytes = bytes }
    init(stringLiteral text: String) { bytes = Array(text.utf8) }

    var description: String {
        var text = "\""
        for byte in bytes {
            switch byte {
            case 0x0D: text += "\\r"
            case 0x0A: text += "\\n"
            case 0x09: text += "\\t"
            case 0x22: text += "\\\""
            case 0x5C: text += "\\\\"
            case 0x20...0x7E: text.unicodeScalars.append(Unicode.Scalar(byte))
            default: text += "\\x" + (byte < 0x10 ? "0" : "") + String(byte, radix: 16)
            }
        }
        return text + "\""
    }
}

/// One field line of a head or trailer section as a decoder reported it.
struct DecodedField: Equatable, CustomStringConvertible {
    var name: String
    var value: String

    var description: String { "\(RequestBytes(stringLiteral: name)): \(RequestBytes(stringLiteral: value))" }

    static func list(_ pairs: KeyValuePairs<String, String>) -> [DecodedField] {
        pairs.map { DecodedField(name: $0.key, value: $0.value) }
    }
}

/// A request part in the form two decoders' outputs are compared in: heads by method, target, version and
/// field list (in order), bodies merged (where a body is cut depends on how the bytes arrived, the bytes
/// themselves must not), trailers as a field list (nil when there were none).
enum DecodedPart: Equatable, CustomStringConvertible {
    case head(method: String, uri: String, version: HTTPVersion, fields: [DecodedField])
    case body(RequestBytes)
    case end(trailers: [DecodedField]?)

    static func head(_ method: String, _ uri: String, _ version: HTTPVersion = .http1_1, _ fields: KeyValuePairs<String, String> = [:])
        -> DecodedPart
    {
        .head(method: method, uri: uri, version: version, fields: DecodedField.list(fields))
    }

    static let end = DecodedPart.end(trailers: nil)

    static func end(_ trailers: KeyValuePairs<String, String>) -> DecodedPart {
        .end(trailers: DecodedField.list(trailers))
    }

    var isEnd: Bool {
        if case .end = self { return true }
        return false
    }

    var description: String {
        switch self {
        case .head(let method, let uri, let version, let fields):
            "head(\(RequestBytes(stringLiteral: method)) \(RequestBytes(stringLiteral: uri)) \(version) \(fields))"
        case .body(let bytes): "body(\(bytes))"
        case .end(let trailers): "end(\(trailers.map { "\($0)" } ?? "nil"))"
        }
    }
}

/// What a decoder made of some bytes.
struct DecodeOutcome: Equatable, CustomStringConvertible {
    var parts: [DecodedPart] = []
    /// The error that refused the bytes (thrown while reading them); nil if they were accepted.
    var refusal: HTTPParserError?
    /// Accepted, but the input ended inside a request: the end of input was then an error.
    var cutShort = false
    /// Bytes handed on unparsed (by `decodeLast` when the decoder is removed after a protocol switch).
    var unparsed: RequestBytes?

    var isRefused: Bool { refusal != nil }

    /// The parts of the requests that ended, without the unfinished one's.
    var completedRequestParts: [DecodedPart] {
        guard let lastEnd = parts.lastIndex(where: \.isEnd) else { return [] }
        return Array(parts[...lastEnd])
    }

    /// How many requests ended.
    var completedRequests: Int { parts.count(where: \.isEnd) }

    mutating func record(_ part: HTTPServerRequestPart) {
        switch part {
        case .head(let head):
            parts.append(.head(
                method: head.method.rawValue, uri: head.uri, version: head.version,
                fields: head.headers.map { DecodedField(name: $0.name, value: $0.value) }))
        case .body(let buffer):
            let bytes = Array(buffer.readableBytesView)
            if case .body(let earlier) = parts.last {
                parts[parts.count - 1] = .body(RequestBytes(earlier.bytes + bytes))
            } else {
                parts.append(.body(RequestBytes(bytes)))
            }
        case .end(let trailers):
            parts.append(.end(trailers: trailers.map { $0.map { DecodedField(name: $0.name, value: $0.value) } }))
        }
    }

    var description: String {
        var text = "\(parts)"
        if let refusal { text += " refused(\(refusal))" }
        if cutShort { text += " cutShort" }
        if let unparsed { text += " unparsed(\(unparsed))" }
        return text
    }
}

/// The two request decoders under comparison, each behind a `ByteToMessageHandler` in an `EmbeddedChannel`.
enum RequestDecoderUnderTest: String, CaseIterable, CustomStringConvertible {
    /// Gatehouse's own parser (`HTTP1RequestDecoder`).
    case gatehouse
    /// NIO's llhttp-based `HTTPRequestDecoder`, no lenient settings.
    case llhttp

    static let maxHeaderBytes = 8192

    var description: String { rawValue }

    private func makeHandler() -> any RemovableChannelHandler {
        switch self {
        case .gatehouse:
            return ByteToMessageHandler(HTTP1RequestDecoder(maxHeaderBytes: Self.maxHeaderBytes))
        case .llhttp:
            var limits = NIOHTTPDecoderLimitConfiguration()
            limits.maxHeaderListSize = Self.maxHeaderBytes
            limits.maxHeaderFieldSize = Self.maxHeaderBytes
            return ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .forwardBytes, limitConfiguration: limits))
        }
    }

    /// Writes `reads` one after the other, taking every part after each, then ends the input: by closing
    /// the channel (EOF: an error there means the input was cut short) or, with `removingDecoder`, by
    /// removing the decoder (which hands on the bytes it left unparsed, as after a protocol switch).
    func decode(_ reads: [[UInt8]], removingDecoder: Bool = false) -> DecodeOutcome {
        let channel = EmbeddedChannel()
        let handler = makeHandler()
        var outcome = DecodeOutcome()
        do {
            try channel.pipeline.syncOperations.addHandler(handler)
        } catch {
            Issue.record("could not add the \(self) decoder: \(error)")
            return outcome
        }
        for read in reads {
            do {
                try channel.writeInbound(ByteBuffer(bytes: read))
            } catch {
                outcome.refusal = Self.parserError(error)
            }
            Self.takeParts(from: channel, into: &outcome)
            if outcome.refusal != nil { break }
        }
        if outcome.refusal == nil && removingDecoder {
            channel.pipeline.syncOperations.removeHandler(handler).whenFailure { Issue.record("removing the decoder: \($0)") }
            channel.embeddedEventLoop.run()
            Self.takeParts(from: channel, into: &outcome)
            if (try? channel.throwIfErrorCaught()) == nil { outcome.cutShort = true }
        }
        do {
            if case .leftOvers(let inbound, _, _) = try channel.finish(), !inbound.isEmpty {
                Issue.record("\(self): \(inbound.count) inbound messages left at the end of input")
            }
        } catch {
            if outcome.refusal == nil && !removingDecoder {
                outcome.cutShort = true
                if Self.parserError(error) != .invalidEOFState {
                    Issue.record("\(self): the end of input threw \(error), expected invalidEOFState")
                }
            }
        }
        return outcome
    }

    private static func takeParts(from channel: EmbeddedChannel, into outcome: inout DecodeOutcome) {
        do {
            while let item = try channel.readInbound(as: Any.self) {
                if let part = item as? HTTPServerRequestPart {
                    outcome.record(part)
                } else if let buffer = item as? ByteBuffer {
                    outcome.unparsed = RequestBytes((outcome.unparsed?.bytes ?? []) + Array(buffer.readableBytesView))
                } else {
                    Issue.record("unexpected inbound message \(item)")
                }
            }
        } catch {
            Issue.record("reading inbound: \(error)")
        }
    }

    /// The `HTTPParserError` a decoder refused with; any other error is reported and counted as an internal-state refusal.
    private static func parserError(_ error: any Error) -> HTTPParserError {
        if let parserError = error as? HTTPParserError { return parserError }
        Issue.record("a decoder threw \(error) (\(type(of: error))), not an HTTPParserError")
        return .invalidInternalState
    }
}

extension Array where Element == UInt8 {
    /// The bytes cut at `offsets` (ascending, within bounds) into consecutive reads (empty ones too).
    func reads(splitAt offsets: [Int]) -> [[UInt8]] {
        var reads: [[UInt8]] = []
        var start = 0
        for offset in offsets {
            reads.append(Array(self[start..<offset]))
            start = offset
        }
        reads.append(Array(self[start...]))
        return reads
    }
}

// MARK: - The corpus

/// A corpus of request-smuggling and malformed-request inputs, each with the outcome Gatehouse's parser must
/// give (accepted with an exact framing, or refused) and a check that NIO's llhttp decoder (the one it
/// replaces) agrees, except where a case says why the parser is deliberately stricter.
struct HTTP1RequestSmugglingCorpusTests {
    enum Expected: CustomStringConvertible {
        /// Accepted: exactly these parts (heads, merged bodies, ends with trailers), then possibly more bytes
        /// waiting for a request not finished (`cutShort`: the end of input would be an error).
        case accepted([DecodedPart], cutShort: Bool = false)
        /// Refused (431 when `headerOverflow`, else 400), after exactly the parts of the requests in `after`
        /// (those before the bad one, which are answered; the bad one and anything behind it never are).
        case refused(headerOverflow: Bool = false, after: [DecodedPart] = [])

        var description: String {
            switch self {
            case .accepted(let parts, let cutShort): "accepted(\(parts)\(cutShort ? ", cutShort" : ""))"
            case .refused(let overflow, let after): "refused(\(overflow ? "431" : "400"), after: \(after))"
            }
        }
    }

    struct Case: CustomTestStringConvertible, Sendable {
        let name: String
        let bytes: [UInt8]
        let expected: Expected
        /// Why Gatehouse refuses what llhttp accepts; nil when llhttp must give the expected outcome too.
        let stricterThanLLHTTP: String?

        init(_ name: String, _ text: String, _ expected: Expected, stricterThanLLHTTP: String? = nil) {
            self.init(name, bytes: Array(text.utf8), expected, stricterThanLLHTTP: stricterThanLLHTTP)
        }

        init(_ name: String, bytes: [UInt8], _ expected: Expected, stricterThanLLHTTP: String? = nil) {
            self.name = name
            self.bytes = bytes
            self.expected = expected
            self.stricterThanLLHTTP = stricterThanLLHTTP
        }

        var testDescription: String { name }
    }

    /// Whether `outcome` is what `expected` describes.
    static func matches(_ outcome: DecodeOutcome, _ expected: Expected) -> Bool {
        switch expected {
        case .accepted(let parts, let cutShort):
            return outcome.refusal == nil && outcome.parts == parts && outcome.cutShort == cutShort
        case .refused(let headerOverflow, let after):
            guard let refusal = outcome.refusal else { return false }
            return (refusal == .headerOverflow) == headerOverflow && outcome.completedRequestParts == after
        }
    }

    /// Ways of cutting `bytes` into reads: whole, byte by byte, and in two at a few offsets.
    static func splits(of bytes: [UInt8]) -> [(String, [[UInt8]])] {
        var splits: [(String, [[UInt8]])] = [("whole", [bytes]), ("byte by byte", bytes.map { [$0] })]
        for offset in Set([1, 7, bytes.count / 2, bytes.count - 1]).sorted() where offset > 0 && offset < bytes.count {
            splits.append(("split at \(offset)", bytes.reads(splitAt: [offset])))
        }
        return splits
    }

    @Test(arguments: Self.corpus)
    func gatehouseGivesTheExpectedOutcome(_ testCase: Case) {
        for (how, reads) in Self.splits(of: testCase.bytes) {
            let outcome = RequestDecoderUnderTest.gatehouse.decode(reads)
            #expect(Self.matches(outcome, testCase.expected), "\(RequestBytes(testCase.bytes)) fed \(how): \(outcome), expected \(testCase.expected)")
        }
    }

    @Test(arguments: Self.corpus)
    func llhttpAgreesExceptWhereGatehouseIsDocumentedStricter(_ testCase: Case) {
        let outcome = RequestDecoderUnderTest.llhttp.decode([testCase.bytes])
        if let reason = testCase.stricterThanLLHTTP {
            // Keep the documentation true: if llhttp refuses this too, the mark is stale.
            #expect(!outcome.isRefused, "llhttp refuses \(RequestBytes(testCase.bytes)) too (\(outcome)): drop the mark '\(reason)'")
            guard case .refused = testCase.expected else {
                Issue.record("a case marked stricterThanLLHTTP must expect a refusal")
                return
            }
        } else {
            #expect(Self.matches(outcome, testCase.expected), "llhttp: \(RequestBytes(testCase.bytes)): \(outcome), expected \(testCase.expected)")
        }
    }

    // MARK: Exploration (temporary)

    @Test func explore() throws {
        guard let file = try? String(contentsOfFile: "/tmp/gh-explore.txt", encoding: .utf8) else { return }
        for line in file.split(separator: "\n") {
            var bytes: [UInt8] = []
            var iterator = Array(line.utf8).makeIterator()
            while let byte = iterator.next() {
                guard byte == UInt8(ascii: "\\") else { bytes.append(byte); continue }
                switch iterator.next() {
                case UInt8(ascii: "r"): bytes.append(0x0D)
                case UInt8(ascii: "n"): bytes.append(0x0A)
                case UInt8(ascii: "t"): bytes.append(0x09)
                case UInt8(ascii: "x"):
                    let hex = String(decoding: [iterator.next()!, iterator.next()!], as: UTF8.self)
                    bytes.append(UInt8(hex, radix: 16)!)
                case let other?: bytes.append(other)
                case nil: break
                }
            }
            func short(_ outcome: DecodeOutcome) -> String {
                let text = "\(outcome)"
                return text.count > 300 ? "\(outcome.parts.count) parts, \(outcome.completedRequests) requests, refusal \(outcome.refusal.map { "\($0)" } ?? "none") cutShort \(outcome.cutShort)" : text
            }
            let shown = "\(RequestBytes(bytes))"
            print("EXPLORE", shown.count > 300 ? String(shown.prefix(150)) + "…(\(bytes.count) bytes)" : shown,
                  "\n   gatehouse:", short(RequestDecoderUnderTest.gatehouse.decode([bytes])),
                  "\n   llhttp:   ", short(RequestDecoderUnderTest.llhttp.decode([bytes])))
        }
    }

    static let corpus: [Case] = []
}
