import NIOCore
import NIOHTTP1
import GatehouseHTTP
import GatehouseSyntax

/// Where identity fields go: a name with a value, or with the bytes of a value that is its own header value
/// (`HeaderValueEncoding.isVerbatim`), written without a `String` made of them where the sink takes bytes.
package protocol IdentityFieldSink {
    mutating func add(_ name: String, _ value: String)
    mutating func addVerbatim(_ name: String, _ value: UnsafeBufferPointer<UInt8>)
    /// Whether the sink writes bytes (`addVerbatim` makes no `String`): a sink of `String`s is better given the
    /// values an identity keeps made (a cached identity's claims and payload are made once, not on every request).
    var takesBytes: Bool { get }
}

extension IdentityFieldSink {
    package mutating func addVerbatim(_ name: String, _ value: UnsafeBufferPointer<UInt8>) {
        add(name, String(decoding: value, as: UTF8.self))
    }

    package var takesBytes: Bool { false }
}

/// Identity fields added to NIO's fields (the decision endpoint's answer).
struct HeadersFieldSink: IdentityFieldSink {
    var headers: HTTPHeaders

    mutating func add(_ name: String, _ value: String) { headers.add(name: name, value: value) }
}

/// Where `UpstreamRequestHead` puts the fields it forwards.
protocol UpstreamFieldSink: IdentityFieldSink {
    mutating func addWebSocketUpgrade()
    /// The client's `TE: trailers`, which gRPC servers require of every call.
    mutating func addTrailersAcceptance()
    mutating func addForwardedFor(previous: [Substring], clientIP: String)
}

/// HTTP/1.1 bytes, written straight into the head's buffer.
struct BufferSink: UpstreamFieldSink {
    var buffer: ByteBuffer

    mutating func add(_ name: String, _ value: String) {
        HTTPHeadWriter.writeField(name, value, into: &buffer)
    }

    var takesBytes: Bool { true }

    mutating func addVerbatim(_ name: String, _ value: UnsafeBufferPointer<UInt8>) {
        HTTPHeadWriter.writeField(name, bytes: value, into: &buffer)
    }

    mutating func addWebSocketUpgrade() {
        buffer.writeStaticString("Upgrade: websocket\r\nConnection: upgrade\r\n")
    }

    /// TE is hop-by-hop in HTTP/1.1 and nothing Gatehouse's HTTP/1.1 upstreams need.
    mutating func addTrailersAcceptance() {}

    mutating func addForwardedFor(previous: [Substring], clientIP: String) {
        buffer.writeStaticString("X-Forwarded-For: ")
        if !previous.isEmpty {
            buffer.writeString(previous.joined(separator: ", "))
            buffer.writeStaticString(", ")
        }
        buffer.writeString(clientIP)
        buffer.writeStaticString("\r\n")
    }
}

/// An HTTP/2 header block (HTTP/2 upstreams), as the codec takes it: names in lower case; Host is `:authority` and
/// HTTP/2 frames bodies itself (RFC 9113 §8.2.2, §8.3.1).
struct HTTP2FieldSink: UpstreamFieldSink {
    var headers: [NGHTTP2Session.OutboundField] = []

    mutating func add(_ name: String, _ value: String) {
        let lowered = Self.lowercased(name)
        if lowered == "host" || lowered == "transfer-encoding" { return }
        // A request id (and a traceparent) is new on every request: kept out of the HPACK table, so that it does not
        // push out the entries that repeat (the token above all, then sent as an index instead of encoded again).
        let unique = lowered == RequestIDField.name || lowered == "traceparent"
        headers.append((lowered, value, !unique))
    }

    /// The names Gatehouse adds on every request, lower-cased once: lower-casing a name over 15 bytes makes a string.
    private static func lowercased(_ name: String) -> String {
        switch name {
        case "X-Forwarded-Proto": "x-forwarded-proto"
        case "X-Forwarded-Host": "x-forwarded-host"
        default: HTTP2FieldName.lowercased(name)
        }
    }

    /// HTTP/2 has no Upgrade (RFC 9113 §8.6): a WebSocket is not tunnelled over it.
    mutating func addWebSocketUpgrade() {}

    /// The one TE value HTTP/2 allows (RFC 9113 §8.2.2).
    mutating func addTrailersAcceptance() {
        headers.append(("te", "trailers", true))
    }

    mutating func addForwardedFor(previous: [Substring], clientIP: String) {
        headers.append(("x-forwarded-for", previous.isEmpty ? clientIP : previous.joined(separator: ", ") + ", " + clientIP, true))
    }
}
