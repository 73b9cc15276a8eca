import NIOCore
import NIOHTTP1
import Testing
import GatehouseHTTP


/// The strict parser of upstream responses (RFC 9112 §4-7): every input is fed in one piece, in
/// odd-sized pieces and byte by byte, and all three must give the same heads, bodies and ends.
struct UpstreamResponseParserTests {
    /// A parser's output in a comparable form. Consecutive body slices are merged: where they are
    /// cut depends on how the bytes arrived, the bytes themselves must not.
    enum Piece: Equatable {
        case head(status: Int, framing: UpstreamResponseHead.Framing, keepAlive: Bool, relayed: [String], length: Int? = nil)
        case body(String)
        case end
    }

    struct Outcome: Equatable {
        var pieces: [Piece] = []
        /// `next()` or `connectionClosed()` threw.
        var failed = false
        var upgraded = false
        /// What `takeBuffered()` gave after an upgrade.
        var tunnelBytes: String?

        mutating func record(_ part: UpstreamResponseParser.Part) {
            switch part {
            case .head(let head):
                let relayed = head.fields.filter { head.isRelayed($0) }.map { head.name(of: $0) }
                pieces.append(.head(
                    status: head.status, framing: head.framing, keepAlive: head.keepAlive, relayed: relayed,
                    length: head.relayedContentLength))
            case .body(let buffer):
                #expect(buffer.readableBytes > 0, "an empty body part would end a chunked body")
                if case .body(let earlier) = pieces.last {
                    pieces[pieces.count - 1] = .body(earlier + String(buffer: buffer))
                } else {
                    pieces.append(.body(String(buffer: buffer)))
                }
            case .end:
                pieces.append(.end)
            }
        }
    }

    /// Feeds `bytes` in pieces of `size`, taking every part after each, then (if asked) reports the close.
    private static func feed(_ bytes: [UInt8], size: Int, requestWasHEAD: Bool, thenClose: Bool) -> Outcome {
        var parser = UpstreamResponseParser()
        parser.requestWasHEAD = requestWasHEAD
        var outcome = Outcome()
        do {
            var start = 0
            while start < bytes.count {
                let end = min(start + size, bytes.count)
                parser.append(ByteBuffer(bytes: bytes[start..<end]))
                start = end
                while let part = try parser.next() { outcome.record(part) }
            }
            if thenClose, let part = try parser.connectionClosed() { outcome.record(part) }
        } catch {
            outcome.failed = true
        }
        outcome.upgraded = parser.isUpgraded
        if outcome.upgraded {
            outcome.tunnelBytes = parser.takeBuffered().map { String(buffer: $0) } ?? ""
            #expect(parser.takeBuffered() == nil)
            // Nothing more is parsed once the connection belongs to the tunnel.
            if case .some(.some) = try? parser.next() { Issue.record("a part after the upgrade") }
        }
        return outcome
    }

    /// The outcome of `text` fed whole; fed in pieces of 7 and byte by byte must give the same.
    private func parse(
        _ text: String, requestWasHEAD: Bool = false, thenClose: Bool = false, sourceLocation: SourceLocation = #_sourceLocation
    ) -> Outcome {
        let bytes = Array(text.utf8)
        let whole = Self.feed(bytes, size: max(bytes.count, 1), requestWasHEAD: requestWasHEAD, thenClose: thenClose)
        for size in [7, 1] {
            let split = Self.feed(bytes, size: size, requestWasHEAD: requestWasHEAD, thenClose: thenClose)
            #expect(split == whole, "fed in pieces of \(size)", sourceLocation: sourceLocation)
        }
        return whole
    }

    private func expectRefused(_ text: String, requestWasHEAD: Bool = false, sourceLocation: SourceLocation = #_sourceLocation) {
        let outcome = parse(text, requestWasHEAD: requestWasHEAD, sourceLocation: sourceLocation)
        #expect(outcome.failed, "\(text.debugDescription) was accepted: \(outcome.pieces)", sourceLocation: sourceLocation)
    }

    // MARK: - Framing

