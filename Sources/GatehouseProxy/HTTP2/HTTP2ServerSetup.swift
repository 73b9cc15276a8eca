package import NIOCore
import NIOHPACK
import NIOHTTP1
package import NIOHTTP2
import GatehouseHTTP
import GatehouseExchange

/// The pipeline of a client connection that speaks HTTP/2: NIO's frame codec with its flood
/// defences (no stream multiplexer), a connection manager for graceful stops and idle connections, a
/// guard that closes the connections NIO gives up on, and Gatehouse's frame-level connection handler,
/// which drives the request core per stream (`HTTP2ServerConnectionHandler`, `StreamDriver`).
package struct HTTP2ServerSetup {
    /// Streams a client may have open at once (`SETTINGS_MAX_CONCURRENT_STREAMS`).
    package static let maxConcurrentStreams = 100
    /// Each stream's and the connection's receive window (RFC 9113's initial size).
    package static let targetWindow = 65535

    package let handle: ServicesHandle
    package let upstream: UpstreamLegFactory
    /// `[listen] max_header_bytes`: one stream's header section, 431 past it (`HTTP2RequestHeadReader`).
    package let maxHeaderBytes: Int
    package let idleTimeout: TimeAmount
    package let drainTimeout: TimeAmount

    /// What NIO's HPACK decoder decodes of one header block before it gives up on the connection (an HPACK
    /// bomb; it advertises this as SETTINGS_MAX_HEADER_LIST_SIZE and cannot go on decoding past it): room
    /// for a section over `max_header_bytes` to be decoded whole and refused on its own stream (431), its
    /// siblings served. RFC 7541 counts 32 bytes more per field than Gatehouse's HTTP/1.1-like count.
    package static func headerListCeiling(maxHeaderBytes: Int) -> Int {
        max(4 * maxHeaderBytes, 64 << 10)
    }

    /// Gatehouse's HTTP/2 settings, for every HTTP/2 listener (the client port, the ext_authz port).
    package static func connectionConfiguration(maxHeaderBytes: Int) -> NIOHTTP2Handler.ConnectionConfiguration {
        var connection = NIOHTTP2Handler.ConnectionConfiguration()
        connection.initialSettings = [
            HTTP2Setting(parameter: .maxConcurrentStreams, value: maxConcurrentStreams),
            HTTP2Setting(parameter: .maxHeaderListSize, value: headerListCeiling(maxHeaderBytes: maxHeaderBytes)),
        ]
        return connection
    }

    /// Closes connections idle for `idleTimeout`, and answers a graceful stop with GOAWAY (`drainTimeout` at most).
    package static func connectionManager(_ channel: any Channel, idleTimeout: TimeAmount, drainTimeout: TimeAmount)
        -> NIOHTTP2ServerConnectionManagementHandler
    {
        NIOHTTP2ServerConnectionManagementHandler(
            eventLoop: channel.eventLoop, configuration: .init(maxIdleTime: idleTimeout, maxAge: nil, maxGraceTime: drainTimeout, keepalive: nil))
    }

    package func configure(_ channel: any Channel) throws {
        let sync = channel.pipeline.syncOperations
        let manager = Self.connectionManager(channel, idleTimeout: idleTimeout, drainTimeout: drainTimeout)
        var connection = Self.connectionConfiguration(maxHeaderBytes: maxHeaderBytes)
        // Gatehouse reads every request block by its own rules, in one place (HTTP2RequestHeadReader): NIO's
        // would reset `te: Trailers`, and judge names and values a second time. NIO still checks the DATA
        // against content-length.
        connection.headerBlockValidation = .disabled
        // NIO's defaults already bound what the 2023-2024 flood CVEs abuse: RST_STREAM rate
        // (rapid reset), sequential CONTINUATION frames, buffered control frames (PING/SETTINGS
        // floods), empty DATA frames; they are kept, with stream errors counted as glitches.
        // (HTTP2AttackTests attacks each of them with raw frames.)
        var stream = NIOHTTP2Handler.StreamConfiguration()
        stream.targetWindowSize = Self.targetWindow
        let handle = self.handle
        let upstream = self.upstream
        // Between the socket and NIO's handler: NIO only *says* GOAWAY when it gives up on a
        // connection, and never closes it (see HTTP2ConnectionGuard).
        let connectionGuard = HTTP2ConnectionGuard(drainTimeout: drainTimeout)
        let tokenMemory = ConnectionTokenMemory()
        try sync.addHandler(connectionGuard)
        try sync.addHandler(HTTP2WriteCoalescer())
        try sync.addHandler(NIOHTTP2Handler(mode: .server, connectionConfiguration: connection, streamConfiguration: stream))
        // Before the manager: it hears of streams through its delegate, for the streams NIO reported open.
        try sync.addHandler(HTTP2ServerConnectionHandler(
            eventLoop: channel.eventLoop, connectionGuard: connectionGuard, manager: manager.http2StreamDelegate,
            targetWindow: Self.targetWindow, idleTimeout: idleTimeout, maxHeaderBytes: maxHeaderBytes
        ) { peer in
            StreamDriver.Connection(handle: handle, upstream: upstream, peer: peer, tokenMemory: tokenMemory)
        })
        try sync.addHandler(manager)
        // The connection is already active: NIO's handler, added now, considers itself activated
        // and swallows the channelActive the protocol selector fires next, so the manager would
        // never start its idle timer (a connection that never opens a stream would be kept for
        // ever). It gets its channelActive from here, once.
        try sync.context(handlerType: NIOHTTP2Handler.self).fireChannelActive()
        // HTTP/2 flow control is per stream (streams read by hand, their windows bound what waits);
        // the connection itself must always be read, or SETTINGS, PING and new streams would stall.
        try channel.syncOptions?.setOption(ChannelOptions.autoRead, value: true)
    }
}
