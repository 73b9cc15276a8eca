// libFuzzer target for UpstreamResponseParser (Fuzz/README.md).
//
// Input: one selector byte, then the bytes an upstream sends on one connection, which then closes.
// The selector picks how the bytes arrive (all at once, or in reads of n bytes, each read a new
// buffer as the channel delivers them) and whether the requests were HEAD. Besides "no crash, no
// hang", it checks:
// - the parser never returns parts forever without consuming bytes (the loop is bounded), and its
//   buffered bytes never grow while it is drained nor exceed what it was given;
// - parts come in order: 1xx heads, then a final head, body parts, end; an end only after a final
//   head; nothing after a 101's end;
// - a head's field, reason and line ranges lie inside its bytes, which start `HTTP/1.` and end in
//   an empty line;
// - no body for a HEAD request, 1xx, 204 or 304; a Content-Length body never longer than its length,
//   and exactly that long at its end;
// - the parts, whether it failed, what the close yields and the bytes left for a tunnel are the
//   same however the bytes were split.
import NIOCore

@testable import Gatehouse
import FuzzSupport
import GatehouseHTTP
import GatehouseProxy

/// One input (libFuzzer's entry point calls it, Fuzz/Entry/FuzzUpstreamResponseParser; FuzzReplayTests replays the seeds through it).
public func fuzzUpstreamResponseParser(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let selector = data[0]
    let stream = UnsafeBufferPointer(start: data + 1, count: size - 1)
    let requestWasHEAD = selector & 0x08 != 0
    let whole = ResponseRun(stream, pattern: SplitPattern(0), requestWasHEAD: requestWasHEAD)
    if printOutcome { print(whole.outcome) }
    let pattern = SplitPattern(selector)
    if !pattern.isWhole {
        let split = ResponseRun(stream, pattern: pattern, requestWasHEAD: requestWasHEAD)
        guard split.outcome == whole.outcome else {
            fatalError("split pattern \(selector) changed the outcome:\nwhole: \(whole.outcome)\nsplit: \(split.outcome)")
        }
    }
    return 0
}

// Bit 3 of the pattern says the requests were HEAD.

/// What the parser made of one connection's bytes; consecutive body parts are merged. An error's
/// text is kept for the report but not compared: which of two faults is noticed first may depend on
/// how much had arrived (a bare LF far into an over-long head).
struct ResponseOutcome: Equatable, CustomStringConvertible {
    struct Head: Equatable {
        var status: Int
        var framing: UpstreamResponseHead.Framing
        var keepAlive: Bool
        var contentLength: Int?
        var bytes: [UInt8]
    }

    enum Event: Equatable {
        case head(Head)
        case body([UInt8])
        case end
    }

    var events: [Event] = []
    var failed = false
    var closeGave: Event?
    var tunnelBytes: [UInt8]?
    var error = ""

    static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.events == rhs.events && lhs.failed == rhs.failed && lhs.closeGave == rhs.closeGave && lhs.tunnelBytes == rhs.tunnelBytes
    }

    static func event(_ part: UpstreamResponseParser.Part) -> Event {
        switch part {
        case .head(let head):
            .head(Head(
                status: head.status, framing: head.framing, keepAlive: head.keepAlive, contentLength: head.contentLength,
                bytes: Array(head.bytes.readableBytesView)))
        case .body(let bytes): .body(Array(bytes.readableBytesView))
        case .end: .end
        }
    }

    mutating func record(_ part: UpstreamResponseParser.Part) {
        let new = Self.event(part)
        if case .body(let more) = new, case .body(let earlier) = events.last {
            events[events.count - 1] = .body(earlier + more)
        } else {
            events.append(new)
        }
    }

    var description: String {
        "failed \(failed) \(error), close gave \(closeGave.map { "\($0)" } ?? "nothing"), tunnel \(tunnelBytes.map { "\($0.count) bytes" } ?? "none"), events \(events)"
    }
}

/// Checks the order and framing of the parts of each response.
struct ResponseChecker {
    let requestWasHEAD: Bool
    private var inResponse = false
    private var framing = UpstreamResponseHead.Framing.none
    private var bodyBytes = 0
    private var upgraded = false

    init(requestWasHEAD: Bool) { self.requestWasHEAD = requestWasHEAD }

