public import NIOCore
public import NIOHTTP1
import GatehouseSyntax

/// Gatehouse's own strict HTTP/1.1 request parser (RFC 9112), working on the connection's bytes in
/// place: a head is searched for once (resuming where the last read stopped), then read in one pass;
/// bodies are handed on as slices of what arrived, never copied. Anything a request smuggler could
/// make two parsers read differently is refused (docs/security.md P-rows): every line ends CRLF,
/// one `Content-Length` of digits only, `Transfer-Encoding` only as exactly `chunked` and never with
/// a length or on HTTP/1.0, no obs-fold, no control bytes, chunk sizes bounded.
/// Errors are NIO's `HTTPParserError`: `.headerOverflow` means the head exceeded `maxHeaderBytes`.
public struct HTTP1RequestParser {
    public enum State {
        case head
        case fixedBody(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailers
        /// The body ended: `.end` is the next part.
        case messageEnd
        /// A request that switches protocols (an `Upgrade` header, CONNECT) ended: what follows is not HTTP/1.1.
        case stopped
        /// A request that closes the connection (HTTP/1.0 without keep-alive, `Connection: close`)
        /// ended: any byte after it is refused, as llhttp did.
        case closed
    }

    public let maxHeaderBytes: Int
    public var state = State.head
    /// How far the search for the end of a head (or trailer section) got in the bytes not yet consumed.
    public var sectionScan = SectionScan()
    /// What comes after the request being read.
    public var afterMessage = State.head
    /// The size of the request's head: its trailers may take what is left of `maxHeaderBytes`.
    public var headLength = 0

    /// Where the search for a head's empty line stands, as offsets from the first unconsumed byte.
    public struct SectionScan {
        public var scanned = 0
        public var lineStart = 0
    }

    /// Longest chunk-size line (size and extensions) accepted.
    public static let maxChunkLineBytes = 4096

    public init(maxHeaderBytes: Int) {
        self.maxHeaderBytes = maxHeaderBytes
    }

    /// The next request part at the front of `buffer`, consuming its bytes; nil when more bytes are
    /// needed, or (after a request that switches protocols) always.
    public mutating func nextPart(from buffer: inout ByteBuffer) throws(HTTPParserError) -> HTTPServerRequestPart? {
        while true {
            switch state {
            case .head:
                return try nextHead(from: &buffer).map { .head($0) }
            case .fixedBody(let remaining):
                guard let slice = Self.bodySlice(from: &buffer, upTo: remaining) else { return nil }
                state = slice.readableBytes == remaining ? .messageEnd : .fixedBody(remaining: remaining - slice.readableBytes)
                return .body(slice)
            case .chunkSize:
                guard let size = try readChunkSizeLine(from: &buffer) else { return nil }
                state = size == 0 ? .trailers : .chunkData(remaining: size)
            case .chunkData(let remaining):
                guard let slice = Self.bodySlice(from: &buffer, upTo: remaining) else { return nil }
                state = slice.readableBytes == remaining ? .chunkDataEnd : .chunkData(remaining: remaining - slice.readableBytes)
                return .body(slice)
            case .chunkDataEnd:
                guard buffer.readableBytes >= 2 else { return nil }
                guard buffer.readInteger(as: UInt16.self) == Self.crlf else { throw .lfExpected }
                state = .chunkSize
            case .trailers:
                guard let trailers = try nextTrailers(from: &buffer) else { return nil }
                endMessage()
                return .end(trailers.fields)
            case .messageEnd:
                endMessage()
                return .end(nil)
            case .stopped:
                return nil
            case .closed:
                // Line ends after the last request are tolerated (as llhttp did); anything else is refused.
                while let byte = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self),
                    byte == ASCIIByte.carriageReturn || byte == ASCIIByte.lineFeed
                {
                    buffer.moveReaderIndex(forwardBy: 1)
                }
                guard buffer.readableBytes == 0 else { throw .closedConnection }
                return nil
            }
        }
    }

    /// Whether a request has begun but not ended: bytes of it were taken or wait in `unparsed`.
    /// A connection that ends then has cut a request short.
    public func isMidMessage(unparsed: ByteBuffer) -> Bool {
        switch state {
        case .head: unparsed.readableBytes > 0
        case .stopped, .closed: false
        case .fixedBody, .chunkSize, .chunkData, .chunkDataEnd, .trailers, .messageEnd: true
        }
    }

    private mutating func endMessage() {
        state = afterMessage
    }

    /// Up to `remaining` body bytes of what has arrived, as a slice (no copy); nil if nothing has.
    private static func bodySlice(from buffer: inout ByteBuffer, upTo remaining: Int) -> ByteBuffer? {
        guard buffer.readableBytes > 0 else { return nil }
        return buffer.readSlice(length: min(remaining, buffer.readableBytes))
    }

    public static let crlf = UInt16(ASCIIByte.carriageReturn) << 8 | UInt16(ASCIIByte.lineFeed)
}