    @Test func contentLengthBodyIsDeliveredThenEnds() {
        let outcome = parse("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello", thenClose: true)
        #expect(outcome == Outcome(pieces: [
            .head(status: 200, framing: .contentLength(5), keepAlive: true, relayed: ["Content-Type"], length: 5),
            .body("hello"), .end,
        ]))
    }

    @Test func zeroContentLengthEndsAtTheHead() {
        let outcome = parse("HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx")
        #expect(outcome.pieces == [
            .head(status: 201, framing: .contentLength(0), keepAlive: true, relayed: [], length: 0), .end,
            .head(status: 200, framing: .contentLength(1), keepAlive: true, relayed: [], length: 1), .body("x"), .end,
        ])
        #expect(!outcome.failed)
    }

    @Test func responsesFollowingEachOtherOnOneConnectionAreSplitExactly() {
        let text = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc"
            + "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nde\r\n0\r\n\r\n"
            + "HTTP/1.1 404 Not Found\r\nContent-Length: 4\r\n\r\nnope"
        let outcome = parse(text, thenClose: true)
        #expect(outcome == Outcome(pieces: [
            .head(status: 200, framing: .contentLength(3), keepAlive: true, relayed: [], length: 3), .body("abc"), .end,
            .head(status: 200, framing: .chunked, keepAlive: true, relayed: []), .body("de"), .end,
            .head(status: 404, framing: .contentLength(4), keepAlive: true, relayed: [], length: 4), .body("nope"), .end,
        ]))
    }

    @Test func chunkedBodyIsDechunkedDroppingExtensionsAndTrailers() {
        let text = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: Chunked\r\nTrailer: X-Checksum\r\n\r\n"
            + "4;name=value\r\nWiki\r\n"
            + "6 ; quoted=\"a;b\"\r\npedia \r\n"
            + "E\r\nin \r\n\r\nchunks.\r\n"
            + "0a\r\n0123456789\r\n"
            + "0;last\r\nX-Checksum: abc\r\nX-Other: 1\r\n\r\n"
            + "HTTP/1.1 204 No Content\r\n\r\n"
        let outcome = parse(text, thenClose: true)
        #expect(outcome == Outcome(pieces: [
            .head(status: 200, framing: .chunked, keepAlive: true, relayed: ["Content-Type"]),
            .body("Wikipedia in \r\n\r\nchunks.0123456789"), .end,
            .head(status: 204, framing: .none, keepAlive: true, relayed: []), .end,
        ]))
    }

    /// Chunked framing from an HTTP/1.0 upstream (RFC 9112 §6.1: faulty) is read, never reused.
    @Test func chunkedFromAnHTTP10UpstreamIsNotReused() {
        let outcome = parse("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n")
        #expect(outcome == Outcome(pieces: [.head(status: 200, framing: .chunked, keepAlive: false, relayed: [], length: nil), .body("ok"), .end]))
    }

    /// Hop-by-hop names written with `_` are dropped like the real ones, and never frame the body.
    @Test func hopByHopNamesWithUnderscoresAreNotRelayedNorFraming() {
        let outcome = parse("HTTP/1.1 200 OK\r\nTransfer_Encoding: chunked\r\nKeep_Alive: timeout=5\r\nProxy_Authenticate: x\r\n"
            + "X_Other: y\r\nContent-Length: 2\r\n\r\nok")
        #expect(outcome == Outcome(pieces: [
            .head(status: 200, framing: .contentLength(2), keepAlive: true, relayed: ["X_Other"], length: 2), .body("ok"), .end,
        ]))
    }

    @Test func connectionListingMoreThan32NamesIsRefused() {
        let names = (0..<33).map { "X-N\($0)" }.joined(separator: ", ")
        expectRefused("HTTP/1.1 200 OK\r\nConnection: \(names)\r\nContent-Length: 0\r\n\r\n")
        let fewer = parse("HTTP/1.1 200 OK\r\nConnection: \((0..<32).map { "X-N\($0)" }.joined(separator: ", "))\r\nContent-Length: 0\r\n\r\n")
        #expect(!fewer.failed)
    }

    @Test func chunkedWithContentLengthIsChunkedNeverReusedAndTheLengthIsNotRelayed() {
        for text in [
            "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\nContent-Length: 3\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
        ] {
            let outcome = parse(text, thenClose: true)
            #expect(outcome == Outcome(pieces: [
                .head(status: 200, framing: .chunked, keepAlive: false, relayed: ["X-A"]), .body("abc"), .end,
            ]), "\(text.debugDescription)")
        }
    }

    @Test(arguments: ["5\r\nContent-Length: 6", "5, 6", "5,5,6", "6\r\nContent-Length: 5, 5"])
    func conflictingContentLengthsAreRefused(lengths: String) {
        expectRefused("HTTP/1.1 200 OK\r\nContent-Length: \(lengths)\r\n\r\nhello!")
    }

    @Test(arguments: ["5, 5", "5,5", "5\r\nContent-Length: 5", " 5 ,  5 "])
    func repeatedEqualContentLengthIsOneLength(lengths: String) {
        let outcome = parse("HTTP/1.1 200 OK\r\nContent-Length: \(lengths)\r\n\r\nhello")
        #expect(outcome.pieces.dropFirst() == [.body("hello"), .end])
        guard case .head(200, .contentLength(5), true, [], 5) = outcome.pieces.first else {
            Issue.record("head: \(String(describing: outcome.pieces.first))")
            return
        }
        #expect(!outcome.failed)
    }

    @Test(arguments: ["-1", "+5", "0x5", "5 5", "", "5;", "1234567890123456789", "٥"])
    func invalidContentLengthIsRefused(value: String) {
        expectRefused("HTTP/1.1 200 OK\r\nContent-Length: \(value)\r\n\r\nhello")
    }

    @Test(arguments: ["gzip, chunked", "chunked, gzip", "gzip", "identity", "xchunked", "chunked;q=1", "chunked\r\nTransfer-Encoding: chunked",
                      "gzip\r\nTransfer-Encoding: chunked"])
    func transferCodingOtherThanChunkedIsRefused(codings: String) {
        expectRefused("HTTP/1.1 200 OK\r\nTransfer-Encoding: \(codings)\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
    }

    @Test func answerToHEADHasNoBodyWhateverItsHeadersSay() {
        let lengthOnly = parse("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", requestWasHEAD: true, thenClose: true)
        #expect(lengthOnly == Outcome(pieces: [.head(status: 200, framing: .none, keepAlive: true, relayed: [], length: 5), .end]))

        let chunked = parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", requestWasHEAD: true, thenClose: true)
        #expect(chunked == Outcome(pieces: [.head(status: 200, framing: .none, keepAlive: true, relayed: []), .end]))

        // Bytes after it are the next response's, never this one's body.
        let followed = parse("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nHTTP/1.1 200 OK\r\n\r\n", requestWasHEAD: true)
        #expect(followed.pieces.count == 4)
        #expect(followed.pieces.last == .end)
        #expect(!followed.failed)
    }

    @Test func noContentAndNotModifiedHaveNoBody() {
        let text = "HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\n"
            + "HTTP/1.1 304 Not Modified\r\nContent-Length: 1234\r\nETag: \"x\"\r\n\r\n"
            + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
        let outcome = parse(text, thenClose: true)
        #expect(outcome == Outcome(pieces: [
            // A 204 may not carry a length (RFC 9110 §8.6): it is not relayed. A 304's tells the entity's.
            .head(status: 204, framing: .none, keepAlive: true, relayed: [], length: nil), .end,
            .head(status: 304, framing: .none, keepAlive: true, relayed: ["ETag"], length: 1234), .end,
            .head(status: 200, framing: .contentLength(2), keepAlive: true, relayed: [], length: 2), .body("ok"), .end,
        ]))
    }

    @Test func informationalHeadsPrecedeTheFinalResponseWithoutAnEnd() {
        let text = "HTTP/1.1 100 Continue\r\n\r\n"
            + "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"
            + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
        let outcome = parse(text, thenClose: true)
        #expect(outcome == Outcome(pieces: [
            .head(status: 100, framing: .none, keepAlive: true, relayed: []),
            .head(status: 103, framing: .none, keepAlive: true, relayed: ["Link"]),
            .head(status: 200, framing: .contentLength(2), keepAlive: true, relayed: [], length: 2), .body("ok"), .end,
        ]))
    }

    @Test func switchingProtocolsEndsAndLeavesTheRestToTheTunnel() {
        let tunnel = "\u{1}\u{2}raw HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"
        let text = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: x\r\n\r\n" + tunnel
        let outcome = parse(text, thenClose: true)
        #expect(outcome == Outcome(
            pieces: [.head(status: 101, framing: .none, keepAlive: true, relayed: ["Sec-WebSocket-Accept"]), .end],
            upgraded: true, tunnelBytes: tunnel))

        let alone = parse("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n")
        #expect(alone == Outcome(pieces: [.head(status: 101, framing: .none, keepAlive: true, relayed: []), .end], upgraded: true, tunnelBytes: ""))
    }

    @Test func closeDelimitedBodyEndsWhenTheUpstreamCloses() {
        let eleven = parse("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\npart one, part two", thenClose: true)
        #expect(eleven == Outcome(pieces: [
            .head(status: 200, framing: .untilClose, keepAlive: false, relayed: ["Content-Type"]), .body("part one, part two"), .end,
        ]))
        let ten = parse("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\nHTTP/1.1 200 OK\r\n\r\n", thenClose: true)
        #expect(ten == Outcome(pieces: [
            .head(status: 200, framing: .untilClose, keepAlive: false, relayed: []), .body("HTTP/1.1 200 OK\r\n\r\n"), .end,
        ]))
        let empty = parse("HTTP/1.1 200 OK\r\n\r\n", thenClose: true)
        #expect(empty == Outcome(pieces: [.head(status: 200, framing: .untilClose, keepAlive: false, relayed: []), .end]))
    }

    @Test func closeDelimitedBodyWithoutTheCloseHasNoEnd() {
        let outcome = parse("HTTP/1.1 200 OK\r\n\r\nsome")
        #expect(outcome == Outcome(pieces: [.head(status: 200, framing: .untilClose, keepAlive: false, relayed: []), .body("some")]))
    }

    @Test(arguments: [
        "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello",
        "HTTP/1.1 200 OK\r\nContent-Le",
        "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-Trailer: 1\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokH",
    ])
    func closeInTheMiddleOfAResponseIsAnError(text: String) {
        let outcome = parse(text, thenClose: true)
        #expect(outcome.failed)
        #expect(!outcome.pieces.contains(.end) || text.hasSuffix("okH"), "\(outcome.pieces)")
    }

    @Test func closeBetweenResponsesIsNotAnError() {
        #expect(parse("", thenClose: true) == Outcome())
        let outcome = parse("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", thenClose: true)
        #expect(outcome.pieces.last == .end)
        #expect(!outcome.failed)
    }

    // MARK: - Malformed heads

    @Test(arguments: [
        // Bare LF or CR: in the status line, in a field, as the end of the head.
        "HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX-A: 1\nX-B: 2\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX-A: 1\rX-B: 2\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\n\r\n\r\n",
        "HTTP/1.1 200 O\rK\r\nContent-Length: 0\r\n\r\n",
        // obs-fold, space or tab.
        "HTTP/1.1 200 OK\r\nX-A: 1\r\n continued\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX-A: 1\r\n\tContent-Length: 5\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 200 OK\r\n Content-Length: 0\r\n\r\n",
        // Control bytes in a value, a name, the reason.
        "HTTP/1.1 200 OK\r\nX-A: a\u{1}b\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX-A: a\u{0}b\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX-A: a\u{7F}\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX-A: \u{B}chunked\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 200 O\u{1}K\r\nContent-Length: 0\r\n\r\n",
        // Field lines that are not `token ":" value`.
        "HTTP/1.1 200 OK\r\nContent-Length : 0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX A: 1\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nNo-Colon\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 200 OK\r\n: empty-name\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX-Ünicode: 1\r\nContent-Length: 0\r\n\r\n",
    ])
    func malformedHeadIsRefused(text: String) {
        expectRefused(text)
    }

    @Test(arguments: [
        "HTTP/1.1 20 OK", "HTTP/1.1 2000 OK", "HTTP/1.1 2x0 OK", "HTTP/1.1  200 OK", "HTTP/1.1 200OK", "HTTP/1.1 099 Low",
        "HTTP/1.2 200 OK", "HTTP/2.0 200 OK", "HTTP/2 200 OK", "http/1.1 200 OK", "HTTP/1.1\t200 OK", "ICY 200 OK", " HTTP/1.1 200 OK",
        "HTTP/1.1 -20 OK", "HTTP/1.1", "",
    ])
    func badStatusLineIsRefused(statusLine: String) {
        expectRefused("\(statusLine)\r\nContent-Length: 0\r\n\r\n")
    }

    /// A head of bare-LF lines never contains CRLFCRLF: it must be refused when the LF arrives,
    /// not after 64 KiB or the response timeout (a 504 instead of the 502 it deserves).
    @Test(arguments: ["HTTP/1.1 200 OK\nContent-Length: 2\n\nok", "HTTP/1.1 200 OK\n", "\n", "HTTP/1.1 200 OK\r\nContent-Length: 2\n"])
    func headWithBareLFIsRefusedAsSoonAsTheLFArrives(text: String) {
        expectRefused(text)
    }

    @Test func statusLineWithoutReasonIsAccepted() {
        let outcome = parse("HTTP/1.1 200\r\nContent-Length: 0\r\n\r\nHTTP/1.1 418 \r\nContent-Length: 0\r\n\r\n")
        #expect(outcome.pieces == [
            .head(status: 200, framing: .contentLength(0), keepAlive: true, relayed: [], length: 0), .end,
            .head(status: 418, framing: .contentLength(0), keepAlive: true, relayed: [], length: 0), .end,
        ])
        #expect(!outcome.failed)
    }

    /// A head of exactly `size` bytes, padded in one field.
    private static func head(ofSize size: Int) -> String {
        let fixed = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX-Pad: \r\n\r\n"
        return "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX-Pad: " + String(repeating: "p", count: size - fixed.utf8.count) + "\r\n\r\n"
    }

    @Test func headUpTo64KiBIsAcceptedAndLargerRefused() {
        let atLimit = Self.head(ofSize: UpstreamResponseParser.maxHeadBytes)
        #expect(atLimit.utf8.count == 64 * 1024)
        #expect(parse(atLimit).pieces == [.head(status: 200, framing: .contentLength(0), keepAlive: true, relayed: ["X-Pad"], length: 0), .end])
        expectRefused(Self.head(ofSize: UpstreamResponseParser.maxHeadBytes + 1))
        // One that never ends is refused once it is too long, not buffered for ever.
        expectRefused("HTTP/1.1 200 OK\r\nX-Pad: " + String(repeating: "p", count: 70_000))
    }

    // MARK: - Malformed chunked bodies

    @Test(arguments: ["zz", "-1", " 5", "0x5", "5x", "", "+5", ";ext", "1000000000000000", "5\u{0}"])
    func badChunkSizeIsRefused(sizeLine: String) {
        expectRefused("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\(sizeLine)\r\nhello\r\n0\r\n\r\n")
    }

    @Test(arguments: ["3\r\nabcdef\r\n0\r\n\r\n", "3\r\nabc0\r\n\r\n", "3\r\nabcd\r\n0\r\n\r\n", "3\r\nabc\n0\r\n\r\n", "3\r\nabc\r\r\n0\r\n\r\n"])
    func chunkDataNotEndingAtItsSizeIsRefused(body: String) {
        let outcome = parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + body)
        #expect(outcome.failed)
        #expect(outcome.pieces.dropFirst() == [.body("abc")])
    }

    @Test func chunkLineOver4KiBIsRefused() {
        let ext = String(repeating: "a", count: UpstreamResponseParser.maxChunkLineBytes)
        expectRefused("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;\(ext)\r\nhello\r\n0\r\n\r\n")
    }

    /// The limit is on the line without its CRLF, however the bytes arrive (a CR waiting for its LF is not part of the line).
    @Test func chunkLineOfExactly4KiBIsAcceptedHoweverItArrives() {
        let fits = String(repeating: "a", count: UpstreamResponseParser.maxChunkLineBytes - 2)
        let outcome = parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;\(fits)\r\nhello\r\n0\r\n\r\n")
        #expect(outcome.pieces.dropFirst() == [.body("hello"), .end])
        #expect(!outcome.failed)
    }

    @Test func bareLFInChunkFramingIsRefused() {
        expectRefused("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n")
        expectRefused("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-T: 1\n\r\n")
        expectRefused("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\n")
    }

    @Test func trailersOver16KiBAreRefused() {
        let trailer = "X-T: " + String(repeating: "t", count: 1000) + "\r\n"
        expectRefused("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n" + String(repeating: trailer, count: 17) + "\r\n")
        let outcome = parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n" + String(repeating: trailer, count: 15) + "\r\n")
        #expect(outcome.pieces.dropFirst() == [.end])
        #expect(!outcome.failed)
    }

    @Test func trailersOfExactly16KiBAreAcceptedHoweverTheyArrive() {
        let trailer = "X-T: " + String(repeating: "t", count: 1024 - 7) + "\r\n"
        let trailers = String(repeating: trailer, count: UpstreamResponseParser.maxTrailerBytes / 1024)
        #expect(trailers.utf8.count == UpstreamResponseParser.maxTrailerBytes)
        let outcome = parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n" + trailers + "\r\n")
        #expect(outcome.pieces.dropFirst() == [.body("ok"), .end])
        #expect(!outcome.failed)
    }

    // MARK: - Keep-alive and relayed fields

    @Test(arguments: [
        ("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", false),
        ("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok", true),
        ("HTTP/1.0 200 OK\r\nConnection: Keep-Alive, close\r\nContent-Length: 2\r\n\r\nok", false),
        ("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", true),
        ("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", false),
        ("HTTP/1.1 200 OK\r\nConnection: CLOSE\r\nContent-Length: 2\r\n\r\nok", false),
        ("HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nConnection: x-a, close\r\nContent-Length: 2\r\n\r\nok", false),
        ("HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok", true),
        ("HTTP/1.1 200 OK\r\nConnection: closed\r\nContent-Length: 2\r\n\r\nok", true),
    ])
    func keepAliveFollowsTheVersionAndTheConnectionHeader(text: String, keepAlive: Bool) {
        let outcome = parse(text)
        guard case .head(_, .contentLength(2), let parsed, [], 2) = outcome.pieces.first else {
            Issue.record("head: \(outcome)")
            return
        }
        #expect(parsed == keepAlive)
        #expect(outcome.pieces.dropFirst() == [.body("ok"), .end])
    }

    @Test func fieldsTheConnectionHeaderNamesAreNotRelayed() {
        let text = "HTTP/1.1 200 OK\r\nConnection: X-Secret, keep-alive\r\nX-Secret: 1\r\nx-secret: 2\r\nX-Secret-Not: 3\r\n"
            + "Connection: x-other\r\nX-Other: 4\r\nX-Public: 5\r\nContent-Length: 0\r\n\r\n"
        #expect(parse(text).pieces == [
            .head(status: 200, framing: .contentLength(0), keepAlive: true, relayed: ["X-Secret-Not", "X-Public"], length: 0), .end,
        ])
        // The length that frames the body stays, whatever `Connection` says.
        let length = parse("HTTP/1.1 200 OK\r\nConnection: Content-Length\r\nContent-Length: 2\r\n\r\nok")
        #expect(length.pieces == [.head(status: 200, framing: .contentLength(2), keepAlive: true, relayed: [], length: 2), .body("ok"), .end])
    }

    @Test func hopByHopFieldsAndTheUpstreamRequestIDAreNotRelayed() {
        let text = "HTTP/1.1 200 OK\r\nKeep-Alive: timeout=5\r\nTE: trailers\r\nTrailer: X-T\r\nUpgrade: h2c\r\nProxy-Authenticate: Basic\r\n"
            + "Proxy-Connection: keep-alive\r\nProxy: x\r\nX-Request-Id: upstream-id\r\nx-request-id: again\r\nConnection: keep-alive\r\n"
            + "Set-Cookie: a=1\r\nSet-Cookie: b=2\r\nX-Proxy-Thing: kept\r\nProxyish: kept\r\nContent-Length: 0\r\n\r\n"
        #expect(parse(text).pieces == [
            .head(status: 200, framing: .contentLength(0), keepAlive: true,
                  relayed: ["Set-Cookie", "Set-Cookie", "X-Proxy-Thing", "Proxyish"], length: 0),
            .end,
        ])
    }

    /// The head's line ends and its values are scanned eight bytes at a time: a byte the field rules refuse, a bare CR or
    /// a bare LF is found at every position of a long value (in every word, across words), and what they accept (HTAB,
    /// obs-text) is relayed as sent.
    @Test func everyByteOfALongValueIsJudgedWhereverItStands() throws {
        for position in 0..<24 {
            for byte: UInt8 in [0x00, 0x01, 0x08, 0x0A, 0x0B, 0x0C, 0x0D, 0x1F, 0x7F] {
                // Alone, and after an accepted byte the scan must look at and go past (HTAB, obs-text).
                for before: UInt8? in [nil, 0x09, 0xFF] where before == nil || position > 1 {
                    var value = [UInt8](repeating: UInt8(ascii: "v"), count: 24)
                    if let before { value[1] = before }
                    value[position] = byte
                    let bytes = Array("HTTP/1.1 200 OK\r\nX-Long: ".utf8) + value + Array("\r\nContent-Length: 0\r\n\r\n".utf8)
                    #expect(throws: (any Error).self, "byte \(byte) at \(position) after \(String(describing: before))") {
                        try UpstreamResponseHeadParser.parse(ByteBuffer(bytes: bytes), requestWasHEAD: false)
                    }
                    // The connection's parser too (its search for the head's end meets a bare LF first), whole and in pieces.
                    #expect(parse(String(decoding: bytes, as: UTF8.self)).failed || before == 0xFF, "byte \(byte) at \(position)")
                }
            }
            for byte: UInt8 in [0x09, 0x80, 0xFF] {
                var value = [UInt8](repeating: UInt8(ascii: "v"), count: 24)
                value[position] = byte
                let bytes = Array("HTTP/1.1 200 OK\r\nX-Long: ".utf8) + value + Array("\r\nContent-Length: 0\r\n\r\n".utf8)
                let head = try UpstreamResponseHeadParser.parse(ByteBuffer(bytes: bytes), requestWasHEAD: false)
                let field = try #require(head.fields.first { head.name(of: $0) == "X-Long" })
                let kept = head.bytes.getBytes(at: head.bytes.readerIndex + field.value.lowerBound, length: field.value.count)
                // Whitespace at either end is not part of the value.
                let trimmed = byte == 0x09 && (position == 0 || position == 23) ? value.filter { $0 != 0x09 } : value
                #expect(kept == trimmed, "byte \(byte) at \(position)")
            }
        }
    }

    @Test func headKeepsFieldValuesTrimmedOfWhitespace() throws {
        let head = try UpstreamResponseHeadParser.parse(
            ByteBuffer(string: "HTTP/1.1 404 Not Here\r\nX-A: \t spaced value \t\r\nX-Empty:\r\nContent-Length: 0\r\n\r\n"), requestWasHEAD: false)
        #expect(head.status == 404)
        #expect(head.value(named: "x-a") == "spaced value")
        #expect(head.value(named: "X-EMPTY") == "")
        #expect(head.fields.map { head.name(of: $0) } == ["X-A", "X-Empty", "Content-Length"])
    }

    // MARK: - The relayed head

    private static let typicalHead = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: keep-alive, X-Secret\r\nKeep-Alive: timeout=5\r\n"
        + "X-Secret: s\r\nX-Request-Id: upstream-id\r\nProxy-Authenticate: Basic\r\nContent-Length: 5\r\nSet-Cookie: a=1\r\n"
        + "Set-Cookie: b=2\r\nX-Spaced:  kept as sent \r\n\r\n"

    private static func relayed(
        _ text: String, version: HTTPVersion = .http1_1, extra: HTTPHeadWriter.RelayedFields, requestWasHEAD: Bool = false
    ) throws -> String {
        let head = try UpstreamResponseHeadParser.parse(ByteBuffer(string: text), requestWasHEAD: requestWasHEAD)
        let bytes = HTTPHeadWriter.clientResponseHead(
            .relayed(head, requestID: "gh-1"), version: version, extraFields: extra, allocator: ByteBufferAllocator())
        return String(buffer: bytes)
    }

    /// A connection's heads share one fields array: the next head takes it only once the last is gone, so a head
    /// still in hand keeps its own fields whatever is parsed after it.
    @Test func aHeadInHandKeepsItsFieldsWhenTheNextIsParsed() throws {
        var storage: [UpstreamResponseHead.Field] = []
        let first = try UpstreamResponseHeadParser.parse(
            ByteBuffer(string: Self.typicalHead), requestWasHEAD: false, fieldStorage: &storage)
        let second = try UpstreamResponseHeadParser.parse(
            ByteBuffer(string: "HTTP/1.1 204 No Content\r\nX-Other: 1\r\n\r\n"), requestWasHEAD: false, fieldStorage: &storage)
        #expect(first.fields.count == 10 && second.fields.count == 1)
        let written = HTTPHeadWriter.clientResponseHead(.relayed(first, requestID: "gh-1"), version: .http1_1, extraFields: [], allocator: ByteBufferAllocator())
        #expect(try String(buffer: written) == Self.relayed(Self.typicalHead, extra: []))
        #expect(storage.count == 1)
    }

    @Test func relayedHeadDropsHopByHopFieldsAndReplacesTheRequestID() throws {
        #expect(try Self.relayed(Self.typicalHead, extra: [.connectionClose]) == "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
            + "Set-Cookie: a=1\r\nSet-Cookie: b=2\r\nX-Spaced:  kept as sent \r\nContent-Length: 5\r\nX-Request-Id: gh-1\r\n"
            + "Connection: close\r\n\r\n")
        #expect(try Self.relayed(Self.typicalHead, extra: []) == "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
            + "Set-Cookie: a=1\r\nSet-Cookie: b=2\r\nX-Spaced:  kept as sent \r\nContent-Length: 5\r\nX-Request-Id: gh-1\r\n\r\n")
    }

    /// RFC 9110 §8.6: a repeated equal length is accepted only as one value; the client's parser would refuse the list.
    @Test func relayedHeadWritesARepeatedContentLengthOnce() throws {
        let repeated = "HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\nX-A: 1\r\nContent-Length: 5\r\n\r\n"
        #expect(try Self.relayed(repeated, extra: []) == "HTTP/1.1 200 OK\r\nX-A: 1\r\nContent-Length: 5\r\nX-Request-Id: gh-1\r\n\r\n")
        // Without a body (HEAD, 304) the length still describes the representation.
        let notModified = "HTTP/1.1 304 Not Modified\r\nContent-Length: 0012\r\n\r\n"
        #expect(try Self.relayed(notModified, extra: []) == "HTTP/1.1 304 Not Modified\r\nContent-Length: 12\r\nX-Request-Id: gh-1\r\n\r\n")
        #expect(try Self.relayed("HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n", extra: [], requestWasHEAD: true)
            == "HTTP/1.1 200 OK\r\nContent-Length: 7\r\nX-Request-Id: gh-1\r\n\r\n")
    }

    @Test func relayedHeadIsReframedForItsClient() throws {
        let chunked = "HTTP/1.1 503 Service Unavailable\r\nTransfer-Encoding: chunked\r\nContent-Length: 9\r\nRetry-After: 5\r\n\r\n"
        #expect(try Self.relayed(chunked, extra: [.chunked]) == "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 5\r\nX-Request-Id: gh-1\r\n"
            + "Transfer-Encoding: chunked\r\n\r\n")
        #expect(try Self.relayed(chunked, version: .http1_0, extra: [.connectionClose]) == "HTTP/1.0 503 Service Unavailable\r\n"
            + "Retry-After: 5\r\nX-Request-Id: gh-1\r\nConnection: close\r\n\r\n")
        let length = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n"
        #expect(try Self.relayed(length, version: .http1_0, extra: [.connectionKeepAlive]) == "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n"
            + "X-Request-Id: gh-1\r\nConnection: keep-alive\r\n\r\n")
        #expect(try Self.relayed("HTTP/1.1 204\r\n\r\n", extra: []) == "HTTP/1.1 204 \r\nX-Request-Id: gh-1\r\n\r\n")
    }
}

