public import NIOCore
import GatehouseSyntax

/// Splits the bytes of one upstream connection into responses: heads (parsed strictly by
/// `UpstreamResponseHeadParser`), body bytes as zero-copy slices, and each response's end.
/// Chunked bodies are de-chunked here (sizes, extensions and trailers checked and dropped); the
/// relay frames the body again for its client.
public struct UpstreamResponseParser {
    public init() {}

    public enum Part {
        case head(UpstreamResponseHead)
        case body(ByteBuffer)
        case end
    }

    public typealias Malformed = UpstreamResponseHeadParser.Malformed

    public static let maxHeadBytes = 64 * 1024
    public static let maxChunkLineBytes = 4 * 1024
    public static let maxTrailerBytes = 16 * 1024

    private enum State {
        case head
        case fixedBody(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailers(seen: Int)
        case untilClose
        /// After a 101: the rest belongs to the tunnel.
        case upgraded
        /// After an `end` that was not yet collected.
        case ended
        /// After a 101's head: its `end`, then `upgraded`.
        case endedBeforeTunnel
    }

    private var state = State.head
    private var buffer: ByteBuffer?
    /// How far the search for the head's end has looked (so a head in many reads is scanned once).
    private var headScanned = 0
    /// The request being answered was HEAD: its response has no body.
    public var requestWasHEAD = false
    /// The last head's fields array, whose storage the next head takes once that head is gone.
    private var fieldStorage: [UpstreamResponseHead.Field] = []

    /// Bytes received and not yet returned as parts.
    public var bufferedBytes: Int { buffer?.readableBytes ?? 0 }
    public var isUpgraded: Bool { if case .upgraded = state { true } else { false } }

    public mutating func append(_ bytes: ByteBuffer) {
        if buffer == nil || buffer!.readableBytes == 0 {
            buffer = bytes
        } else {
            var incoming = bytes
            buffer!.writeBuffer(&incoming)
        }
    }

    /// Everything buffered, for the tunnel after a 101.
    public mutating func takeBuffered() -> ByteBuffer? {
        defer { buffer = nil }
        return buffer?.readableBytes ?? 0 > 0 ? buffer : nil
    }

    /// The next part, or nil when more bytes are needed.
    public mutating func next() throws -> Part? {
        switch state {
        case .ended, .endedBeforeTunnel:
            return takeEnd()
        case .head:
            return try nextHead()
        case .fixedBody(let remaining):
            return bodyPart(of: remaining, ended: .ended) { .fixedBody(remaining: $0) }
        case .chunkSize:
            return try nextChunkSize()
        case .chunkData(let remaining):
            return bodyPart(of: remaining, ended: .chunkDataEnd) { .chunkData(remaining: $0) }
        case .chunkDataEnd:
            guard let line = try takeLine(limit: 2) else { return nil }
            guard line.readableBytes == 0 else { throw Malformed("chunk data longer than its size") }
            state = .chunkSize
            return try next()
        case .trailers(let seen):
            return try nextTrailer(seen: seen)
        case .untilClose:
            guard let slice = slice(upTo: Int.max) else { return nil }
            return .body(slice)
        case .upgraded:
            return nil
        }
    }

    /// A response's end, already read: handed out once, then the next response's head (or, after a 101, the tunnel).
    private mutating func takeEnd() -> Part {
        if case .endedBeforeTunnel = state { state = .upgraded } else { state = .head }
        return .end
    }

    /// The upstream closed its side: the end of a body delimited by the close, or an error if a
    /// response was cut short. Nil if no response was under way.
    public mutating func connectionClosed() throws -> Part? {
        switch state {
        case .untilClose:
            state = .head
            return .end
        case .head where bufferedBytes == 0, .upgraded:
            return nil
        case .ended, .endedBeforeTunnel:
            return takeEnd()
        default:
            throw Malformed("connection closed mid-response")
        }
    }

    // MARK: - Steps

    private mutating func nextHead() throws -> Part? {
        guard var bytes = buffer else { return nil }
        guard let length = try headLength(in: bytes) else {
            if bytes.readableBytes > Self.maxHeadBytes { throw Malformed("response head over \(Self.maxHeadBytes) bytes") }
            try Self.checkStatusLineStart(bytes)
            return nil
        }
        guard length <= Self.maxHeadBytes else { throw Malformed("response head over \(Self.maxHeadBytes) bytes") }
        let headBytes = bytes.readSlice(length: length)!  // safe: length <= readableBytes
        keep(bytes)
        headScanned = 0
        let head = try UpstreamResponseHeadParser.parse(headBytes, requestWasHEAD: requestWasHEAD, fieldStorage: &fieldStorage)
        switch head.framing {
        case .none:
            // A 1xx is followed by the real response; 101 hands the connection over.
            state = head.status == 101 ? .endedBeforeTunnel : head.isInformational ? .head : .ended
        case .contentLength(let length):
            state = length == 0 ? .ended : .fixedBody(remaining: length)
        case .chunked:
            state = .chunkSize
        case .untilClose:
            state = .untilClose
        }
        return .head(head)
    }

    private static let statusLineStart = Array("HTTP/1.".utf8)

