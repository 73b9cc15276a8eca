package import NIOCore

/// The upstream side of a WebSocket tunnel, handed over by its leg after a 101: the connection's channel, whose
/// HTTP handler gives way to a byte relay. The client door tunnels through this without knowing which handler the
/// upstream side had.
package struct UpstreamTunnelEnd {
    package let channel: any Channel
    /// The handler that spoke HTTP on `channel` until the 101.
    let httpHandler: any RemovableChannelHandler

    /// Puts `relay` after the HTTP handler; bytes keep going to the handler until `releaseHTTPHandler()`.
    func attach(_ relay: any ChannelHandler) throws {
        try channel.pipeline.syncOperations.addHandler(relay)
    }

    /// Removes the HTTP handler; what it held beyond the 101 goes on to the relay.
    func releaseHTTPHandler() {
        _ = channel.pipeline.syncOperations.removeHandler(httpHandler)
    }
}
