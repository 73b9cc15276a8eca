package import NIOCore
import GatehouseHTTP
import GatehouseExchange
import GatehouseTelemetry

/// The pipeline of a client connection that speaks HTTP/2: one handler, `HTTP2ServerConnection` (nghttp2 with
/// NIO's flood rules, idle and graceful-stop GOAWAYs), which drives the request core per stream (`StreamDriver`).
/// The settings the ext_authz port's NIO codec shares are here too.
package struct HTTP2ServerSetup {
    /// Streams a client may have open at once (`SETTINGS_MAX_CONCURRENT_STREAMS`).
    package static let maxConcurrentStreams = 100

    package let handle: ServicesHandle
    package let upstream: UpstreamLegFactory
    /// `[listen] max_header_bytes`: one stream's header section, 431 past it (`HTTP2RequestHeadReader`).
    package let maxHeaderBytes: Int
    package let idleTimeout: TimeAmount
    package let drainTimeout: TimeAmount

    /// What nghttp2's HPACK decoder decodes of one header block before it gives up on the connection (an HPACK
    /// bomb; it advertises this as SETTINGS_MAX_HEADER_LIST_SIZE and cannot go on decoding past it): room
    /// for a section over `max_header_bytes` to be decoded whole and refused on its own stream (431), its
    /// siblings served. RFC 7541 counts 32 bytes more per field than Gatehouse's HTTP/1.1-like count.
    package static func headerListCeiling(maxHeaderBytes: Int) -> Int {
        max(4 * maxHeaderBytes, 64 << 10)
    }

    package func configure(_ channel: any Channel) throws {
        let handle = self.handle
        let upstream = self.upstream
        let tokenMemory = ConnectionTokenMemory()
        let settings = HTTP2ServerConnection.Settings(
            idleTimeout: idleTimeout, drainTimeout: drainTimeout, maxHeaderBytes: maxHeaderBytes,
            maxConcurrentStreams: Self.maxConcurrentStreams, headerListCeiling: Self.headerListCeiling(maxHeaderBytes: maxHeaderBytes))
        let idleTimeout = self.idleTimeout
        let maxHeaderBytes = self.maxHeaderBytes
        try channel.pipeline.syncOperations.addHandler(HTTP2ServerConnection(eventLoop: channel.eventLoop, settings: settings) { channel in
            let shared = StreamDriver.Connection(handle: handle, upstream: upstream, peer: ClientPeer(channel: channel), tokenMemory: tokenMemory)
            return { connection, id in
                shared.handle.services.metrics.http2StreamOpened()
                return HTTP2ServerStream(
                    id: id, connection: connection, driverConnection: shared, idleTimeout: idleTimeout,
                    maxHeaderBytes: maxHeaderBytes)
            }
        })
        // HTTP/2 flow control is per stream (streams read by hand, their windows bound what waits); the
        // connection itself must always be read, or SETTINGS, PING and new streams would stall.
        try channel.syncOptions?.setOption(ChannelOptions.autoRead, value: true)
    }
}
