public import NIOCore
public import NIOHTTP1
import GatehouseSyntax

/// Chunk-size lines (RFC 9112 §7.1): `1*HEXDIG *( ";" token [ "=" ( token / quoted-string ) ] ) CRLF`,
/// with no whitespace anywhere (BWS is a leniency smugglers use) and at most 15 hex digits.
extension HTTP1RequestParser {
    /// The size of the next chunk once its whole line has arrived (the line is consumed); nil before.
    public mutating func readChunkSizeLine(from buffer: inout ByteBuffer) throws(HTTPParserError) -> Int? {
        let read: Result<(size: Int, lineLength: Int)?, HTTPParserError> = buffer.withUnsafeReadableBytes { bytes in
            let window = UnsafeRawBufferPointer(rebasing: bytes[..<Swift.min(bytes.count, Self.maxChunkLineBytes)])
            guard let lineFeed = window.firstIndex(of: ASCIIByte.lineFeed) else {
                return window.count == Self.maxChunkLineBytes ? .failure(.invalidChunkSize) : .success(nil)
            }
            guard lineFeed > 0, bytes[lineFeed - 1] == ASCIIByte.carriageReturn else { return .failure(.lfExpected) }
            return Result { () throws(HTTPParserError) in
                (try ChunkLine.size(UnsafeRawBufferPointer(rebasing: bytes[..<(lineFeed - 1)])), lineFeed + 1)
            }
        }
        guard let line = try read.get() else { return nil }
        buffer.moveReaderIndex(forwardBy: line.lineLength)
        return line.size
    }
}

/// One chunk-size line without its CRLF.
public enum ChunkLine {
    public static let maxSizeDigits = 15

    public static func size(_ line: UnsafeRawBufferPointer) throws(HTTPParserError) -> Int {
        var index = 0
        var size = 0
        while index < line.count, let digit = ASCIIByte.hexValue(line[index]) {
            guard index < maxSizeDigits else { throw .invalidChunkSize }
            size = size << 4 | Int(digit)
            index += 1
        }
        guard index > 0 else { throw .invalidChunkSize }
        while index < line.count {
            index = try extensionEnd(line, from: index)
        }
        return size
    }

    /// Past one `;name[=value]`.
    private static func extensionEnd(_ line: UnsafeRawBufferPointer, from start: Int) throws(HTTPParserError) -> Int {
        guard line[start] == ASCIIByte.semicolon else { throw .invalidChunkSize }
        var index = tokenEnd(line, from: start + 1)
        guard index > start + 1 else { throw .invalidChunkSize }
        guard index < line.count, line[index] == ASCIIByte.equals else { return index }
        index += 1
        if index < line.count, line[index] == ASCIIByte.quote { return try quotedStringEnd(line, from: index) }
        let valueEnd = tokenEnd(line, from: index)
        guard valueEnd > index else { throw .invalidChunkSize }
        return valueEnd
    }

    private static func tokenEnd(_ line: UnsafeRawBufferPointer, from start: Int) -> Int {
        var index = start
        while index < line.count, ASCIIByte.isTokenByte(line[index]) { index += 1 }
        return index
    }

    /// Past a quoted-string starting at its opening quote: qdtext or quoted-pairs, no controls.
    private static func quotedStringEnd(_ line: UnsafeRawBufferPointer, from start: Int) throws(HTTPParserError) -> Int {
        var index = start + 1
        while index < line.count {
            let byte = line[index]
            if byte == ASCIIByte.quote { return index + 1 }
            if byte == ASCIIByte.backslash {
                index += 1
                guard index < line.count, ASCIIByte.isFieldValueByte(line[index]) else { throw .invalidChunkSize }
            } else if !ASCIIByte.isFieldValueByte(byte) {
                throw .invalidChunkSize
            }
            index += 1
        }
        throw .invalidChunkSize
    }
}