    mutating func check(_ part: UpstreamResponseParser.Part, parser: UpstreamResponseParser) {
        require(!upgraded, "a part after a 101's end")
        switch part {
        case .head(let head):
            require(!inResponse, "a head inside a response")
            checkRanges(head)
            let noBody = head.isInformational || head.status == 204 || head.status == 304 || requestWasHEAD
            if noBody { require(head.framing == .none, "status \(head.status) (HEAD \(requestWasHEAD)) framed \(head.framing)") }
            if head.isInformational && head.status != 101 { return }  // the real response follows
            inResponse = true
            framing = head.framing
            bodyBytes = 0
        case .body(let bytes):
            require(inResponse, "a body part outside a response")
            require(bytes.readableBytes > 0, "an empty body part")
            bodyBytes += bytes.readableBytes
            switch framing {
            case .none: fatalError("body bytes for a response framed .none")
            case .contentLength(let length): require(bodyBytes <= length, "\(bodyBytes) body bytes for Content-Length \(length)")
            case .chunked, .untilClose: break
            }
        case .end:
            require(inResponse, "an end outside a response")
            if case .contentLength(let length) = framing {
                require(bodyBytes == length, "end after \(bodyBytes) body bytes for Content-Length \(length)")
            }
            inResponse = false
            upgraded = parser.isUpgraded
        }
    }

    private func checkRanges(_ head: UpstreamResponseHead) {
        let count = head.bytes.readableBytes
        let bytes = Array(head.bytes.readableBytesView)
        require(count <= UpstreamResponseParser.maxHeadBytes, "a head of \(count) bytes")
        require(bytes.starts(with: "HTTP/1.".utf8), "a head not starting HTTP/1.")
        require(bytes.suffix(4).elementsEqual("\r\n\r\n".utf8), "a head not ending in an empty line")
        require(head.reason.lowerBound >= 0 && head.reason.upperBound <= count, "reason \(head.reason) outside \(count) bytes")
        for field in head.fields {
            require(field.line.lowerBound >= 0 && field.line.upperBound <= count, "field line \(field.line) outside \(count) bytes")
            require(field.line.contains(field.name.lowerBound) && field.name.upperBound <= field.line.upperBound, "name \(field.name) outside \(field.line)")
            require(field.value.lowerBound >= field.name.upperBound && field.value.upperBound <= field.line.upperBound, "value \(field.value) outside \(field.line)")
        }
        for range in head.nominated {
            require(range.lowerBound >= 0 && range.upperBound <= count, "Connection token \(range) outside \(count) bytes")
        }
    }
}

struct ResponseRun {
    var outcome = ResponseOutcome()

    init(_ stream: UnsafeBufferPointer<UInt8>, pattern: SplitPattern, requestWasHEAD: Bool) {
        var pattern = pattern
        var parser = UpstreamResponseParser()
        parser.requestWasHEAD = requestWasHEAD
        var checker = ResponseChecker(requestWasHEAD: requestWasHEAD)
        var given = 0
        var partsWithoutProgress = 0
        var parts = 0
        while given < stream.count {
            let readSize = pattern.nextReadSize(remaining: stream.count - given)
            parser.append(ByteBuffer(bytes: UnsafeBufferPointer(rebasing: stream[given..<(given + readSize)])))
            given += readSize
            var buffered = parser.bufferedBytes
            require(buffered <= given, "\(buffered) bytes buffered of \(given) given")
            while true {
                let part: UpstreamResponseParser.Part?
                do {
                    part = try parser.next()
                } catch {
                    outcome.failed = true
                    outcome.error = "\(error)"
                    return
                }
                let nowBuffered = parser.bufferedBytes
                require(nowBuffered <= buffered, "buffered bytes grew from \(buffered) to \(nowBuffered) without a read")
                guard let part else { break }
                partsWithoutProgress = nowBuffered == buffered ? partsWithoutProgress + 1 : 0
                buffered = nowBuffered
                parts += 1
                require(partsWithoutProgress <= 2, "\(partsWithoutProgress) parts in a row without consuming a byte")
                require(parts <= 2 * given + 2, "\(parts) parts from \(given) bytes")
                checker.check(part, parser: parser)
                outcome.record(part)
            }
        }
        do {
            if let part = try parser.connectionClosed() {
                checker.check(part, parser: parser)
                outcome.closeGave = ResponseOutcome.event(part)
            }
        } catch {
            outcome.failed = true
            outcome.error = "at close: \(error)"
            return
        }
        if parser.isUpgraded {
            outcome.tunnelBytes = parser.takeBuffered().map { Array($0.readableBytesView) } ?? []
        }
    }
}