    /// An upstream that does not speak HTTP/1.x (an SSH banner, an HTTP/2 server's SETTINGS frame, a
    /// database) is told apart by its first bytes, as they arrive, instead of after the whole
    /// `[upstream] timeout` waiting for a blank line that never comes (nginx: "upstream sent no valid
    /// HTTP/1.0 header"). The head parser checks the rest of the status line once it is whole.
    public static func checkStatusLineStart(_ bytes: ByteBuffer) throws {
        try bytes.withUnsafeReadableBytes { received in
            if isHTTP2SettingsFrame(received) { throw Malformed.speaksHTTP2 }
            for (index, byte) in received.prefix(statusLineStart.count + 2).enumerated() {
                let fits = switch index {
                case ..<statusLineStart.count: byte == statusLineStart[index]
                case statusLineStart.count: byte == UInt8(ascii: "0") || byte == UInt8(ascii: "1")
                default: byte == ASCIIByte.space
                }
                guard fits else { throw Malformed("not an HTTP/1.x response: it begins \(LogText.printable(received.prefix(32)))") }
            }
        }
    }

    /// An HTTP/2 server's connection preface: a SETTINGS frame (type 4) on stream 0, length a multiple of 6.
    private static func isHTTP2SettingsFrame(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count >= 9, bytes[3] == 0x04, bytes[5] & 0x7F == 0, bytes[6] == 0, bytes[7] == 0, bytes[8] == 0 else { return false }
        let length = Int(bytes[0]) << 16 | Int(bytes[1]) << 8 | Int(bytes[2])
        return length % 6 == 0
    }

    /// `1*HEXDIG [ chunk-ext ] CRLF`; size 0 starts the trailers.
    private mutating func nextChunkSize() throws -> Part? {
        guard let line = try takeLine(limit: Self.maxChunkLineBytes) else { return nil }
        let size = try line.withUnsafeReadableBytes { bytes -> Int in
            var size = 0
            var digits = 0
            for byte in bytes {
                guard let value = ASCIIByte.hexValue(byte) else {
                    guard digits > 0, byte == ASCIIByte.semicolon || byte == ASCIIByte.space || byte == UInt8(ascii: "\t") else {
                        throw Malformed("bad chunk size")
                    }
                    break
                }
                digits += 1
                guard digits <= 15 else { throw Malformed("chunk size too large") }
                size = size * 16 + Int(value)
            }
            guard digits > 0 else { throw Malformed("bad chunk size") }
            return size
        }
        state = size == 0 ? .trailers(seen: 0) : .chunkData(remaining: size)
        return try next()
    }

    /// Trailer fields are read and dropped (nothing relays them); the empty line ends the response.
    private mutating func nextTrailer(seen: Int) throws -> Part? {
        var seen = seen
        while let line = try takeLine(limit: max(Self.maxTrailerBytes - seen, 0)) {
            if line.readableBytes == 0 {
                state = .ended
                return try next()
            }
            seen += line.readableBytes + 2
            state = .trailers(seen: seen)
        }
        return nil
    }

    // MARK: - Bytes

    /// Keeps what is left of the received bytes; none is kept as nil, so the channel's receive
    /// buffer is not held between reads (NIO reuses it only when nothing else refers to it).
    private mutating func keep(_ rest: ByteBuffer) {
        buffer = rest.readableBytes == 0 ? nil : rest
    }

    /// Up to `remaining` bytes of a delimited body (a length's or a chunk's): then the state is `ended` once all have
    /// come, else what `more` makes of the bytes still to come.
    private mutating func bodyPart(of remaining: Int, ended: State, more: (Int) -> State) -> Part? {
        guard let slice = slice(upTo: remaining) else { return nil }
        let left = remaining - slice.readableBytes
        state = left == 0 ? ended : more(left)
        return .body(slice)
    }

    private mutating func slice(upTo limit: Int) -> ByteBuffer? {
        guard var bytes = buffer, bytes.readableBytes > 0 else { return nil }
        let slice = bytes.readSlice(length: min(limit, bytes.readableBytes))!  // safe: within readableBytes
        keep(bytes)
        return slice
    }

    /// A line without its CRLF, or nil if it has not arrived yet; refuses one longer than `limit`
    /// or ended by a bare LF.
    private mutating func takeLine(limit: Int) throws -> ByteBuffer? {
        guard var bytes = buffer else { return nil }
        let view = bytes.readableBytesView
        guard let lf = view.firstIndex(of: UInt8(ascii: "\n")) else {
            if bytes.readableBytes > limit + 1 { throw Malformed("line too long") }  // + 1: its CR may be here
            return nil
        }
        let length = lf - view.startIndex
        guard length >= 1, view[lf - 1] == UInt8(ascii: "\r") else { throw Malformed("bare LF") }
        guard length - 1 <= limit else { throw Malformed("line too long") }
        let line = bytes.readSlice(length: length - 1)!  // safe: before the LF
        bytes.moveReaderIndex(forwardBy: 2)
        keep(bytes)
        return line
    }

    /// The head's length up to and including its CRLFCRLF, if it has arrived. A bare LF is
    /// refused as soon as it is seen (a head of bare-LF lines would otherwise wait for the limit).
    private mutating func headLength(in bytes: ByteBuffer) throws -> Int? {
        let found: Int? = try bytes.withUnsafeReadableBytes { raw in
            // Only a byte at or below LF can end the head: the rest is skipped eight bytes at a time.
            var index = ByteRuns.firstByte(below: ASCIIByte.lineFeed + 1, in: raw, from: headScanned, to: raw.count)
            while index < raw.count {
                if raw[index] == ASCIIByte.lineFeed {
                    guard index >= 1, raw[index - 1] == ASCIIByte.carriageReturn else { throw Malformed("bare LF") }
                    if index >= 3, raw[index - 2] == ASCIIByte.lineFeed, raw[index - 3] == ASCIIByte.carriageReturn { return index + 1 }
                }
                index = ByteRuns.firstByte(below: ASCIIByte.lineFeed + 1, in: raw, from: index + 1, to: raw.count)
            }
            return nil
        }
        if found == nil { headScanned = bytes.readableBytes }
        return found
    }
}
