package import NIOCore
import NIOTLS

/// The handler that decides which HTTP a client connection speaks, then sets the connection up
/// for it and hands it what was read meanwhile:
/// - `preface` (cleartext): HTTP/2 when the first bytes are the HTTP/2 connection preface (prior
///   knowledge, RFC 9113 §3.3: what gRPC clients and `curl --http2-prior-knowledge` send), HTTP/1.1
///   as soon as they cannot be; `Upgrade: h2c` is never honoured;
/// - `alpn` (after NIOSSL's handler): HTTP/2 when the TLS handshake chose `h2`, else HTTP/1.1.
/// A client that gives no answer within `idle_timeout` is closed.
package final class ProtocolSelector: ChannelInboundHandler, RemovableChannelHandler {
    package typealias InboundIn = ByteBuffer
    package typealias InboundOut = ByteBuffer

    package enum Method {
        case preface
        case alpn
    }

    package enum Selected {
        case http1
        case http2
    }

    /// `PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n`
    package static let preface: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    private let method: Method
    private let idleTimeout: TimeAmount
    private let configure: (Selected, any Channel) throws -> Void
    private var received: ByteBuffer?
    private var timeout: Scheduled<Void>?
    private var isSelected = false

    /// - Parameter configure: adds the handlers of the selected protocol after this one (on the loop).
    package init(_ method: Method, idleTimeout: TimeAmount, configure: @escaping (Selected, any Channel) throws -> Void) {
        self.method = method
        self.idleTimeout = idleTimeout
        self.configure = configure
    }

    package func channelActive(context: ChannelHandlerContext) {
        // Reads are manual (`autoRead` off): ask for the first bytes (or the handshake), and give up
        // on a client that sends none. `channelActive` goes on once the protocol's handlers are in.
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        timeout = context.eventLoop.scheduleTask(in: idleTimeout) {
            loopBound.value.close(promise: nil)
        }
        context.read()
    }

    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        guard !isSelected else {
            context.fireChannelRead(wrapInboundOut(bytes))
            return
        }
        if received == nil {
            received = bytes
        } else {
            received!.writeBuffer(&bytes)
        }
        if method == .preface, let selected = Self.select(received!) { select(selected, context: context) }
    }

    package func channelReadComplete(context: ChannelHandlerContext) {
        if isSelected {
            context.fireChannelReadComplete()
        } else {
            context.read()  // not enough bytes to tell yet, or the handshake goes on
        }
    }

    package func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if method == .alpn, !isSelected, case TLSUserEvent.handshakeCompleted(let negotiated) = event {
            context.fireUserInboundEventTriggered(event)
            select(negotiated == "h2" ? .http2 : .http1, context: context)
            return
        }
        if !isSelected, event is ChannelShouldQuiesceEvent {
            context.close(promise: nil)  // graceful stop: nothing was asked on this connection yet
            return
        }
        if !isSelected, case ChannelEvent.inputClosed = event {
            // Half-closed before a protocol could be told: with no bytes, nothing can ever be asked, so the
            // descriptor is given back now, not after idle_timeout (port scanners, health checks, and a
            // full descriptor table draining; docs/security.md P55). A few bytes go to HTTP/1.1, which
            // answers or refuses what it got.
            guard method == .preface, let received, received.readableBytes > 0 else {
                context.close(promise: nil)
                return
            }
            select(.http1, context: context)
        }
        context.fireUserInboundEventTriggered(event)
    }

    package func channelInactive(context: ChannelHandlerContext) {
        timeout?.cancel()
        context.fireChannelInactive()
    }

    /// nil while the bytes so far are a strict prefix of the preface.
    package static func select(_ bytes: ByteBuffer) -> Selected? {
        let view = bytes.readableBytesView
        for (offset, byte) in view.prefix(preface.count).enumerated() where byte != preface[offset] {
            return .http1
        }
        return view.count >= preface.count ? .http2 : nil
    }

    private func select(_ selected: Selected, context: ChannelHandlerContext) {
        isSelected = true
        timeout?.cancel()
        do {
            try configure(selected, context.channel)
        } catch {
            context.close(promise: nil)
            return
        }
        let bytes = received
        received = nil
        // The handlers just added learn that the connection is up, then get what was read.
        context.fireChannelActive()
        if let bytes { context.fireChannelRead(wrapInboundOut(bytes)) }
        // The read-complete of this read reaches them once this handler is gone.
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }
}
