import NIOCore
import NIOEmbedded
import NIOHTTP1

@testable import Gatehouse

/// What a request parser made of some bytes: the requests it framed completely, in order, and
/// whether it refused the bytes (or the connection's end cut a request short).
struct RequestFraming: Equatable, CustomStringConvertible {
    struct Request: Equatable {
        var method: String
        var uri: String
        var version: String
        var fields: [String]
        var body: [UInt8]
        var trailers: [String]?
    }

    enum Refusal: Equatable {
        case badRequest
        case tooLarge
    }

    var requests: [Request] = []
    var refusal: Refusal?

    var description: String {
        let framed = requests.map { "\($0.method) \($0.uri) \($0.version) \($0.fields) body \($0.body.count) bytes trailers \($0.trailers ?? [])" }
        return "\(framed) refused: \(refusal.map { "\($0)" } ?? "no")"
    }

    /// The parsers compared: Gatehouse's, and NIO's llhttp decoder as the oracle.
    enum Parser: CaseIterable {
        case gatehouse
        case llhttp
    }

    /// Feeds `pieces` as separate reads, then ends the connection.
    static func frame(_ pieces: [[UInt8]], with parser: Parser, maxHeaderBytes: Int = 8192) -> RequestFraming {
        let channel = EmbeddedChannel()
        switch parser {
        case .gatehouse:
            try! channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(HTTP1RequestDecoder(maxHeaderBytes: maxHeaderBytes)))
        case .llhttp:
            var limits = NIOHTTPDecoderLimitConfiguration()
            limits.maxHeaderListSize = maxHeaderBytes
            limits.maxHeaderFieldSize = maxHeaderBytes
            try! channel.pipeline.syncOperations.addHandler(
                ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .dropBytes, limitConfiguration: limits)))
        }
        var framing = RequestFraming()
        var current: Request?
        func collect() {
            while let part = try? channel.readInbound(as: HTTPServerRequestPart.self) {
                switch part {
                case .head(let head):
                    current = Request(
                        method: head.method == .MSEARCH ? "M-SEARCH" : head.method.rawValue, uri: head.uri, version: "\(head.version)",
                        fields: head.headers.map(Self.field), body: [], trailers: nil)
                case .body(let buffer):
                    current?.body += buffer.readableBytesView
                case .end(let trailers):
                    current?.trailers = trailers.map { $0.map(Self.field) }
                    if let request = current { framing.requests.append(request) }
                    current = nil
                }
            }
        }
        do {
            for piece in pieces {
                try channel.writeInbound(ByteBuffer(bytes: piece))
                collect()
            }
            _ = try channel.finish()
            collect()
        } catch {
            collect()
            framing.refusal = (error as? HTTPParserError) == .headerOverflow ? .tooLarge : .badRequest
        }
        return framing
    }

    /// llhttp's `M-SEARCH` arrives as NIO's `.MSEARCH`, whose raw value has no hyphen (Gatehouse
    /// keeps the method as sent); compared as sent.
    ///
    /// A field as compared: llhttp keeps a value's trailing whitespace, which RFC 9110 §5.5 says is
    /// not part of it (Gatehouse drops it); that is not a framing difference.
    private static func field(_ field: (name: String, value: String)) -> String {
        var value = Substring(field.value)
        while value.last == " " || value.last == "\t" { value = value.dropLast() }
        return "\(field.name): \(value)"
    }

    /// The bytes cut into two reads at `index`.
    static func split(_ bytes: [UInt8], at index: Int) -> [[UInt8]] {
        [Array(bytes[..<index]), Array(bytes[index...])]
    }
}
