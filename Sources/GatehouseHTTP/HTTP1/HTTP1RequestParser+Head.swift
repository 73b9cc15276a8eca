public import NIOCore
public import NIOHTTP1
import GatehouseSyntax

/// Heads and trailer sections: found by their empty line, then read in one pass.
extension HTTP1RequestParser {
    public mutating func nextHead(from buffer: inout ByteBuffer) throws(HTTPParserError) -> HTTPRequestHead? {
        while true {
            guard let length = try sectionLength(in: buffer, limit: maxHeaderBytes) else { return nil }
            sectionScan = SectionScan()
            if length == 2 {  // an empty line before the request line (RFC 9112 §2.2 lets a server ignore it)
                buffer.moveReaderIndex(forwardBy: 2)
                continue
            }
            let parsed = buffer.withUnsafeReadableBytes { bytes in
                Result { () throws(HTTPParserError) in try RequestHeadReader.read(UnsafeRawBufferPointer(rebasing: bytes[..<length])) }
            }
            let head = try parsed.get()
            buffer.moveReaderIndex(forwardBy: length)
            headLength = length
            afterMessage = head.stopsParsing ? .stopped : head.keepsConnection ? .head : .closed
            switch head.framing {
            case .none: state = .messageEnd
            case .length(let count): state = .fixedBody(remaining: count)
            case .chunked: state = .chunkSize
            }
            return head.head
        }
    }

    /// The trailer section after the last chunk; its fields (nil when there are none) once it has all arrived.
    public mutating func nextTrailers(from buffer: inout ByteBuffer) throws(HTTPParserError) -> TrailerSection? {
        // The head and the trailers share one limit (as in llhttp), so a request cannot double it.
        guard let length = try sectionLength(in: buffer, limit: max(maxHeaderBytes - headLength, 3)) else { return nil }
        sectionScan = SectionScan()
        let parsed = buffer.withUnsafeReadableBytes { bytes in
            Result { () throws(HTTPParserError) in
                var reader = FieldReader(bytes: UnsafeRawBufferPointer(rebasing: bytes[..<length]))
                return try reader.readFields(from: 0)
            }
        }
        let fields = try parsed.get()
        // Framing fields have no business after the body (RFC 9110 §6.5.1) and llhttp refuses them.
        guard fields.contentLengthCount == 0, fields.transferEncodingCount == 0 else { throw .invalidHeaderToken }
        if fields.connectionCloses, case .head = afterMessage { afterMessage = .closed }
        buffer.moveReaderIndex(forwardBy: length)
        return TrailerSection(fields: fields.list.isEmpty ? nil : HTTPHeaders(fields.list))
    }

    public struct TrailerSection {
        public var fields: HTTPHeaders?
    }

    /// The length of the head or trailer section at the front of `buffer`, up to and including its
    /// empty line; nil while it has not all arrived. Resumes where the previous call stopped, so a
    /// head dripped in byte by byte is scanned once. Every LF must follow a CR and every CR precede an LF.
    public mutating func sectionLength(in buffer: ByteBuffer, limit: Int) throws(HTTPParserError) -> Int? {
        var scan = sectionScan
        let found: Result<Int?, HTTPParserError> = buffer.withUnsafeReadableBytes { bytes in
            var index = scan.scanned
            let scanEnd = min(bytes.count, limit)
            while index < bytes.count {
                // Bytes above CR neither end a line nor break one: skip them, unless a CR was the last byte looked at
                // (the byte after it must be LF).
                if index == 0 || bytes[index - 1] != ASCIIByte.carriageReturn {
                    index = ByteRuns.firstByte(below: ASCIIByte.carriageReturn + 1, in: bytes, from: index, to: scanEnd)
                    if index == limit { return .failure(.headerOverflow) }
                    if index == bytes.count { break }
                }
                let byte = bytes[index]
                if byte == ASCIIByte.lineFeed {
                    guard index > 0, bytes[index - 1] == ASCIIByte.carriageReturn else { return .failure(.lfExpected) }
                    if index - 1 == scan.lineStart { return .success(index + 1) }
                    scan.lineStart = index + 1
                } else if index > 0, bytes[index - 1] == ASCIIByte.carriageReturn {
                    return .failure(.lfExpected)  // a CR not followed by LF
                }
                index += 1
                if index >= limit { return .failure(.headerOverflow) }
            }
            scan.scanned = index
            return .success(nil)
        }
        sectionScan = scan
        return try found.get()
    }
}

/// Reads a complete head: request line, fields, framing.
public struct RequestHeadReader {
    public var head: HTTPRequestHead
    public var framing: RequestBodyFraming
    /// CONNECT or an `Upgrade` header: after this request the connection may speak something else.
    public var stopsParsing: Bool
    /// Another request may follow this one (HTTP/1.1 without `Connection: close` or
    /// `Proxy-Connection: close`; HTTP/1.0 with `Connection: keep-alive`).
    public var keepsConnection: Bool

    public static func read(_ bytes: UnsafeRawBufferPointer) throws(HTTPParserError) -> RequestHeadReader {
        var reader = FieldReader(bytes: bytes)
        let lineEnd = reader.lineEnd(from: 0)
        let (method, uri, version) = try readRequestLine(bytes, end: lineEnd)
        let fields = try reader.readFields(from: lineEnd + 2)
        let framing = try fields.framing(version: version)
        let head = HTTPRequestHead(version: version, method: method, uri: uri, headers: HTTPHeaders(fields.list))
        let stopsParsing = fields.hasUpgrade || method == .CONNECT
        // A body before a protocol switch: where the old protocol ends is anybody's guess (llhttp
        // and others disagree), and a WebSocket handshake has none.
        guard !stopsParsing || framing == .none else { throw .invalidHeaderToken }
        return RequestHeadReader(
            head: head, framing: framing, stopsParsing: stopsParsing, keepsConnection: fields.keepsConnection(head))
    }

    /// `method SP request-target SP HTTP-version`, single spaces.
    private static func readRequestLine(_ bytes: UnsafeRawBufferPointer, end: Int) throws(HTTPParserError)
        -> (HTTPMethod, String, HTTPVersion)
    {
        guard let methodEnd = bytes[..<end].firstIndex(of: ASCIIByte.space),
            let method = RequestMethods.method(UnsafeRawBufferPointer(rebasing: bytes[..<methodEnd]))
        else { throw .invalidMethod }
        let targetStart = methodEnd + 1
        var targetEnd = targetStart
        while targetEnd < end, bytes[targetEnd] >= 0x21, bytes[targetEnd] <= 0x7E { targetEnd += 1 }
        guard targetEnd > targetStart, targetEnd < end, bytes[targetEnd] == ASCIIByte.space,
            RequestTargetForm.isAcceptable(UnsafeRawBufferPointer(rebasing: bytes[targetStart..<targetEnd]), connect: method == .CONNECT)
        else { throw .invalidURL }
        let version = UnsafeRawBufferPointer(rebasing: bytes[(targetEnd + 1)..<end])
        let parsedVersion: HTTPVersion
        if version.elementsEqual(Self.http11) {
            parsedVersion = .http1_1
        } else if version.elementsEqual(Self.http10) {
            parsedVersion = .http1_0
        } else {
            throw .invalidVersion
        }
        let uri = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[targetStart..<targetEnd]), as: UTF8.self)
        return (method, uri, parsedVersion)
    }

    private static let http11 = Array("HTTP/1.1".utf8)
    private static let http10 = Array("HTTP/1.0".utf8)
}
