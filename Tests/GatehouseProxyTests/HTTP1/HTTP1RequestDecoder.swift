import NIOCore
import NIOHTTP1
import GatehouseHTTP

/// `HTTP1RequestParser` as a pipeline decoder, for the request-smuggling corpus, which compares it with NIO's llhttp
/// decoder through the same `ByteToMessageHandler`. The HTTP/1.1 door runs the parser inside
/// `ClientConnectionHandler` instead, without a pipeline hop per part.
final class HTTP1RequestDecoder: ByteToMessageDecoder {
    typealias InboundOut = HTTPServerRequestPart

    private var parser: HTTP1RequestParser

    init(maxHeaderBytes: Int) {
        parser = HTTP1RequestParser(maxHeaderBytes: maxHeaderBytes)
    }

    /// Every part the bytes complete, in one call: a request's `.end` may need no bytes of its own
    /// (a GET's comes with its head), and ByteToMessageHandler calls again only for bytes left.
    func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        while let part = try parser.nextPart(from: &buffer) {
            context.fireChannelRead(wrapInboundOut(part))
        }
        return .needMoreData
    }

    /// A connection that ends inside a request has cut it short; bytes after a protocol switch are
    /// handed on (the upgraded protocol's).
    func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        _ = try decode(context: context, buffer: &buffer)
        if seenEOF {
            if parser.isMidMessage(unparsed: buffer) { throw HTTPParserError.invalidEOFState }
        } else if buffer.readableBytes > 0 {
            context.fireChannelRead(NIOAny(buffer.readSlice(length: buffer.readableBytes)!))
        }
        return .needMoreData
    }
}
