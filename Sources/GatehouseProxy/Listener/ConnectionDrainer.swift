import NIOConcurrencyHelpers
package import NIOCore
import GatehouseAuth
import GatehouseExchange

/// Graceful stop for the client listener: stop accepting, ask every open connection to quiesce
/// (`ClientConnectionHandler` closes idle ones at once and busy ones after their response),
/// and report when the last one has closed.
package final class ConnectionDrainer: Sendable {
    private struct State {
        var serverChannel: (any Channel)?
        var connections: [ObjectIdentifier: any Channel] = [:]
        var drained: EventLoopPromise<Void>?
        var isShuttingDown = false
    }

    private let state = NIOLockedValueBox(State())

    package init() {}

    /// Put first in the server channel's pipeline: sees every accepted connection.
    package func makeServerChannelHandler() -> some ChannelInboundHandler {
        AcceptTracker(drainer: self)
    }

    package func initiateShutdown(promise: EventLoopPromise<Void>) {
        let (server, connections) = state.withLockedValue { state -> ((any Channel)?, [any Channel]) in
            state.isShuttingDown = true
            state.drained = promise
            return (state.serverChannel, Array(state.connections.values))
        }
        let closed = server?.close() ?? promise.futureResult.eventLoop.makeSucceededVoidFuture()
        closed.whenComplete { _ in
            for connection in connections {
                connection.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
            }
            self.completeIfDrained()
        }
    }

    /// After the drain timeout: close whatever is still open.
    package func closeRemaining() {
        let connections = state.withLockedValue { Array($0.connections.values) }
        for connection in connections { connection.close(promise: nil) }
    }

    fileprivate func serverActive(_ channel: any Channel) {
        state.withLockedValue { $0.serverChannel = channel }
    }

    fileprivate func accepted(_ channel: any Channel) {
        let shuttingDown = state.withLockedValue { state in
            state.connections[ObjectIdentifier(channel)] = channel
            return state.isShuttingDown
        }
        if shuttingDown { channel.close(promise: nil) }
        channel.closeFuture.whenComplete { _ in
            self.state.withLockedValue { _ = $0.connections.removeValue(forKey: ObjectIdentifier(channel)) }
            self.completeIfDrained()
        }
    }

    private func completeIfDrained() {
        let promise = state.withLockedValue { state -> EventLoopPromise<Void>? in
            guard state.isShuttingDown, state.connections.isEmpty, let promise = state.drained else { return nil }
            state.drained = nil
            return promise
        }
        promise?.succeed()
    }

    private final class AcceptTracker: ChannelInboundHandler {
        typealias InboundIn = any Channel
        let drainer: ConnectionDrainer

        init(drainer: ConnectionDrainer) { self.drainer = drainer }

        func handlerAdded(context: ChannelHandlerContext) {
            drainer.serverActive(context.channel)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            drainer.accepted(unwrapInboundIn(data))
            context.fireChannelRead(data)
        }
    }
}
