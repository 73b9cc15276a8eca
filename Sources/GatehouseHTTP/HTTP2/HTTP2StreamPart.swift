public import NIOCore

/// A header block's fields, as they came: names and values in order, nothing judged yet.
public typealias HTTP2FieldList = [(String, String)]

/// What one stream of an nghttp2 connection hands its reader: a header block (the head, or the trailers) or
/// DATA bytes, each with whether the peer ended the stream with it.
public enum HTTP2StreamPart {
    case fields(HTTP2FieldList, endStream: Bool)
    case data(ByteBuffer, endStream: Bool)
}
