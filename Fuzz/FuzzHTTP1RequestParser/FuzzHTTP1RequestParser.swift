// libFuzzer target for HTTP1RequestParser (Fuzz/README.md).
//
// Input: one selector byte, then the bytes a client sends on one connection. The selector picks how
// the bytes arrive (all at once, or in reads of n bytes) and whether consumed bytes are discarded
// after every read. Each read is a new buffer joined to the unparsed rest, as
// ClientConnectionHandler does. Besides "no crash, no hang", it checks:
// - the parser never returns parts forever without consuming bytes (the loop is bounded);
// - it never consumes more bytes than it was given;
// - parts come in order (head, body*, end), body parts are never empty;
// - an accepted head has at most one Content-Length, never with Transfer-Encoding, and only
//   `Transfer-Encoding: chunked` on HTTP/1.1; its body is never longer than the Content-Length
//   and is exactly that long at `.end`;
// - the parts, the bytes consumed and the error (if any) are the same however the bytes were split.
import NIOCore
import NIOHTTP1

@testable import Gatehouse
import FuzzSupport
import GatehouseHTTP
import GatehouseTelemetry
import GatehouseVocabulary

/// One input (libFuzzer's entry point calls it, Fuzz/Entry/FuzzHTTP1RequestParser; FuzzReplayTests replays the seeds through it).
public func fuzzHTTP1RequestParser(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let selector = data[0]
    let stream = UnsafeBufferPointer(start: data + 1, count: size - 1)
    let whole = RequestRun(stream, pattern: SplitPattern(0))
    if printOutcome { print(whole.result) }
    let pattern = SplitPattern(selector)
    if !pattern.isWholeWithDefaults {
        let split = RequestRun(stream, pattern: pattern)
        guard split.result == whole.result else {
            fatalError("split pattern \(selector) changed the outcome:\nwhole: \(whole.result)\nsplit: \(split.result)")
        }
    }
    return 0
}

/// Bit 3 of the pattern discards consumed bytes after every read (else only past 4096, as the
/// connection does).
extension SplitPattern {
    var isWholeWithDefaults: Bool { isWhole && !flag }
    var discardThreshold: Int { flag ? 0 : 4096 }
}

/// What a connection's parser made of the bytes: the parts (consecutive body parts merged), the
/// bytes consumed, and how it ended.
struct RequestOutcome: Equatable, CustomStringConvertible {
    enum Event: Equatable {
        case head(HTTPRequestHead)
        case body([UInt8])
        case end(HTTPHeaders?)
    }

    var events: [Event] = []
    var consumed = 0
    var error: HTTPParserError?
    var midMessage = false

    mutating func record(_ part: HTTPServerRequestPart) {
        switch part {
        case .head(let head):
            events.append(.head(head))
        case .body(let bytes):
            if case .body(let earlier) = events.last {
                events[events.count - 1] = .body(earlier + Array(bytes.readableBytesView))
            } else {
                events.append(.body(Array(bytes.readableBytesView)))
            }
        case .end(let trailers):
            events.append(.end(trailers))
        }
    }

    var description: String {
        "consumed \(consumed), error \(error.map { "\($0)" } ?? "none"), mid-message \(midMessage), events \(events)"
    }
}

/// Checks the order and framing of the parts of each request.
struct MessageChecker {
    private var inMessage = false
    private var contentLength: Int?
    private var chunked = false
    private var bodyBytes = 0

    mutating func check(_ part: HTTPServerRequestPart) {
        switch part {
        case .head(let head):
            require(!inMessage, "a head inside a request")
            inMessage = true
            let lengths = head.headers["content-length"]
            let codings = head.headers["transfer-encoding"]
            require(lengths.count <= 1, "head accepted with \(lengths.count) Content-Length fields")
            require(lengths.isEmpty || codings.isEmpty, "head accepted with both Content-Length and Transfer-Encoding")
            if !codings.isEmpty {
                require(
                    codings.count == 1 && codings[0].lowercased() == "chunked" && head.version == .http1_1,
                    "head accepted with Transfer-Encoding \(codings) on \(head.version)")
            }
            chunked = !codings.isEmpty
            if let length = lengths.first {
                guard let value = Int(length) else { fatalError("head accepted with Content-Length \(length)") }
                contentLength = value
            } else {
                contentLength = nil
            }
            bodyBytes = 0
        case .body(let bytes):
            require(inMessage, "a body part outside a request")
            require(bytes.readableBytes > 0, "an empty body part")
            bodyBytes += bytes.readableBytes
            if let contentLength {
                require(bodyBytes <= contentLength, "\(bodyBytes) body bytes for Content-Length \(contentLength)")
            } else {
                require(chunked, "body bytes for a request with neither Content-Length nor chunked")
            }
        case .end(let trailers):
            require(inMessage, "an end outside a request")
            if let contentLength {
                require(bodyBytes == contentLength, "end after \(bodyBytes) body bytes for Content-Length \(contentLength)")
            }
            if trailers != nil { require(chunked, "trailers on a request that is not chunked") }
            inMessage = false
        }
    }
}

struct RequestRun {
    var result = RequestOutcome()

    init(_ stream: UnsafeBufferPointer<UInt8>, pattern: SplitPattern) {
        var pattern = pattern
        var parser = HTTP1RequestParser(maxHeaderBytes: 8192)
        var checker = MessageChecker()
        var unparsed = ByteBuffer()
        var given = 0
        var consumed = 0
        var partsWithoutProgress = 0
        var parts = 0
        reading: while given < stream.count || given == 0 {
            let readSize = pattern.nextReadSize(remaining: stream.count - given)
            var read = ByteBuffer(bytes: UnsafeBufferPointer(rebasing: stream[given..<(given + readSize)]))
            given += readSize
            if unparsed.readableBytes == 0 {
                unparsed = read
            } else {
                unparsed.writeBuffer(&read)
            }
            while true {
                let part: HTTPServerRequestPart?
                do {
                    part = try parser.nextPart(from: &unparsed)
                } catch {
                    result.error = error
                    break reading
                }
                let nowConsumed = given - unparsed.readableBytes
                require(nowConsumed >= consumed, "consumed bytes went back from \(consumed) to \(nowConsumed)")
                require(nowConsumed <= given, "consumed \(nowConsumed) bytes of \(given)")
                guard let part else { break }
                partsWithoutProgress = nowConsumed == consumed ? partsWithoutProgress + 1 : 0
                consumed = nowConsumed
                parts += 1
                require(partsWithoutProgress <= 2, "\(partsWithoutProgress) parts in a row without consuming a byte")
                require(parts <= 2 * given + 2, "\(parts) parts from \(given) bytes")
                checker.check(part)
                result.record(part)
            }
            if unparsed.readableBytes == 0 {
                unparsed = ByteBuffer()
            } else if unparsed.readerIndex > pattern.discardThreshold {
                unparsed.discardReadBytes()
            }
            if stream.isEmpty { break }
        }
        result.consumed = given - unparsed.readableBytes
        result.midMessage = result.error == nil && parser.isMidMessage(unparsed: unparsed)
    }
}
