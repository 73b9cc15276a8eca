public import NIOCore
public import NIOHTTP1
import GatehouseSyntax

/// A header block's fields, as they came: names and values in order, nothing judged yet.
public typealias HTTP2FieldList = [(String, String)]

extension HTTP2FieldList {
    /// The field at `slot`, moved out (the empty strings left behind are no allocation): a field read once is taken,
    /// not copied (a copy retains its strings and the block's end releases them).
    @inlinable public static func take(_ slot: inout (String, String)) -> (String, String) {
        var taken = ("", "")
        swap(&taken, &slot)
        return taken
    }
}

extension HTTPHeaders {
    /// These fields as an HTTP/2 block takes them: names in lower case (trailers written on an HTTP/2 stream).
    public var http2Fields: HTTP2FieldList {
        map { (HTTP2FieldName.lowercased($0.name), $0.value) }
    }
}

/// What one stream of an nghttp2 connection hands its reader: a header block (the head, or the trailers) or
/// DATA bytes, each with whether the peer ended the stream with it.
public enum HTTP2StreamPart {
    case fields(HTTP2FieldList, endStream: Bool)
    case data(ByteBuffer, endStream: Bool)
}
