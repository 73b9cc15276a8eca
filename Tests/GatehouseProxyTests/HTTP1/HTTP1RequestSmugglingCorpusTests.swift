import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing


// MARK: - Harness (shared with HTTP1RequestParserDifferentialTests)

/// Runs bytes through Gatehouse's request decoder and through NIO's llhttp decoder (the one it replaced,
/// kept here as an oracle) and gives what each made of them in one comparable form.
enum LLHTTPComparison {
    /// Bytes shown escaped in failure messages (CR, LF, controls and non-ASCII visible).
    struct Bytes: Equatable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
        var bytes: [UInt8]

        init(_ bytes: [UInt8]) { self.bytes = bytes }
        init(stringLiteral text: String) { bytes = Array(text.utf8) }

        var description: String { Self.escaped(bytes) }

        static func escaped(_ bytes: some Sequence<UInt8>) -> String {
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

    /// One field line of a head or trailer section.
    struct Field: Equatable, Sendable, CustomStringConvertible {
        var name: String
        var value: String

        var description: String { "\(Bytes.escaped(name.utf8)): \(Bytes.escaped(value.utf8))" }

        static func list(_ pairs: KeyValuePairs<String, String>) -> [Field] {
            pairs.map { Field(name: $0.key, value: $0.value) }
        }
    }

    /// A request part: heads by method, target, version and field list (in order); bodies merged (where a
    /// body is cut depends on how the bytes arrived, the bytes must not); trailers as a field list, nil when
    /// there were none.
    enum Part: Equatable, Sendable, CustomStringConvertible {
        case head(method: String, uri: String, version: HTTPVersion, fields: [Field])
        case body(Bytes)
        case end(trailers: [Field]?)

        static func head(_ method: String, _ uri: String, _ version: HTTPVersion = .http1_1, _ fields: KeyValuePairs<String, String> = [:])
            -> Part
        {
            .head(method: method, uri: uri, version: version, fields: Field.list(fields))
        }

        static let end = Part.end(trailers: nil)

        static func end(_ trailers: KeyValuePairs<String, String>) -> Part {
            .end(trailers: Field.list(trailers))
        }

        var isEnd: Bool {
            if case .end = self { return true }
            return false
        }

        var description: String {
            switch self {
            case .head(let method, let uri, let version, let fields):
                "head(\(method) \(Bytes.escaped(uri.utf8)) \(version) \(fields))"
            case .body(let bytes): "body(\(bytes))"
            case .end(let trailers): "end(\(trailers.map { "\($0)" } ?? "nil"))"
            }
        }
    }

    /// What a decoder made of some bytes.
    struct Outcome: Equatable, Sendable, CustomStringConvertible {
        var parts: [Part] = []
        /// Why the bytes were refused: the error thrown while reading them, or `.invalidEOFState` when the
        /// input ended inside a request. nil: accepted.
        var refusal: HTTPParserError?
        /// The refusal came only at the end of input: the decoder was waiting for more of a request.
        var refusedAtEndOfInput = false
        /// Bytes handed on unparsed when the decoder was removed (after a protocol switch).
        var unparsed: Bytes?

        var isRefused: Bool { refusal != nil }

        /// The requests that ended, each as its parts.
        var requests: [[Part]] {
            var requests: [[Part]] = []
            var current: [Part] = []
            for part in parts {
                current.append(part)
                if part.isEnd {
                    requests.append(current)
                    current = []
                }
            }
            return requests
        }

        /// The parts of the requests that ended, without the unfinished one's.
        var completedRequestParts: [Part] {
            guard let lastEnd = parts.lastIndex(where: \.isEnd) else { return [] }
            return Array(parts[...lastEnd])
        }

        var completedRequestCount: Int { parts.count(where: \.isEnd) }

        mutating func record(_ part: HTTPServerRequestPart, normalizingLLHTTP: Bool) {
            switch part {
            case .head(let head):
                var method = head.method.rawValue
                // NIO names llhttp's M-SEARCH `.MSEARCH`, whose rawValue drops the dash.
                if normalizingLLHTTP && method == "MSEARCH" { method = "M-SEARCH" }
                parts.append(.head(
                    method: method, uri: head.uri, version: head.version,
                    fields: Self.fields(head.headers, normalizingLLHTTP: normalizingLLHTTP)))
            case .body(let buffer):
                let bytes = Array(buffer.readableBytesView)
                if case .body(let earlier) = parts.last {
                    parts[parts.count - 1] = .body(Bytes(earlier.bytes + bytes))
                } else {
                    parts.append(.body(Bytes(bytes)))
                }
            case .end(let trailers):
                parts.append(.end(trailers: trailers.map { Self.fields($0, normalizingLLHTTP: normalizingLLHTTP) }))
            }
        }

        /// llhttp leaves trailing whitespace in field values (RFC 9112 §5: OWS is not part of the value);
        /// Gatehouse trims it. Compared without it.
        private static func fields(_ headers: HTTPHeaders, normalizingLLHTTP: Bool) -> [Field] {
            headers.map { header in
                var value = Substring(header.value)
                if normalizingLLHTTP {
                    while let last = value.last, last == " " || last == "\t" { value = value.dropLast() }
                }
                return Field(name: header.name, value: String(value))
            }
        }

        var description: String {
            var text = "\(parts)"
            if let refusal { text += refusedAtEndOfInput ? " cut short (\(refusal))" : " refused (\(refusal))" }
            if let unparsed { text += " unparsed \(unparsed)" }
            return text
        }
    }

    /// The two decoders compared, each in a `ByteToMessageHandler` in an `EmbeddedChannel`.
    enum Decoder: String, CaseIterable, Sendable, CustomStringConvertible {
        /// Gatehouse's parser (`HTTP1RequestDecoder`).
        case gatehouse
        /// NIO's llhttp `HTTPRequestDecoder`, no lenient settings.
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

        /// Writes `reads` one after the other, taking the parts after each, then ends the input: by closing
        /// the channel (an error then means a request was cut short) or, with `removingDecoder`, by removing
        /// the decoder, which hands on what it left unparsed (as after a protocol switch).
        func decode(_ reads: [[UInt8]], removingDecoder: Bool = false) -> Outcome {
            let channel = EmbeddedChannel()
            let handler = makeHandler()
            var outcome = Outcome()
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
                takeParts(from: channel, into: &outcome)
                if outcome.isRefused { break }
            }
            if !outcome.isRefused && removingDecoder {
                channel.pipeline.syncOperations.removeHandler(handler).whenFailure { Issue.record("removing the decoder: \($0)") }
                channel.embeddedEventLoop.run()
                takeParts(from: channel, into: &outcome)
            }
            do {
                if case .leftOvers(let inbound, _, _) = try channel.finish(), !inbound.isEmpty {
                    Issue.record("\(self): \(inbound.count) messages produced at the end of input")
                }
            } catch {
                if !outcome.isRefused && !removingDecoder {
                    outcome.refusal = Self.parserError(error)
                    outcome.refusedAtEndOfInput = true
                }
            }
            return outcome
        }

        private func takeParts(from channel: EmbeddedChannel, into outcome: inout Outcome) {
            do {
                while let item = try channel.readInbound(as: Any.self) {
                    if let part = item as? HTTPServerRequestPart {
                        outcome.record(part, normalizingLLHTTP: self == .llhttp)
                    } else if let buffer = (item as? ByteBuffer) ?? (item as? IOData).flatMap(Self.byteBuffer) {
                        outcome.unparsed = Bytes((outcome.unparsed?.bytes ?? []) + Array(buffer.readableBytesView))
                    } else {
                        Issue.record("\(self): unexpected inbound message \(item)")
                    }
                }
            } catch {
                Issue.record("\(self): reading inbound: \(error)")
            }
        }

        private static func byteBuffer(_ data: IOData) -> ByteBuffer? {
            if case .byteBuffer(let buffer) = data { return buffer }
            return nil
        }

        private static func parserError(_ error: any Error) -> HTTPParserError {
            if let parserError = error as? HTTPParserError { return parserError }
            Issue.record("a decoder threw \(error) (\(type(of: error))), not an HTTPParserError")
            return .invalidInternalState
        }
    }
}

