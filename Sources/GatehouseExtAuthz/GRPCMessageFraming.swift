package import NIOCore
package import NIOHTTP1
import GatehouseExchange

/// gRPC's length-prefixed message (https://github.com/grpc/grpc/blob/master/doc/PROTOCOL-HTTP2.md): a
/// compressed flag, a 4-byte big-endian length, the message. Unary calls only: exactly one message.
package enum GRPCMessageFraming {
    /// The one message of a unary request body; nil when the body is not exactly one uncompressed message.
    package static func singleMessage(in body: ByteBuffer) -> [UInt8]? {
        var body = body
        guard let compressed = body.readInteger(as: UInt8.self), compressed == 0,
              let length = body.readInteger(as: UInt32.self), Int(length) == body.readableBytes
        else { return nil }
        return body.readBytes(length: Int(length))
    }

    package static func frame(_ message: [UInt8], allocator: ByteBufferAllocator) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: message.count + 5)
        buffer.writeInteger(UInt8(0))
        buffer.writeInteger(UInt32(message.count))
        buffer.writeBytes(message)
        return buffer
    }

    /// `grpc-timeout` (an integer of at most 8 digits and a unit: H M S m u n); nil when absent or unreadable.
    package static func timeout(_ value: String?) -> TimeAmount? {
        guard let value, let unit = value.last, value.count >= 2, value.count <= 9, let amount = Int64(value.dropLast()), amount >= 0 else {
            return nil
        }
        switch unit {
        case "H": return .hours(amount)
        case "M": return .minutes(amount)
        case "S": return .seconds(amount)
        case "m": return .milliseconds(amount)
        case "u": return .microseconds(amount)
        case "n": return .nanoseconds(amount)
        default: return nil
        }
    }

    /// A gRPC response's trailers: `grpc-status`, and `grpc-message` percent-encoded when there is one.
    package static func trailers(status: Int, message: String?) -> HTTPHeaders {
        var trailers = HTTPHeaders()
        trailers.add(name: "grpc-status", value: String(status))
        if let message { trailers.add(name: "grpc-message", value: GRPCRefusal.percentEncoded(message)) }
        return trailers
    }
}
