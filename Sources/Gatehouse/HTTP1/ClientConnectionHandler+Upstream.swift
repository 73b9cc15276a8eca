import Foundation
import Logging
import Prometheus
import NIOCore
import NIOHTTP1

/// The upstream half of a client connection: connect, stream, time out, answer 502/504.
extension ClientConnectionHandler: UpstreamConnectionDelegate {
    func connect(_ exchange: HTTP1Forward, context: ChannelHandlerContext) {
        if let connection = pool.takeIdle() {
            begin(exchange, on: connection, context: context)
            return
        }
        state = .connecting(exchange)
        pool.connect().assumeIsolated().whenComplete { result in
            guard case .connecting(let current) = self.state, current === exchange, let context = self.context else {
                if case .success(let connection) = result { self.pool.release(connection) }
                return
            }
            switch result {
            case .success(let connection):
                self.begin(exchange, on: connection, context: context)
            case .failure(let error):
                self.services.logger.warning("upstream connect failed", metadata: ["gatehouse.error": "\(error)"])
                self.answerUpstreamFailure(exchange, status: .badGateway, context: context)
            }
        }
    }

    private func begin(_ exchange: HTTP1Forward, on connection: UpstreamConnection, context: ChannelHandlerContext) {
        guard let upstreamHead = exchange.upstreamHead else { return }
        connection.delegate = self
        exchange.connection = connection
        state = .forwarding(exchange)
        let channel = connection.channel
        connection.startRequest(head: upstreamHead.bytes, chunkedBody: upstreamHead.chunkedBody, isHEAD: exchange.isHEAD)
        for buffered in exchange.bufferedBody {
            connection.writeBody(buffered)
            exchange.bodyForwarded = true
        }
        exchange.bufferedBody.removeAll()
        if exchange.requestEnded { connection.writeEnd() }
        channel.flush()
        // The core's deadline (a retry on a fresh connection keeps the first one's); armed on every attempt,
        // as the watchdog may have fired while the retry was connecting.
        let deadline = core.upstreamLegStarted(now: .now()) ?? NIODeadline.now() + services.responseTimeout
        exchange.responseDeadline = deadline
        armWatchdog(for: deadline, context: context)
        if !exchange.requestEnded { armWatchdog(for: lastClientRead + services.idleTimeout, context: context) }
        channel.read()
        if !exchange.requestEnded && channel.isWritable { context.read() }
    }

    // MARK: UpstreamConnectionDelegate

    func upstreamReceived(_ part: UpstreamResponseParser.Part) {
        if case .upgrading(let exchange) = state, case .end = part, let context {
            startTunnel(exchange, context: context)
            return
        }
        guard case .forwarding(let exchange) = state, let context else { return }
        switch part {
        case .head(let response):
            if response.status == 101 {
                guard exchange.request.isWebSocket else {
                    answerUpstreamFailure(exchange, status: .badGateway, context: context)
                    return
                }
                acceptUpgrade(exchange, response: response, context: context)
                return
            }
            if response.isInformational {
                // 100 Continue and friends: the client may be waiting for it before sending its body.
                // Never to an HTTP/1.0 client, which would take it for the answer (RFC 9110 §15.2).
                guard exchange.clientSpeaksHTTP11 else { return }
                let head = HTTPHeadWriter.relayedResponseHead(
                    response, version: exchange.head.version, requestID: exchange.requestID, extraFields: [],
                    allocator: context.channel.allocator)
                context.writeAndFlush(wrapOutboundOut(head), promise: nil)
                return
            }
            exchange.responseHeadSent = true
            // `[upstream] timeout` bounds the wait for the head, on both front doors; from here the response
            // runs as long as its bytes move, and is cut after idle_timeout without any (docs/reference.md §3.4).
            exchange.responseDeadline = .now() + services.idleTimeout
            context.write(wrapOutboundOut(clientResponseHead(response, exchange, allocator: context.channel.allocator)), promise: nil)
        case .body(let buffer):
            exchange.responseDeadline = .now() + services.idleTimeout
            if exchange.chunkedToClient {
                ChunkedFraming.writeChunk(buffer, to: { context.write(self.wrapOutboundOut($0), promise: nil) }, allocator: context.channel.allocator)
            } else {
                context.write(wrapOutboundOut(buffer), promise: nil)
            }
        case .end:
            if exchange.chunkedToClient { context.write(wrapOutboundOut(ChunkedFraming.lastChunk(context.channel.allocator)), promise: nil) }
            completeExchange(exchange, upstreamReusable: exchange.requestEnded && exchange.upstreamKeepAlive, context: context)
        }
    }