extension Array where Element == UInt8 {
    /// The bytes cut at `offsets` (ascending, within bounds) into consecutive reads.
    func reads(cutAt offsets: [Int]) -> [[UInt8]] {
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

/// A request-smuggling corpus: each case is raw bytes and the outcome Gatehouse's parser must give, accepted
/// with an exact framing or refused, whole and however the bytes are cut into reads. NIO's llhttp decoder (the
/// parser Gatehouse replaced) must give the same decision and framing, except where a case documents why
/// Gatehouse is deliberately stricter (`stricterThanLLHTTP`) or frames differently (`llhttpDiffers`).
struct HTTP1RequestSmugglingCorpusTests {
    typealias Part = LLHTTPComparison.Part
    typealias Outcome = LLHTTPComparison.Outcome
    typealias Decoder = LLHTTPComparison.Decoder

    enum Expected: Sendable, CustomStringConvertible {
        /// Accepted: exactly these parts. With `unparsed`, the connection switched protocols and these bytes
        /// were left for the new protocol, never parsed as HTTP/1.1.
        case accepted([Part], unparsed: String? = nil)
        /// Refused as the bytes arrive (431 when `headerOverflow`, else 400), after exactly the parts of the
        /// requests in `after`: those before the bad one are answered, the bad one and anything behind it never.
        case refused(headerOverflow: Bool = false, after: [Part] = [])
        /// No error while reading, but the input ended inside a request (the decoder waits for more of it:
        /// nothing of it is answered); `parts` is everything handed on.
        case cutShort([Part])

        var description: String {
            switch self {
            case .accepted(let parts, let unparsed): "accepted \(parts)" + (unparsed.map { " unparsed \(LLHTTPComparison.Bytes(stringLiteral: $0))" } ?? "")
            case .refused(let overflow, let after): "refused (\(overflow ? "431" : "400")) after \(after)"
            case .cutShort(let parts): "cut short after \(parts)"
            }
        }

        var unparsed: String? {
            if case .accepted(_, let unparsed) = self { return unparsed }
            return nil
        }
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let bytes: [UInt8]
        let expected: Expected
        /// Why Gatehouse refuses what llhttp accepts (llhttp must accept it, or the note is stale).
        let stricterThanLLHTTP: String?
        /// Where llhttp frames it otherwise without either refusing: why, and llhttp's outcome.
        let llhttpDiffers: (reason: String, llhttp: Expected)?

        init(
            _ name: String, _ text: String, _ expected: Expected, stricterThanLLHTTP: String? = nil,
            llhttpDiffers: (reason: String, llhttp: Expected)? = nil
        ) {
            self.init(name, bytes: Array(text.utf8), expected, stricterThanLLHTTP: stricterThanLLHTTP, llhttpDiffers: llhttpDiffers)
        }

        init(
            _ name: String, bytes: [UInt8], _ expected: Expected, stricterThanLLHTTP: String? = nil,
            llhttpDiffers: (reason: String, llhttp: Expected)? = nil
        ) {
            self.name = name
            self.bytes = bytes
            self.expected = expected
            self.stricterThanLLHTTP = stricterThanLLHTTP
            self.llhttpDiffers = llhttpDiffers
        }

        var testDescription: String { name }
    }

    /// Whether `outcome` is exactly what `expected` says (Gatehouse's parser).
    static func matchesExactly(_ outcome: Outcome, _ expected: Expected) -> Bool {
        switch expected {
        case .accepted(let parts, let unparsed):
            return !outcome.isRefused && outcome.parts == parts && outcome.unparsed?.bytes == unparsed.map { Array($0.utf8) }
        case .refused(let headerOverflow, let after):
            guard let refusal = outcome.refusal, !outcome.refusedAtEndOfInput else { return false }
            return (refusal == .headerOverflow) == headerOverflow && outcome.completedRequestParts == after
        case .cutShort(let parts):
            return outcome.refusedAtEndOfInput && outcome.parts == parts
        }
    }

    /// Whether llhttp made the same decision and framing. When a refusal comes is not compared (llhttp refuses a
    /// bad request line at its first bad byte, Gatehouse once the whole head has arrived): a request refused by
    /// its bytes and one waiting for more when the input ends are both never answered.
    static func llhttpAgrees(_ outcome: Outcome, _ expected: Expected) -> Bool {
        switch expected {
        case .accepted:
            return matchesExactly(outcome, expected)
        case .refused(let headerOverflow, let after):
            guard let refusal = outcome.refusal else { return false }
            return (refusal == .headerOverflow) == headerOverflow && outcome.completedRequestParts == after
        case .cutShort(let parts):
            guard outcome.isRefused else { return false }
            return outcome.refusedAtEndOfInput ? outcome.parts == parts : outcome.completedRequestParts == completed(parts)
        }
    }

    private static func completed(_ parts: [Part]) -> [Part] {
        guard let lastEnd = parts.lastIndex(where: \.isEnd) else { return [] }
        return Array(parts[...lastEnd])
    }

    /// Whole, byte by byte, and in two reads at a few places.
    static func readings(of bytes: [UInt8]) -> [(how: String, reads: [[UInt8]])] {
        var readings: [(String, [[UInt8]])] = [("whole", [bytes]), ("byte by byte", bytes.map { [$0] })]
        for offset in Set([1, 7, bytes.count / 2, bytes.count - 1]).sorted() where offset > 0 && offset < bytes.count {
            readings.append(("in two at \(offset)", bytes.reads(cutAt: [offset])))
        }
        return readings
    }

    @Test(arguments: Self.corpus)
    func gatehouseGivesTheExpectedOutcomeHoweverTheBytesArrive(_ corpusCase: Case) {
        let readings = Self.readings(of: corpusCase.bytes)
        let outcomes = readings.map { Decoder.gatehouse.decode($0.reads, removingDecoder: corpusCase.expected.unparsed != nil) }
        let bytes = LLHTTPComparison.Bytes(corpusCase.bytes)
        if !Self.matchesExactly(outcomes[0], corpusCase.expected) {
            Issue.record("Gatehouse on \(bytes):\n  got      \(outcomes[0])\n  expected \(corpusCase.expected)")
        }
        let differing = zip(readings, outcomes).dropFirst().filter { $0.1 != outcomes[0] }
        if let (reading, outcome) = differing.first {
            Issue.record("Gatehouse on \(bytes) fed \(reading.how) (and \(differing.count - 1) other ways): \(outcome), whole: \(outcomes[0])")
        }
    }

    @Test(arguments: Self.corpus)
    func llhttpAgreesExceptWhereDocumented(_ corpusCase: Case) {
        let bytes = LLHTTPComparison.Bytes(corpusCase.bytes)
        if let reason = corpusCase.stricterThanLLHTTP {
            guard case .refused = corpusCase.expected else {
                Issue.record("a case stricter than llhttp must expect a refusal")
                return
            }
            // Accepting includes waiting for the rest of a request whose head it accepted (a huge length).
            let outcome = Decoder.llhttp.decode([corpusCase.bytes])
            if outcome.isRefused && !outcome.refusedAtEndOfInput {
                Issue.record("llhttp refuses \(bytes) too (\(outcome)): the note '\(reason)' is stale")
            }
        } else if case let (reason, llhttpExpected)? = corpusCase.llhttpDiffers {
            let outcome = Decoder.llhttp.decode([corpusCase.bytes], removingDecoder: llhttpExpected.unparsed != nil)
            if !Self.llhttpAgrees(outcome, llhttpExpected) {
                Issue.record("llhttp no longer differs as noted ('\(reason)') on \(bytes):\n  got      \(outcome)\n  expected \(llhttpExpected)")
            }
        } else {
            let outcome = Decoder.llhttp.decode([corpusCase.bytes], removingDecoder: corpusCase.expected.unparsed != nil)
            if !Self.llhttpAgrees(outcome, corpusCase.expected) {
                Issue.record("llhttp on \(bytes):\n  got      \(outcome)\n  expected \(corpusCase.expected)")
            }
        }
    }

    // MARK: Cases

    static let host = "Host: a\r\n"
    static let utf8Values = "field values are UTF-8 or refused (reference §4.9)"
    static let get = "GET / HTTP/1.1\r\n\(host)"
    static let post = "POST / HTTP/1.1\r\n\(host)"
    static let chunkedPost = "\(post)Transfer-Encoding: chunked\r\n\r\n"

    static func getHead(_ uri: String = "/", _ version: HTTPVersion = .http1_1) -> Part { .head("GET", uri, version, ["Host": "a"]) }
    static func postHead(_ fields: KeyValuePairs<String, String>) -> Part {
        .head(method: "POST", uri: "/", version: .http1_1, fields: [LLHTTPComparison.Field(name: "Host", value: "a")] + LLHTTPComparison.Field.list(fields))
    }
    static let chunkedPostHead = postHead(["Transfer-Encoding": "chunked"])
    static let aGet: [Part] = [getHead(), .end]
    static func body(_ text: String) -> Part { .body(LLHTTPComparison.Bytes(stringLiteral: text)) }

    /// A chunked POST whose body is `chunks` (the chunk lines and data, up to but not including the last chunk).
    static func chunked(_ chunks: String, lastChunk: String = "0\r\n\r\n") -> String { chunkedPost + chunks + lastChunk }

    static let corpus: [Case] = framing + clte + transferEncoding + contentLength + chunkLines + trailers + lineEndings
        + controlBytes + requestLines + targets + sizes + pipelining + protocolSwitches + connectionClose

    static let framing: [Case] = [
        Case("GET without a body", "\(get)\r\n", .accepted(aGet)),
        Case("Content-Length body", "\(post)Content-Length: 5\r\n\r\nhello", .accepted([postHead(["Content-Length": "5"]), body("hello"), .end])),
        Case("Content-Length 0", "\(post)Content-Length: 0\r\n\r\n", .accepted([postHead(["Content-Length": "0"]), .end])),
        Case("Content-Length with leading zeros", "\(post)Content-Length: 005\r\n\r\nhello",
             .accepted([postHead(["Content-Length": "005"]), body("hello"), .end])),
        Case("Content-Length in any case", "\(post)cOnTeNt-LeNgTh: 2\r\n\r\nok", .accepted([postHead(["cOnTeNt-LeNgTh": "2"]), body("ok"), .end])),
        Case("chunked body with extensions and trailers",
             chunked("5\r\nhello\r\n6;name=value;q=\"a \\\" b\"\r\n world\r\n", lastChunk: "0;last\r\nX-Checksum: abc\r\nX-Other:  2 \r\n\r\n"),
             .accepted([chunkedPostHead, body("hello world"), .end(["X-Checksum": "abc", "X-Other": "2"])])),
        Case("chunked body without trailers", chunked("3\r\nabc\r\n"), .accepted([chunkedPostHead, body("abc"), .end])),
        Case("chunk sizes in hex, either case, with leading zeros", chunked("a\r\n0123456789\r\nA\r\n0123456789\r\n010\r\n0123456789abcdef\r\n", lastChunk: "000\r\n\r\n"),
             .accepted([chunkedPostHead, body("01234567890123456789" + "0123456789abcdef"), .end])),
        Case("empty chunked body", chunked(""), .accepted([chunkedPostHead, .end])),
        Case("chunk data holding CRLF and a request", chunked("15\r\n\r\nGET /x HTTP/1.1\r\n\r\n\r\n"),
             .accepted([chunkedPostHead, body("\r\nGET /x HTTP/1.1\r\n\r\n"), .end])),
        Case("Content-Length body holding a request", "\(post)Content-Length: 19\r\n\r\nGET /x HTTP/1.1\r\n\r\n",
             .accepted([postHead(["Content-Length": "19"]), body("GET /x HTTP/1.1\r\n\r\n"), .end])),
        Case("empty lines before the request line", "\r\n\r\n\(get)\r\n", .accepted(aGet)),
        Case("OWS around a value, empty value, colon in a value", "\(get)X-A: \t 1 \t \r\nX-B:\r\nX-C:: c:d\r\nX-D:x\r\n\r\n",
             .accepted([.head("GET", "/", .http1_1, ["Host": "a", "X-A": "1", "X-B": "", "X-C": ": c:d", "X-D": "x"]), .end])),
        Case("every tchar in a field name", "\(get)!#$%&'*+-.^_`|~09azAZ: 1\r\n\r\n",
             .accepted([.head("GET", "/", .http1_1, ["Host": "a", "!#$%&'*+-.^_`|~09azAZ": "1"]), .end])),
        // Field values are forwarded byte for byte or refused (reference §4.9, security H20): a string cannot hold
        // other bytes, and the HTTP/2 door sees U+FFFD where they were.
        Case("obs-text that is not UTF-8 in a value", bytes: Array("\(get)X-A: a".utf8) + [0x80, 0xFF] + Array("b\r\n\r\n".utf8),
             .refused(), stricterThanLLHTTP: utf8Values),
        Case("an overlong UTF-8 form in a value", bytes: Array("\(get)X-A: a".utf8) + [0xC0, 0xAF] + Array("\r\n\r\n".utf8),
             .refused(), stricterThanLLHTTP: utf8Values),
        Case("a UTF-8 surrogate in a value", bytes: Array("\(get)X-A: a".utf8) + [0xED, 0xA0, 0x80] + Array("\r\n\r\n".utf8),
             .refused(), stricterThanLLHTTP: utf8Values),
        Case("U+FFFD in a value", "\(get)X-A: a\u{FFFD}b\r\n\r\n",
             .refused(), stricterThanLLHTTP: utf8Values),
        Case("UTF-8 in a value", "\(get)X-A: caf\u{E9} \u{1F510}\r\n\r\n",
             .accepted([.head("GET", "/", .http1_1, ["Host": "a", "X-A": "caf\u{E9} \u{1F510}"]), .end])),
        Case("fields repeated and interleaved keep their order", "\(get)X: 1\r\nY: 2\r\nX: 3\r\n\r\n",
             .accepted([.head("GET", "/", .http1_1, ["Host": "a", "X": "1", "Y": "2", "X": "3"]), .end])),
        Case("HTTP/1.0 request", "GET / HTTP/1.0\r\n\r\n", .accepted([.head("GET", "/", .http1_0), .end])),
        Case("Transfer_Encoding is just a field", "\(post)Transfer_Encoding: chunked\r\nContent-Length: 1\r\n\r\nx",
             .accepted([postHead(["Transfer_Encoding": "chunked", "Content-Length": "1"]), body("x"), .end])),
        Case("Content_Length is just a field: the bytes after the head are the next request", "\(post)Content_Length: 3\r\n\r\nabc",
             .cutShort([postHead(["Content_Length": "3"]), .end])),
    ]

    static let clte: [Case] = [
        Case("CL.TE", "\(post)Content-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nG", .refused()),
        Case("TE.CL", "\(post)Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n8\r\nSMUGGLED\r\n0\r\n\r\n", .refused()),
        Case("TE with Content-Length 0", "\(post)Transfer-Encoding: chunked\r\nContent-Length: 0\r\n\r\n0\r\n\r\n", .refused()),
        Case("CL.TE behind an honest request", "\(get)\r\n\(post)Content-Length: 44\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /admin HTTP/1.1\r\n\(host)X: \r\n\r\n",
             .refused(after: aGet)),
        Case("TE.CL behind an honest request", "\(get)\r\n\(post)Transfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n5c\r\nGPOST / HTTP/1.1\r\n\r\n0\r\n\r\n",
             .refused(after: aGet)),
        Case("a coding with Content-Length", "\(post)Transfer-Encoding: gzip\r\nContent-Length: 3\r\n\r\nabc", .refused()),
        Case("Transfer-Encoding on HTTP/1.0 with Content-Length", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\nabc", .refused()),
    ]

    static let transferCodingReason = "only exactly one Transfer-Encoding: chunked: Gatehouse re-frames bodies and would lose any other coding"

    static let transferEncoding: [Case] = [
        Case("CHUNKED in upper case", "\(post)Transfer-Encoding: CHUNKED\r\n\r\n1\r\na\r\n0\r\n\r\n",
             .accepted([postHead(["Transfer-Encoding": "CHUNKED"]), body("a"), .end])),
        Case("Transfer-Encoding:<HTAB>chunked (OWS)", "\(post)Transfer-Encoding:\tchunked\r\n\r\n1\r\na\r\n0\r\n\r\n",
             .accepted([chunkedPostHead, body("a"), .end])),
        Case("Transfer-Encoding: chunked<SP> (OWS)", "\(post)Transfer-Encoding: chunked \r\n\r\n1\r\na\r\n0\r\n\r\n",
             .accepted([chunkedPostHead, body("a"), .end])),
        // llhttp refuses a tab after the coding (it is OWS, but llhttp reads it as part of the coding).
        Case("Transfer-Encoding: chunked<HTAB>", "\(post)Transfer-Encoding: chunked\t\r\n\r\n1\r\na\r\n0\r\n\r\n", .refused()),
        Case("Transfer-Encoding : chunked (space before the colon)", "\(post)Transfer-Encoding : chunked\r\n\r\n0\r\n\r\n", .refused()),
        Case("Transfer-Encoding: xchunked", "\(post)Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n", .refused()),
        Case("Transfer-Encoding: chunk", "\(post)Transfer-Encoding: chunk\r\n\r\n0\r\n\r\n", .refused()),
        Case("Transfer-Encoding: \"chunked\"", "\(post)Transfer-Encoding: \"chunked\"\r\n\r\n0\r\n\r\n", .refused()),
        Case("Transfer-Encoding: chunked, chunked", "\(post)Transfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n", .refused()),
        Case("Transfer-Encoding: chunked, identity", "\(post)Transfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n", .refused()),
        Case("Transfer-Encoding: identity", "\(post)Transfer-Encoding: identity\r\n\r\n", .refused()),
        Case("Transfer-Encoding: chunked;q=1", "\(post)Transfer-Encoding: chunked;q=1\r\n\r\n0\r\n\r\n", .refused()),
        Case("two Transfer-Encoding: chunked fields", "\(post)Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", .refused()),
        Case("Transfer-Encoding: chunked then gzip", "\(post)Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n\r\n0\r\n\r\n", .refused()),
        Case("Transfer-Encoding: gzip, chunked", "\(post)Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", .refused(),
             stricterThanLLHTTP: transferCodingReason),
        Case("Transfer-Encoding: identity, chunked", "\(post)Transfer-Encoding: identity, chunked\r\n\r\n0\r\n\r\n", .refused(),
             stricterThanLLHTTP: transferCodingReason),
        Case("Transfer-Encoding: x,chunked", "\(post)Transfer-Encoding: x,chunked\r\n\r\n0\r\n\r\n", .refused(), stricterThanLLHTTP: transferCodingReason),
        Case("Transfer-Encoding: ,chunked", "\(post)Transfer-Encoding: ,chunked\r\n\r\n0\r\n\r\n", .refused(), stricterThanLLHTTP: transferCodingReason),
        Case("Transfer-Encoding gzip then chunked (two fields)", "\(post)Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", .refused(),
             stricterThanLLHTTP: transferCodingReason + "; two Transfer-Encoding fields are the classic TE.TE disagreement"),
        Case("empty Transfer-Encoding", "\(post)Transfer-Encoding: \r\n\r\n", .refused(),
             stricterThanLLHTTP: "a Transfer-Encoding field without a coding is malformed framing, not 'no body'"),
        Case("Transfer-Encoding with a vertical tab", "\(post)Transfer-Encoding: chunked\u{0B}\r\n\r\n0\r\n\r\n", .refused()),
        Case("Transfer-Encoding with a vertical tab before it", "\(post)Transfer-Encoding:\u{0B}chunked\r\n\r\n0\r\n\r\n", .refused()),
        Case("chunked folded onto the next line", "\(post)Transfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n", .refused()),
        Case("chunked followed by a folded line", "\(post)Transfer-Encoding: chunked\r\n\tx\r\n\r\n0\r\n\r\n", .refused()),
        Case("Transfer-Encoding with a non-ASCII k", bytes: Array("\(post)Transfer-Encoding: ".utf8) + [0xC4, 0xB8] + Array("hunked\r\n\r\n0\r\n\r\n".utf8),
             .refused()),
        Case("Transfer-Encoding on HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", .refused(),
             stricterThanLLHTTP: "RFC 9112 §6.1: Transfer-Encoding in an HTTP/1.0 message is faulty framing"),
        Case("Transfer-Encoding: gzip on HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: gzip\r\n\r\nabc", .refused()),
    ]

    static let contentLength: [Case] = [
        Case("Content-Length:<SP>5<SP> (OWS)", "\(post)Content-Length:  5  \r\n\r\nhello", .accepted([postHead(["Content-Length": "5"]), body("hello"), .end])),
        Case("Content-Length:<HTAB>5 (OWS)", "\(post)Content-Length:\t5\r\n\r\nhello", .accepted([postHead(["Content-Length": "5"]), body("hello"), .end])),
        // llhttp refuses a tab after the digits.
        Case("Content-Length: 5<HTAB>", "\(post)Content-Length: 5\t\r\n\r\nhello", .refused()),
        Case("two equal Content-Lengths", "\(post)Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello", .refused()),
        Case("two different Content-Lengths", "\(post)Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", .refused()),
        Case("two Content-Lengths apart", "\(post)Content-Length: 2\r\nX: 1\r\nContent-Length: 2\r\n\r\nab", .refused()),
        Case("Content-Length: 0 twice", "\(post)Content-Length: 0\r\nContent-Length: 0\r\n\r\n", .refused()),
        Case("Content-Length then a bad one", "\(post)Content-Length: 1\r\nContent-Length: abc\r\n\r\nx", .refused()),
        Case("comma-list Content-Length", "\(post)Content-Length: 5, 5\r\n\r\nhello", .refused()),
        Case("comma-list Content-Length without space", "\(post)Content-Length: 5,5\r\n\r\nhello", .refused()),
        Case("Content-Length: +5", "\(post)Content-Length: +5\r\n\r\nhello", .refused()),
        Case("Content-Length: -1", "\(post)Content-Length: -1\r\n\r\n", .refused()),
        Case("Content-Length: 0x5", "\(post)Content-Length: 0x5\r\n\r\nhello", .refused()),
        Case("Content-Length: 5.0", "\(post)Content-Length: 5.0\r\n\r\nhello", .refused()),
        Case("Content-Length: 5 5", "\(post)Content-Length: 5 5\r\n\r\nhello", .refused()),
        Case("empty Content-Length", "\(post)Content-Length: \r\n\r\n", .refused()),
        Case("Content-Length with a vertical tab", "\(post)Content-Length: 5\u{0B}\r\n\r\nhello", .refused()),
        Case("Content-Length : 5 (space before the colon)", "\(post)Content-Length : 5\r\n\r\nhello", .refused()),
        Case("Content-Length overflowing 64 bits", "\(post)Content-Length: 18446744073709551616\r\n\r\nhello", .refused()),
        Case("Content-Length: 99999999999999999999999", "\(post)Content-Length: 99999999999999999999999\r\n\r\nhello", .refused()),
        Case("Content-Length: 2^64-1", "\(post)Content-Length: 18446744073709551615\r\n\r\nhello", .refused(),
             stricterThanLLHTTP: "Content-Length has at most 18 digits: no length Gatehouse could ever read needs more, and none overflows Int"),
        Case("Content-Length of 22 digits, mostly leading zeros", "\(post)Content-Length: 0000000000000000000005\r\n\r\nhello", .refused(),
             stricterThanLLHTTP: "Content-Length has at most 18 digits, leading zeros included"),
        Case("Content-Length of 18 digits waits for its body", "\(post)Content-Length: 999999999999999999\r\n\r\nhello",
             .cutShort([postHead(["Content-Length": "999999999999999999"]), body("hello")])),
        Case("body shorter than its Content-Length", "\(post)Content-Length: 10\r\n\r\nhello", .cutShort([postHead(["Content-Length": "10"]), body("hello")])),
    ]

    static let chunkLines: [Case] = [
        Case("chunk size overflow", chunkedPost + "ffffffffffffffffff\r\n", .refused()),
        Case("chunk size of 17 hex digits", chunkedPost + "10000000000000000\r\n", .refused()),
        Case("chunk size of 16 hex digits, leading zeros", chunked("0000000000000001\r\na\r\n"), .refused(),
             stricterThanLLHTTP: "chunk sizes have at most 15 hex digits, leading zeros included (no size needs more)"),
        Case("chunk size with 0x", chunked("0x1\r\na\r\n"), .refused()),
        Case("chunk size with a leading space", chunked(" 1\r\na\r\n"), .refused()),
        Case("chunk size with a trailing space", chunked("1 \r\na\r\n"), .refused()),
        Case("chunk size with a trailing tab", chunked("1\t\r\na\r\n"), .refused()),
        Case("negative chunk size", chunked("-1\r\na\r\n"), .refused()),
        Case("chunk size not hex", chunked("g\r\na\r\n"), .refused()),
        Case("empty chunk size", chunked("\r\na\r\n"), .refused()),
        Case("chunk extension without a size", chunked(";a\r\na\r\n"), .refused()),
        Case("chunk extensions: name, token value, quoted value, several",
             chunked("1;a\r\na\r\n1;a=b\r\nb\r\n1;a=\"b c\"\r\nc\r\n1;a=\"\\\"\";b=c;d\r\nd\r\n1;a=\"\"\r\ne\r\n"),
             .accepted([chunkedPostHead, body("abcde"), .end])),
        Case("chunk extension with obs-text in a quoted value", bytes: Array(chunkedPost.utf8) + Array("1;a=\"".utf8) + [0x80] + Array("\"\r\na\r\n0\r\n\r\n".utf8),
             .accepted([chunkedPostHead, body("a"), .end])),
        Case("chunk extension: ';' alone", chunked("1;\r\na\r\n"), .refused()),
        Case("chunk extension: space before ';'", chunked("1 ;a=b\r\na\r\n"), .refused()),
        Case("chunk extension: space after ';'", chunked("1; a=b\r\na\r\n"), .refused()),
        Case("chunk extension: space before '='", chunked("1;a =b\r\na\r\n"), .refused()),
        Case("chunk extension: space after '='", chunked("1;a= b\r\na\r\n"), .refused()),
        Case("chunk extension: space in the value", chunked("1;a=b c\r\na\r\n"), .refused()),
        Case("chunk extension: trailing tab", chunked("1;a=b\t\r\na\r\n"), .refused()),
        Case("chunk extension: unterminated quoted value", chunked("1;a=\"b\r\na\r\n"), .refused()),
        Case("chunk extension: bytes after the quoted value", chunked("1;a=\"b\"c\r\na\r\n"), .refused()),
        Case("chunk extension: quoted value without '='", chunked("1;a\"b\"\r\na\r\n"), .refused()),
        Case("chunk extension: control byte in a quoted value", chunked("1;a=\"\u{1}\"\r\na\r\n"), .refused()),
        Case("chunk extension: control byte quoted", chunked("1;a=\"\\\u{1}\"\r\na\r\n"), .refused()),
        Case("chunk extension: obs-text in a token", bytes: Array(chunkedPost.utf8) + Array("1;a".utf8) + [0x80] + Array("\r\na\r\n0\r\n\r\n".utf8),
             .refused()),
        Case("chunk extension: '=' twice", chunked("1;a=b=c\r\na\r\n"), .refused()),
        Case("chunk extension: trailing ';'", chunked("1;a=b;\r\na\r\n"), .refused()),
        Case("chunk extension: empty value", chunked("1;a=\r\na\r\n"), .refused(),
             stricterThanLLHTTP: "a chunk extension with '=' has a token or quoted-string value (RFC 9112 §7.1.1)"),
        Case("chunk extension: empty value then another", chunked("1;a=;b\r\na\r\n"), .refused(),
             stricterThanLLHTTP: "a chunk extension with '=' has a token or quoted-string value (RFC 9112 §7.1.1)"),
        Case("chunk extension: empty name", chunked("1;=b\r\na\r\n"), .refused(),
             stricterThanLLHTTP: "a chunk extension has a token name (RFC 9112 §7.1.1)"),
        Case("chunk extension: ';;'", chunked("1;a;;b\r\na\r\n"), .refused(),
             stricterThanLLHTTP: "a chunk extension has a token name (RFC 9112 §7.1.1)"),
        Case("chunk line over 4 KiB", chunked("1;" + String(repeating: "e", count: 5000) + "\r\na\r\n"), .refused(),
             stricterThanLLHTTP: "chunk-size lines are bounded (4 KiB), so one can never be buffered without limit"),
        Case("no CRLF after chunk data", chunked("1\r\naXX0\r\n\r\n", lastChunk: ""), .refused()),
        Case("chunk data longer than its size", chunked("3\r\nabcd\r\n"), .refused()),
        Case("chunk data shorter than its size", chunked("3\r\nab\r\n"), .refused()),
        Case("bare LF after chunk data", chunked("1\r\na\n", lastChunk: "0\r\n\r\n"), .refused()),
        Case("bare CR after chunk data", chunked("1\r\na\r", lastChunk: "0\r\n\r\n"), .refused()),
        Case("bare LF after a chunk size", chunked("1\na\r\n"), .refused()),
        Case("bare CR after a chunk size", chunked("1\ra\r\n"), .refused()),
        Case("CR CR LF after a chunk size", chunked("1\r\r\na\r\n"), .refused()),
        Case("bare LF after the last chunk", chunked("1\r\na\r\n", lastChunk: "0\n\r\n"), .refused()),
        Case("CR CR LF after the last chunk", chunked("1\r\na\r\n", lastChunk: "0\r\r\n\r\n"), .refused()),
        Case("chunked body cut short in a size line", chunkedPost + "1\r\na\r\n0", .cutShort([chunkedPostHead, body("a")])),
        Case("chunked body cut short in its data", chunkedPost + "5\r\nab", .cutShort([chunkedPostHead, body("ab")])),
        Case("chunked body cut short before the trailers' end", chunkedPost + "0\r\nX: 1\r\n", .cutShort([chunkedPostHead])),
    ]

    static let trailers: [Case] = [
        Case("trailers with OWS and an empty value", chunked("", lastChunk: "0\r\nX-T:  1 \r\nY:\r\n\r\n"), .accepted([chunkedPostHead, .end(["X-T": "1", "Y": ""])])),
        Case("trailer with a bare LF", chunked("1\r\na\r\n", lastChunk: "0\r\nX-T: v\n\r\n"), .refused()),
        Case("trailer with a bare CR", chunked("1\r\na\r\n", lastChunk: "0\r\nX-T: v\rY: w\r\n\r\n"), .refused()),
        Case("trailer section ended by a bare LF", chunked("1\r\na\r\n", lastChunk: "0\r\n\n"), .refused()),
        Case("trailer ending CR CR LF", chunked("1\r\na\r\n", lastChunk: "0\r\nX: 1\r\r\n\r\n"), .refused()),
        Case("obs-fold in the trailers", chunked("1\r\na\r\n", lastChunk: "0\r\nX-T: 1\r\n continued\r\n\r\n"), .refused()),
        Case("space before a trailer's colon", chunked("1\r\na\r\n", lastChunk: "0\r\nX-T : 1\r\n\r\n"), .refused()),
        Case("NUL in a trailer", chunked("1\r\na\r\n", lastChunk: "0\r\nX-T: a\u{0}\r\n\r\n"), .refused()),
        Case("trailer without a name", chunked("1\r\na\r\n", lastChunk: "0\r\n: v\r\n\r\n"), .refused()),
        Case("trailer line without a colon", chunked("1\r\na\r\n", lastChunk: "0\r\nX-T\r\n\r\n"), .refused()),
        // llhttp reads framing fields in trailers as framing, and refuses them (RFC 9110 §6.5.1: a trailer
        // must not carry framing).
        Case("Transfer-Encoding in the trailers", chunked("1\r\na\r\n", lastChunk: "0\r\nTransfer-Encoding: gzip\r\n\r\n"), .refused()),
        Case("Transfer-Encoding: chunked in the trailers", chunked("1\r\na\r\n", lastChunk: "0\r\nTransfer-Encoding: chunked\r\n\r\n"), .refused()),
        Case("Content-Length in the trailers", chunked("1\r\na\r\n", lastChunk: "0\r\nContent-Length: 5\r\n\r\n"), .refused()),
        Case("bad Content-Length in the trailers", chunked("1\r\na\r\n", lastChunk: "0\r\nContent-Length: abc\r\n\r\n"), .refused()),
    ]

    static let lineEndings: [Case] = [
        Case("bare LF ending the request line", "GET / HTTP/1.1\n\(host)\r\n", .refused()),
        Case("bare CR ending the request line", "GET / HTTP/1.1\r\(host)\r\n", .refused()),
        Case("bare CR in the request target", "GET /a\rb HTTP/1.1\r\n\(host)\r\n", .refused()),
        Case("bare LF ending a field line", "\(get)X-A: 1\nX-B: 2\r\n\r\n", .refused()),
        Case("bare CR inside a field line", "\(get)X-A: 1\rX-B: 2\r\n\r\n", .refused()),
        Case("CR CR LF ending a field line", "\(get)X-A: 1\r\r\n\r\n", .refused()),
        Case("bare LF ending the head", "\(get)X-A: 1\r\n\n", .refused()),
        Case("all bare LFs", "GET / HTTP/1.1\nHost: a\n\n", .refused()),
        Case("bare LF before the request line", "\n\(get)\r\n", .refused(),
             stricterThanLLHTTP: "every line ends CRLF, empty ones before a request too (llhttp skips any CR or LF there)"),
        Case("bare CR before the request line", "\r\(get)\r\n", .refused(),
             stricterThanLLHTTP: "every line ends CRLF, empty ones before a request too (llhttp skips any CR or LF there)"),
        Case("bare LF between requests", "\(get)\r\n\n\(get)\r\n", .refused(after: aGet),
             stricterThanLLHTTP: "every line ends CRLF, empty ones between requests too (llhttp skips any CR or LF there)"),
        Case("obs-fold with a space", "\(get)X-A: 1\r\n continued\r\n\r\n", .refused()),
        Case("obs-fold with a tab", "\(get)X-A: 1\r\n\tcontinued\r\n\r\n", .refused()),
        Case("first field line starting with a space", "GET / HTTP/1.1\r\n \(host)\r\n", .refused()),
        Case("obs-fold hiding a Content-Length", "\(post)X-A: 1\r\n Content-Length: 5\r\n\r\nhello", .refused()),
    ]

    static let controlBytes: [Case] = [
        Case("NUL in a value", "\(get)X-A: a\u{0}b\r\n\r\n", .refused()),
        Case("SOH in a value", "\(get)X-A: a\u{1}b\r\n\r\n", .refused()),
        Case("vertical tab in a value", "\(get)X-A: a\u{B}b\r\n\r\n", .refused()),
        Case("vertical tab starting a value", "\(get)X-A:\u{B}1\r\n\r\n", .refused()),
        Case("form feed in a value", "\(get)X-A: a\u{C}b\r\n\r\n", .refused()),
        Case("ESC in a value", "\(get)X-A: a\u{1B}b\r\n\r\n", .refused()),
        Case("DEL in a value", "\(get)X-A: a\u{7F}b\r\n\r\n", .refused()),
        Case("NUL in a name", "\(get)X\u{0}A: 1\r\n\r\n", .refused()),
        Case("obs-text in a name", bytes: Array("\(get)X".utf8) + [0x80] + Array("A: 1\r\n\r\n".utf8), .refused()),
        Case("space in a name", "\(get)X A: 1\r\n\r\n", .refused()),
        Case("tab before the colon", "\(get)X-A\t: 1\r\n\r\n", .refused()),
        Case("separator in a name", "\(get)X(A: 1\r\n\r\n", .refused()),
        Case("quote in a name", "\(get)X\"A: 1\r\n\r\n", .refused()),
        Case("slash in a name", "\(get)X/A: 1\r\n\r\n", .refused()),
        Case("empty name", "\(get): 1\r\n\r\n", .refused()),
        Case("line without a colon", "\(get)NoColon\r\n\r\n", .refused()),
        Case("NUL in the target", "GET /a\u{0}b HTTP/1.1\r\n\(host)\r\n", .refused()),
        Case("tab in the target", "GET /a\tb HTTP/1.1\r\n\(host)\r\n", .refused()),
        Case("DEL in the target", "GET /a\u{7F}b HTTP/1.1\r\n\(host)\r\n", .refused()),
        Case("obs-text in the target", bytes: Array("GET /".utf8) + [0x80] + Array(" HTTP/1.1\r\n\(host)\r\n".utf8), .refused()),
        Case("NUL before the request line", "\u{0}\(get)\r\n", .refused()),
        Case("NUL in the method", "G\u{0}T / HTTP/1.1\r\n\(host)\r\n", .refused()),
    ]

    static let requestLines: [Case] = [
        Case("HTTP/0.9", "GET / HTTP/0.9\r\n\(host)\r\n", .refused()),
        Case("HTTP/1.2", "GET / HTTP/1.2\r\n\(host)\r\n", .refused()),
        Case("HTTP/2.0", "GET / HTTP/2.0\r\n\(host)\r\n", .refused()),
        Case("HTTP/1.10", "GET / HTTP/1.10\r\n\(host)\r\n", .refused()),
        Case("HTTP/01.1", "GET / HTTP/01.1\r\n\(host)\r\n", .refused()),
        Case("http/1.1 in lower case", "GET / http/1.1\r\n\(host)\r\n", .refused()),
        Case("ICE/1.0", "GET / ICE/1.0\r\n\(host)\r\n", .refused()),
        Case("RTSP/1.0", "GET / RTSP/1.0\r\n\(host)\r\n", .refused(),
             stricterThanLLHTTP: "only HTTP/1.1 and HTTP/1.0 (llhttp reads an RTSP/1.0 request as HTTP/1.0)"),
        Case("no version", "GET /\r\n\(host)\r\n", .refused()),
        Case("space after the version", "GET / HTTP/1.1 \r\n\(host)\r\n", .refused()),
        Case("lower-case method", "get / HTTP/1.1\r\n\(host)\r\n", .refused()),
        Case("mixed-case method", "Get / HTTP/1.1\r\n\(host)\r\n", .refused()),
        Case("unknown method", "FOO / HTTP/1.1\r\n\(host)\r\n", .refused()),
        Case("method with a suffix", "GETS / HTTP/1.1\r\n\(host)\r\n", .refused()),
        Case("RTSP method", "DESCRIBE / HTTP/1.1\r\n\(host)\r\n", .refused()),
        Case("HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", .refused()),
        Case("empty method", " / HTTP/1.1\r\n\(host)\r\n", .refused()),
        Case("space before the method", " GET / HTTP/1.1\r\n\(host)\r\n", .refused()),
        Case("tab after the method", "GET\t/ HTTP/1.1\r\n\(host)\r\n", .refused()),
        Case("tab before the version", "GET /\tHTTP/1.1\r\n\(host)\r\n", .refused()),
        Case("two spaces after the method", "GET  / HTTP/1.1\r\n\(host)\r\n", .refused(),
             stricterThanLLHTTP: "single spaces in the request line (RFC 9112 §3)"),
        Case("two spaces before the version", "GET /  HTTP/1.1\r\n\(host)\r\n", .refused(),
             stricterThanLLHTTP: "single spaces in the request line (RFC 9112 §3)"),
        Case("request line only spaces", "   \r\n\(host)\r\n", .refused()),
    ]

    /// llhttp's request-target grammar: origin-form starts with `/`, `*` starts the asterisk form,
    /// absolute-form is `ALPHA+ "://"` and an authority of server characters; CONNECT takes an authority.
    static let targets: [Case] = [
        Case("absolute-form target (the handler decides)", "GET http://a/b HTTP/1.1\r\n\(host)\r\n", .accepted([getHead("http://a/b"), .end])),
        Case("absolute-form with userinfo, port, query, fragment", "GET http://u:p@a:80/b?c#d HTTP/1.1\r\n\(host)\r\n",
             .accepted([getHead("http://u:p@a:80/b?c#d"), .end])),
        Case("absolute-form with an IPv6 literal", "GET http://[::1]:80/ HTTP/1.1\r\n\(host)\r\n", .accepted([getHead("http://[::1]:80/"), .end])),
        Case("asterisk-form", "OPTIONS * HTTP/1.1\r\n\(host)\r\n", .accepted([.head("OPTIONS", "*", .http1_1, ["Host": "a"]), .end])),
        Case("origin-form with every visible byte llhttp allows", "GET /!\"$%&'()*+,-./09:;<=>?@AZ[\\]^_`az{|}~?#x#? HTTP/1.1\r\n\(host)\r\n",
             .accepted([getHead("/!\"$%&'()*+,-./09:;<=>?@AZ[\\]^_`az{|}~?#x#?"), .end])),
        Case("network-path reference", "GET //a/b HTTP/1.1\r\n\(host)\r\n", .accepted([getHead("//a/b"), .end])),
        Case("authority-form CONNECT", "CONNECT a:443 HTTP/1.1\r\n\(host)\r\n", .accepted([.head("CONNECT", "a:443", .http1_1, ["Host": "a"]), .end])),
        Case("absolute-form with an empty authority", "GET http:// HTTP/1.1\r\n\(host)\r\n", .accepted([getHead("http://"), .end])),
        Case("asterisk followed by more", "GET *x HTTP/1.1\r\n\(host)\r\n", .refused(),
             stricterThanLLHTTP: "the asterisk-form is '*' alone (RFC 9112 §3.2.4)"),
        Case("CONNECT to a path", "CONNECT /x HTTP/1.1\r\n\(host)\r\n", .refused(),
             stricterThanLLHTTP: "CONNECT takes the authority-form only (RFC 9112 §3.2.3)"),
        // Targets llhttp refuses: Gatehouse must be at least as strict.
        Case("target not starting with '/'", "GET a HTTP/1.1\r\n\(host)\r\n", .refused()),
        Case("target starting with '?'", "GET ?a HTTP/1.1\r\n\(host)\r\n", .refused()),
        Case("target starting with '#'", "GET #a HTTP/1.1\r\n\(host)\r\n", .refused()),
        Case("target starting with a digit", "GET 1/a HTTP/1.1\r\n\(host)\r\n", .refused()),
        Case("scheme without '//'", "GET http:/a HTTP/1.1\r\n\(host)\r\n", .refused()),
        Case("scheme and path only", "GET a:b HTTP/1.1\r\n\(host)\r\n", .refused()),
        Case("scheme with a digit", "GET h1://a/ HTTP/1.1\r\n\(host)\r\n", .refused()),
        Case("quote in the authority", "GET http://a\"b/ HTTP/1.1\r\n\(host)\r\n", .refused()),
        Case("brace in the authority", "GET http://a{b/ HTTP/1.1\r\n\(host)\r\n", .refused()),
        Case("fragment right after the authority", "GET http://a#b HTTP/1.1\r\n\(host)\r\n", .refused()),
        Case("CONNECT to braces", "CONNECT {} HTTP/1.1\r\n\(host)\r\n", .refused()),
        Case("'@@' in an absolute-form authority", "GET http://a@@b/ HTTP/1.1\r\n\(host)\r\n", .refused()),
        Case("'@@' in a CONNECT authority", "CONNECT a@@b:443 HTTP/1.1\r\n\(host)\r\n", .refused()),
        Case("one '@' in an authority, or two apart", "GET http://a@b@c/ HTTP/1.1\r\n\(host)\r\n", .accepted([getHead("http://a@b@c/"), .end])),
    ]

    /// A GET whose head is exactly `size` bytes, padded in one field.
    static func head(ofSize size: Int) -> String {
        let fixed = "\(get)X-Pad: \r\n\r\n"
        return "\(get)X-Pad: " + String(repeating: "p", count: size - fixed.utf8.count) + "\r\n\r\n"
    }

    static let sizes: [Case] = [
        Case("head of exactly 8192 bytes", head(ofSize: 8192),
             .accepted([.head("GET", "/", .http1_1, ["Host": "a", "X-Pad": String(repeating: "p", count: 8192 - "\(get)X-Pad: \r\n\r\n".utf8.count)]), .end])),
        Case("head of 8193 bytes", head(ofSize: 8193), .refused(headerOverflow: true),
             stricterThanLLHTTP: "the head is bounded in bytes as sent (llhttp counts only the target, names and values)"),
        Case("9000 bytes of small fields", "GET / HTTP/1.1\r\n" + (0..<900).map { "X\($0 + 1000): v\r\n" }.joined() + "\r\n", .refused(headerOverflow: true),
             stricterThanLLHTTP: "the head is bounded in bytes as sent (llhttp counts only the target, names and values)"),
        Case("oversized request line", "GET /" + String(repeating: "a", count: 9000) + " HTTP/1.1\r\n\(host)\r\n", .refused(headerOverflow: true)),
        Case("oversized field", head(ofSize: 9000), .refused(headerOverflow: true)),
        Case("oversized head that never ends", "\(get)X-Pad: " + String(repeating: "p", count: 20000), .refused(headerOverflow: true)),
        Case("oversized second request", "\(get)\r\n" + head(ofSize: 9000), .refused(headerOverflow: true, after: aGet)),
        Case("trailers of nearly 8 KiB", chunked("", lastChunk: "0\r\nX-T: " + String(repeating: "t", count: 8000) + "\r\n\r\n"),
             .accepted([chunkedPostHead, .end(["X-T": String(repeating: "t", count: 8000)])])),
        Case("oversized trailers", chunked("", lastChunk: "0\r\nX-T: " + String(repeating: "t", count: 9000) + "\r\n\r\n"),
             .refused(headerOverflow: true)),
        // llhttp bounds a request's head and trailers together.
        Case("head and trailers over 8 KiB together", "\(post)Transfer-Encoding: chunked\r\nX-H: " + String(repeating: "h", count: 5000)
                + "\r\n\r\n0\r\nX-T: " + String(repeating: "t", count: 5000) + "\r\n\r\n",
             .refused(headerOverflow: true)),
        Case("5000 empty lines before a request", String(repeating: "\r\n", count: 5000) + "\(get)\r\n", .accepted(aGet)),
        Case("two heads of 5000 bytes", head(ofSize: 5000) + head(ofSize: 5000), .accepted([
            .head("GET", "/", .http1_1, ["Host": "a", "X-Pad": String(repeating: "p", count: 5000 - "\(get)X-Pad: \r\n\r\n".utf8.count)]), .end,
            .head("GET", "/", .http1_1, ["Host": "a", "X-Pad": String(repeating: "p", count: 5000 - "\(get)X-Pad: \r\n\r\n".utf8.count)]), .end,
        ])),
    ]

    static let threePipelined = "GET /1 HTTP/1.1\r\n\(host)\r\n"
        + "POST /2 HTTP/1.1\r\n\(host)Content-Length: 5\r\n\r\nhello"
        + "POST /3 HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n4;x=y\r\ndefg\r\n0\r\nX-T: 1\r\nX-U: 2\r\n\r\n"
    static let threePipelinedParts: [Part] = [
        getHead("/1"), .end,
        .head("POST", "/2", .http1_1, ["Host": "a", "Content-Length": "5"]), body("hello"), .end,
        .head("POST", "/3", .http1_1, ["Host": "a", "Transfer-Encoding": "chunked"]), body("abcdefg"), .end(["X-T": "1", "X-U": "2"]),
    ]

    static let pipelining: [Case] = [
        Case("three pipelined requests", threePipelined, .accepted(threePipelinedParts)),
        Case("pipelined requests with empty lines between", "\(get)\r\n\r\n\r\n\(get)\r\n\r\n", .accepted(aGet + aGet)),
        Case("a bad request between good ones", "\(get)\r\n\(get)X: a\u{0}\r\n\r\n\(get)\r\n", .refused(after: aGet)),
        Case("bytes after a Content-Length body that are no request", "\(post)Content-Length: 2\r\n\r\nabc\r\n\r\n",
             .refused(after: [postHead(["Content-Length": "2"]), body("ab"), .end])),
        Case("an unfinished request after a complete one", "\(get)\r\nGET /2 HTT", .cutShort(aGet)),
    ]

    static let bodyBeforeSwitchReason = "a request that switches protocols has no body: where the old protocol would end is anybody's guess"

    static let protocolSwitches: [Case] = [
        Case("Upgrade with Connection: upgrade leaves the rest to the new protocol",
             "\(get)Upgrade: websocket\r\nConnection: upgrade\r\n\r\n\u{1}\u{2}GET /x HTTP/1.1\r\n\r\n",
             .accepted([.head("GET", "/", .http1_1, ["Host": "a", "Upgrade": "websocket", "Connection": "upgrade"]), .end],
                       unparsed: "\u{1}\u{2}GET /x HTTP/1.1\r\n\r\n")),
        Case("Upgrade with a Content-Length body", "\(get)Upgrade: websocket\r\nConnection: upgrade\r\nContent-Length: 2\r\n\r\nabGET /x HTTP/1.1\r\n\r\n",
             .refused(), stricterThanLLHTTP: bodyBeforeSwitchReason),
        Case("Upgrade with a chunked body", "\(get)Upgrade: websocket\r\nConnection: upgrade\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\n\r\n",
             .refused(), stricterThanLLHTTP: bodyBeforeSwitchReason),
        Case("Upgrade with Content-Length 0", "\(get)Upgrade: websocket\r\nConnection: upgrade\r\nContent-Length: 0\r\n\r\n\u{1}",
             .accepted([.head("GET", "/", .http1_1, ["Host": "a", "Upgrade": "websocket", "Connection": "upgrade", "Content-Length": "0"]), .end],
                       unparsed: "\u{1}")),
        Case("Upgrade without Connection: upgrade", "\(get)Upgrade: websocket\r\n\r\nGET /x HTTP/1.1\r\n\r\n",
             .accepted([.head("GET", "/", .http1_1, ["Host": "a", "Upgrade": "websocket"]), .end], unparsed: "GET /x HTTP/1.1\r\n\r\n"),
             llhttpDiffers: (
                "Gatehouse stops at any Upgrade header (it never tunnels one and closes after the answer); llhttp only with Connection: upgrade",
                .accepted([.head("GET", "/", .http1_1, ["Host": "a", "Upgrade": "websocket"]), .end, .head("GET", "/x"), .end], unparsed: nil))),
        Case("CONNECT leaves the rest to the tunnel", "CONNECT a:443 HTTP/1.1\r\n\(host)\r\n\u{16}\u{3}\u{1}GET / HTTP/1.1\r\n\r\n",
             .accepted([.head("CONNECT", "a:443", .http1_1, ["Host": "a"]), .end], unparsed: "\u{16}\u{3}\u{1}GET / HTTP/1.1\r\n\r\n")),
        Case("CONNECT with a Content-Length", "CONNECT a:443 HTTP/1.1\r\n\(host)Content-Length: 3\r\n\r\nabcGET / HTTP/1.1\r\n\r\n",
             .refused(), stricterThanLLHTTP: bodyBeforeSwitchReason + " (llhttp gives a CONNECT's body bytes to the tunnel)"),
    ]

    static let connectionClose: [Case] = [
        Case("a request after Connection: close", "\(get)Connection: close\r\n\r\n\(get)\r\n",
             .refused(after: [.head("GET", "/", .http1_1, ["Host": "a", "Connection": "close"]), .end])),
        Case("a request after an HTTP/1.0 one", "GET / HTTP/1.0\r\n\r\n\(get)\r\n", .refused(after: [.head("GET", "/", .http1_0), .end])),
        Case("a request after an HTTP/1.0 keep-alive one", "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n\(get)\r\n",
             .accepted([.head("GET", "/", .http1_0, ["Connection": "keep-alive"]), .end] + aGet)),
        Case("Connection: close as one of a list", "\(get)Connection: x, Close\r\n\r\n\(get)\r\n",
             .refused(after: [.head("GET", "/", .http1_1, ["Host": "a", "Connection": "x, Close"]), .end])),
        Case("Connection: close ending a request with a body", "\(post)Connection: close\r\nContent-Length: 2\r\n\r\nab",
             .accepted([postHead(["Connection": "close", "Content-Length": "2"]), body("ab"), .end])),
        // llhttp reads these as closing the connection too.
        Case("a request after Proxy-Connection: close", "\(get)Proxy-Connection: close\r\n\r\n\(get)\r\n",
             .refused(after: [.head("GET", "/", .http1_1, ["Host": "a", "Proxy-Connection": "close"]), .end])),
        Case("a request after Connection: close in the trailers", chunked("", lastChunk: "0\r\nConnection: close\r\n\r\n") + "\(get)\r\n",
             .refused(after: [chunkedPostHead, .end(["Connection": "close"])])),
        Case("a request after HTTP/1.0 Connection: keep-alive<HTAB>", "GET / HTTP/1.0\r\nConnection: keep-alive\t\r\n\r\n\(get)\r\n",
             .refused(after: [.head("GET", "/", .http1_0, ["Connection": "keep-alive"]), .end])),
        Case("an empty line after Connection: close", "\(get)Connection: close\r\n\r\n\r\n",
             .accepted([.head("GET", "/", .http1_1, ["Host": "a", "Connection": "close"]), .end])),
        Case("a bare LF and a bare CR after Connection: close", "\(get)Connection: close\r\n\r\n\n\r",
             .accepted([.head("GET", "/", .http1_1, ["Host": "a", "Connection": "close"]), .end])),
        Case("a request after Connection: close<HTAB>", "\(get)Connection: close\t\r\n\r\n\(get)\r\n",
             .refused(after: [.head("GET", "/", .http1_1, ["Host": "a", "Connection": "close"]), .end]),
             stricterThanLLHTTP: "Connection tokens are read with OWS trimmed (llhttp does not see 'close' before a tab)"),
        Case("a request after HTTP/1.0 Connection: keep-alive, close", "GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n\(get)\r\n",
             .refused(after: [.head("GET", "/", .http1_0, ["Connection": "keep-alive, close"]), .end]),
             stricterThanLLHTTP: "close wins over keep-alive (llhttp keeps an HTTP/1.0 connection that says both alive)"),
    ]

    // MARK: Every method llhttp knows

    static let methods = [
        "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH", "COPY", "LOCK", "MKCOL", "MOVE", "PROPFIND",
        "PROPPATCH", "SEARCH", "UNLOCK", "BIND", "REBIND", "UNBIND", "ACL", "REPORT", "MKACTIVITY", "CHECKOUT", "MERGE", "M-SEARCH",
        "NOTIFY", "SUBSCRIBE", "UNSUBSCRIBE", "PURGE", "MKCALENDAR", "LINK", "UNLINK", "SOURCE", "QUERY",
    ]

    @Test(arguments: Self.methods)
    func everyMethodLLHTTPKnowsIsAccepted(method: String) {
        let target = method == "CONNECT" ? "a:443" : "/"
        let bytes = Array("\(method) \(target) HTTP/1.1\r\n\(Self.host)\r\n".utf8)
        let expected: [Part] = [.head(method, target, .http1_1, ["Host": "a"]), .end]
        for decoder in Decoder.allCases {
            let outcome = decoder.decode([bytes])
            #expect(outcome == Outcome(parts: expected), "\(decoder): \(outcome)")
        }
    }

    @Test(arguments: ["get", "Post", "FOO", "GETT", "GE", "PRI", "DESCRIBE", "SETUP", "M_SEARCH", "MSEARCH", "-"])
    func otherMethodsAreRefused(method: String) {
        let bytes = Array("\(method) / HTTP/1.1\r\n\(Self.host)\r\n".utf8)
        for decoder in Decoder.allCases {
            #expect(decoder.decode([bytes]).isRefused, "\(decoder) accepts \(method)")
        }
    }

    // MARK: Reads

    /// Three pipelined requests cut into two reads at every byte, and fed a byte at a time, give the same
    /// parts as fed whole.
    @Test func pipelinedRequestsGiveTheSamePartsWhereverTheBytesAreCut() {
        let bytes = Array(Self.threePipelined.utf8)
        let whole = Decoder.gatehouse.decode([bytes])
        #expect(whole == Outcome(parts: Self.threePipelinedParts))
        #expect(Decoder.llhttp.decode([bytes]) == whole)
        for cut in 0...bytes.count {
            let outcome = Decoder.gatehouse.decode(bytes.reads(cutAt: [cut]))
            #expect(outcome == whole, "cut at \(cut): \(outcome)")
        }
        #expect(Decoder.gatehouse.decode(bytes.map { [$0] }) == whole)
        // Three reads: every pair of cuts 7 bytes apart.
        for first in stride(from: 0, to: bytes.count, by: 7) {
            for second in stride(from: first, through: bytes.count, by: 11) {
                let outcome = Decoder.gatehouse.decode(bytes.reads(cutAt: [first, second]))
                #expect(outcome == whole, "cut at \(first) and \(second): \(outcome)")
            }
        }
    }

    /// A head that never ends is refused with 431 once it passes the limit, whatever the size of the reads,
    /// not buffered until the connection gives up.
    @Test(arguments: [1, 100, 1000, 4096, 8192, 10000])
    func oversizedHeadIsRefusedAsSoonAsItPassesTheLimit(readSize: Int) {
        let bytes = Array(("\(Self.get)X-Pad: " + String(repeating: "p", count: 30000)).utf8)
        let reads = stride(from: 0, to: bytes.count, by: readSize).map { Array(bytes[$0..<min($0 + readSize, bytes.count)]) }
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(HTTP1RequestDecoder(maxHeaderBytes: 8192)))
        var received = 0
        var refusal: (any Error)?
        for read in reads {
            do {
                try channel.writeInbound(ByteBuffer(bytes: read))
                received += read.count
            } catch {
                refusal = error
                received += read.count
                break
            }
        }
        _ = try? channel.finish()
        #expect(refusal as? HTTPParserError == .headerOverflow)
        #expect(received <= 8192 + readSize, "refused only after \(received) bytes")
    }
}
