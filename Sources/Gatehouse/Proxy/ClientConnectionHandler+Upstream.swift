import Foundation
import Logging
import Prometheus
import NIOCore
import NIOHTTP1

/// The upstream half of a client connection: connect, stream, time out, answer 502/504.
extension ClientConnectionHandler: UpstreamConnectionDelegate {
    func connect(_ exchange: Exchange, context: ChannelHandlerContext) {
        state = .connecting(exchange)
        pool.acquire().assumeIsolated().whenComplete { result in
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

    private func begin(_ exchange: Exchange, on connection: UpstreamConnection, context: ChannelHandlerContext) {
        guard let upstreamHead = exchange.upstreamHead else { return }
        connection.delegate = self
        exchange.connection = connection
        state = .forwarding(exchange)
        let channel = connection.channel
        channel.write(HTTPClientRequestPart.head(upstreamHead), promise: nil)
        while let buffered = exchange.bufferedBody.popFirst() {
            channel.write(HTTPClientRequestPart.body(.byteBuffer(buffered)), promise: nil)
            exchange.bodyForwarded = true
        }
        if exchange.requestEnded { channel.write(HTTPClientRequestPart.end(nil), promise: nil) }
        channel.flush()
        // Set once per exchange (a retry on a fresh connection keeps it); armed on every attempt,
        // as the watchdog may have fired while the retry was connecting.
        let deadline = exchange.responseDeadline ?? NIODeadline.now() + services.responseTimeout
        exchange.responseDeadline = deadline
        armWatchdog(for: deadline, context: context)
        if !exchange.requestEnded { armWatchdog(for: lastClientRead + services.idleTimeout, context: context) }
        channel.read()
        if !exchange.requestEnded && channel.isWritable { context.read() }
    }

    // MARK: UpstreamConnectionDelegate

    func upstreamReceived(_ part: HTTPClientResponsePart) {
        if case .upgrading(let exchange) = state, case .end = part, let context {
            startTunnel(exchange, context: context)
            return
        }
        guard case .forwarding(let exchange) = state, let context else { return }
        switch part {
        case .head(let response):
            if response.status == .switchingProtocols {
                guard exchange.request.isWebSocket else {
                    answerUpstreamFailure(exchange, status: .badGateway, context: context)
                    return
                }
                acceptUpgrade(exchange, response: response, context: context)
                return
            }
            if (100..<200).contains(response.status.code) {
                // 100 Continue and friends: the client may be waiting for it before sending its body.
                var headers = response.headers
                HeaderHygiene.removeHopByHop(&headers, keepWebSocketUpgrade: false)
                let head = HTTPResponseHead(version: exchange.head.version, status: response.status, headers: headers)
                context.writeAndFlush(wrapOutboundOut(.head(head)), promise: nil)
                return
            }
            exchange.responseHeadSent = true
            context.write(wrapOutboundOut(.head(clientResponseHead(response, exchange))), promise: nil)
        case .body(let buffer):
            context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        case .end:
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
        } else if connection.isReused && !exchange.bodyForwarded && exchange.requestEnded && !exchange.hasRetried {
            // A keep-alive connection the upstream closed as we reused it: safe to try once more.
            exchange.hasRetried = true
            connect(exchange, context: context)
        } else {
            answerUpstreamFailure(exchange, status: .badGateway, context: context)
        }
    }

    // MARK: Completion

    private func completeExchange(_ exchange: Exchange, upstreamReusable: Bool, context: ChannelHandlerContext) {
        exchange.responseDeadline = nil
        if let connection = exchange.connection {
            exchange.connection = nil
            upstreamReusable ? pool.release(connection) : pool.discard(connection)
        }
        services.metrics.upstreamDuration.recordNanoseconds((NIODeadline.now() - exchange.startedAt).nanoseconds)
        services.metrics.request(routeAuth: exchange.routeAuth, outcome: .forwarded)
        // An upstream that answered before the request body ended: close rather than drain it.
        finishResponse(keepAlive: exchange.responseKeepAlive && exchange.requestEnded, context: context)
    }

    func responseTimedOut(_ exchange: Exchange) {
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

    /// 502 / 504: not an authentication failure, so nothing in the failure log.
    func answerUpstreamFailure(_ exchange: Exchange, status: HTTPResponseStatus, context: ChannelHandlerContext) {
        exchange.responseDeadline = nil
        if let connection = exchange.connection {
            exchange.connection = nil
            pool.discard(connection)
        }
        services.metrics.request(routeAuth: exchange.routeAuth, outcome: .upstreamError)
        let message = status == .gatewayTimeout ? "upstream_timeout" : "upstream_unavailable"
        answer(exchange, LocalResponse.json(status, "{\"error\":\"\(message)\",\"request_id\":\(exchange.requestID.jsonQuoted)}"),
               context: context)
    }

    /// The upstream's response head as the client gets it: hop-by-hop headers out, our request id in.
    private func clientResponseHead(_ response: HTTPResponseHead, _ exchange: Exchange) -> HTTPResponseHead {
        var headers = response.headers
        exchange.upstreamKeepAlive = response.isKeepAlive
        HeaderHygiene.removeHopByHop(&headers, keepWebSocketUpgrade: false)
        headers.replaceOrAdd(name: "X-Request-Id", value: exchange.requestID)
        // An HTTP/1.0 client cannot take chunked framing: without a length the body ends at close.
        let framed = headers.contains(name: "content-length") || exchange.head.version.minor >= 1
        exchange.responseKeepAlive = exchange.clientKeepAlive && framed
        return HTTPResponseHead(version: exchange.head.version, status: response.status, headers: headers)
            .keepingAlive(exchange.responseKeepAlive)
    }
}