    func upstreamReadComplete() {
        guard case .forwarding(let exchange) = state, let context else { return }
        context.flush()
        if context.channel.isWritable { exchange.connection?.channel.read() }
    }

    func upstreamWritabilityChanged(isWritable: Bool) {
        guard case .forwarding(let exchange) = state, isWritable, !exchange.requestEnded, let context else { return }
        lastClientRead = .now()  // the stall clock counts from when we ask for more, not from our own pause
        context.read()
    }

    func upstreamClosed() {
        if case .upgrading = state {
            state = .discarding
            context?.close(promise: nil)
            return
        }
        guard case .forwarding(let exchange) = state, let context, let connection = exchange.connection else { return }
        connection.delegate = nil
        exchange.connection = nil
        if exchange.responseHeadSent {
            // The response was cut short: the client must not take it for complete.
            exchange.responseDeadline = nil
            state = .discarding
            context.close(promise: nil)
        } else {
            // A keep-alive connection the upstream closed as we reused it, without a byte of answer, may be
            // retried (the core's rule); anything else is 502.
            let action = core.upstreamLost(
                connection.isReused && !connection.answered ? .closedOnReuse : .failed,
                replayable: exchange.requestEnded && !exchange.bodyForwarded)
            if !action.isRetry {
                services.logUpstreamProtocolError(connection)
                exchange.responseDeadline = nil
                state = .core
            }
            perform(action, context: context)
        }
    }

    // MARK: Completion

    private func completeExchange(_ exchange: HTTP1Forward, upstreamReusable: Bool, context: ChannelHandlerContext) {
        exchange.responseDeadline = nil
        if let connection = exchange.connection {
            exchange.connection = nil
            upstreamReusable ? pool.release(connection) : pool.discard(connection)
        }
        perform(core.upstreamCompleted(now: .now()), context: context)
        // An upstream that answered before the request body ended: close rather than drain it.
        finishResponse(keepAlive: exchange.responseKeepAlive && exchange.requestEnded, context: context)
    }

    func responseTimedOut(_ exchange: HTTP1Forward) {
        guard case .forwarding(let current) = state, current === exchange, let context else { return }
        if let connection = exchange.connection {
            exchange.connection = nil
            pool.discard(connection)
        }
        if exchange.responseHeadSent {
            state = .discarding
            context.close(promise: nil)
        } else {
            answerUpstreamFailure(exchange, status: .gatewayTimeout, context: context)
        }
    }

    /// 502 / 504, answered by the core (not an authentication failure, so nothing in the failure log).
    func answerUpstreamFailure(_ exchange: HTTP1Forward, status: HTTPResponseStatus, context: ChannelHandlerContext) {
        exchange.responseDeadline = nil
        if let connection = exchange.connection {
            exchange.connection = nil
            pool.discard(connection)
        }
        state = .core
        perform(core.upstreamFailed(status), context: context)
    }

    /// The upstream's response head as the client gets it: hop-by-hop headers out, our request id
    /// in, framed for the client (a chunked or close-delimited body goes chunked to an HTTP/1.1
    /// client; an HTTP/1.0 client cannot take chunks, so its body ends at close).
    private func clientResponseHead(_ response: UpstreamResponseHead, _ exchange: HTTP1Forward, allocator: ByteBufferAllocator) -> ByteBuffer {
        exchange.upstreamKeepAlive = response.keepAlive
        let clientTakesChunks = exchange.clientSpeaksHTTP11
        let framed: Bool
        switch response.framing {
        case .none, .contentLength:
            framed = true
        case .chunked, .untilClose:
            exchange.chunkedToClient = clientTakesChunks
            framed = clientTakesChunks
        }
        exchange.responseKeepAlive = exchange.clientKeepAlive && framed && !isQuiescing
        var extra: HTTPHeadWriter.RelayedFields = exchange.chunkedToClient ? [.chunked] : []
        if !exchange.responseKeepAlive {
            extra.insert(.connectionClose)
        } else if !clientTakesChunks {
            extra.insert(.connectionKeepAlive)
        }
        return HTTPHeadWriter.relayedResponseHead(
            response, version: exchange.head.version, requestID: exchange.requestID, extraFields: extra, allocator: allocator)
    }
}