/// Reading a parsed head as text, for the assertions above.
extension UpstreamResponseHead {
    func name(of field: Field) -> String {
        bytes.getString(at: bytes.readerIndex + field.name.lowerBound, length: field.name.count) ?? ""
    }

    func value(of field: Field) -> String {
        bytes.getString(at: bytes.readerIndex + field.value.lowerBound, length: field.value.count) ?? ""
    }

    func value(named name: String) -> String? {
        fields.first { self.name(of: $0).lowercased() == name.lowercased() }.map { value(of: $0) }
    }
}

/// Not HTTP/1.x at all (issue 23): judged as the first bytes arrive.
extension UpstreamResponseParserTests {
    private func startIsRefused(_ bytes: [UInt8]) -> UpstreamResponseParser.Malformed? {
        var parser = UpstreamResponseParser()
        parser.append(ByteBuffer(bytes: bytes))
        do {
            _ = try parser.next()
            return nil
        } catch {
            return error as? UpstreamResponseParser.Malformed
        }
    }

    @Test(arguments: ["H", "HTTP/1.", "HTTP/1.1", "HTTP/1.0 ", "HTTP/1.1 200 OK\r\n", "HTTP/1.1 200 OK\r\nServer: x"])
    func aValidStartWaitsForTheRestOfTheHead(received: String) {
        #expect(startIsRefused(Array(received.utf8)) == nil)
    }

    @Test(arguments: ["SSH-2.0-OpenSSH_9.6p1\r\n", "http/1.1 200", "HTTP/1.2 200", "HTTP/2 200", "HTTP/1.1\t200", " HTTP/1.1", "\r\nHTTP/1.1"])
    func anythingElseIsRefusedBeforeTheHeadEnds(received: String) throws {
        let refused = try #require(startIsRefused(Array(received.utf8)))
        #expect(refused.description.hasPrefix("not an HTTP/1.x response"))
    }

    @Test func anHTTP2ServersSettingsFrameIsNamedAsSuch() {
        let settings: [UInt8] = [0, 0, 6, 4, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 100]
        #expect(startIsRefused(settings) == .speaksHTTP2)
        #expect(startIsRefused([0, 0, 0, 4, 0, 0, 0, 0, 0]) == .speaksHTTP2, "an empty SETTINGS frame")
        #expect(startIsRefused([0, 0, 6, 1, 0, 0, 0, 0, 1]) != .speaksHTTP2, "a HEADERS frame is not a server's preface")
    }
}
