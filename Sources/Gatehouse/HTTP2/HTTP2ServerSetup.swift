import NIOCore
import NIOHPACK
import NIOHTTP1
import NIOHTTP2

/// The pipeline of a client connection that speaks HTTP/2: NIO's frame codec with its flood
/// defences, a connection manager for graceful stops and idle connections, a guard that closes
/// the connections NIO gives up on, and per stream Gatehouse's frames-to-parts codec in front of a
/// `StreamRequestHandler` that judges the stream like any HTTP/1.1 request.
struct HTTP2ServerSetup {
    /// Streams a client may have open at once (`SETTINGS_MAX_CONCURRENT_STREAMS`).
    static let maxConcurrentStreams = 100

    let handle: ServicesHandle
    let upstream: UpstreamLegFactory
    /// `[listen] max_header_bytes`: the decoded header list of one stream (HPACK bomb).
    let maxHeaderBytes: Int
    let idleTimeout: TimeAmount
    let drainTimeout: TimeAmount

    func configure(_ channel: any Channel) throws {
        let sync = channel.pipeline.syncOperations
        let manager = NIOHTTP2ServerConnectionManagementHandler(
            eventLoop: channel.eventLoop,
            configuration: .init(maxIdleTime: idleTimeout, maxAge: nil, maxGraceTime: drainTimeout, keepalive: nil))
        var connection = NIOHTTP2Handler.ConnectionConfiguration()
        connection.initialSettings = [
            HTTP2Setting(parameter: .maxConcurrentStreams, value: Self.maxConcurrentStreams),
            HTTP2Setting(parameter: .maxHeaderListSize, value: maxHeaderBytes),
        ]
        // NIO's defaults already bound what the 2023-2024 flood CVEs abuse: RST_STREAM rate
        // (rapid reset), sequential CONTINUATION frames, buffered control frames (PING/SETTINGS
        // floods), empty DATA frames; they are kept, with stream errors counted as glitches.
        // (HTTP2AttackTests attacks each of them with raw frames.)
        var stream = NIOHTTP2Handler.StreamConfiguration()
        stream.targetWindowSize = 65535
        let handle = self.handle
        let upstream = self.upstream
        let idleTimeout = self.idleTimeout
        // Between the socket and NIO's handler: NIO only *says* GOAWAY when it gives up on a
        // connection, and never closes it (see HTTP2ConnectionGuard).
        let connectionGuard = HTTP2ConnectionGuard(drainTimeout: drainTimeout)
        let tokenMemory = NIOLoopBound(ConnectionTokenMemory(), eventLoop: channel.eventLoop)
        try sync.addHandler(connectionGuard)
        _ = try sync.configureHTTP2Pipeline(
            mode: .server, connectionConfiguration: connection, streamConfiguration: stream,
            streamDelegate: HTTP2ConnectionGuard.StreamDelegate(
                manager: manager.http2StreamDelegate, connectionGuard: NIOLoopBound(connectionGuard, eventLoop: channel.eventLoop))
        ) { streamChannel in
            streamChannel.eventLoop.makeCompletedFuture {
                let remote = streamChannel.parent?.remoteAddress?.ipAddress ?? "unknown"
                try streamChannel.syncOptions?.setOption(ChannelOptions.autoRead, value: false)
                let streamSync = streamChannel.pipeline.syncOperations
                try streamSync.addHandler(HTTP2StreamStallGuard(idleTimeout: idleTimeout))
                try streamSync.addHandler(HeadersEndStreamCoalescer())
                try streamSync.addHandler(HTTP2StreamCodec())
                try streamSync.addHandler(StreamRequestHandler(
                    handle: handle, upstream: upstream, clientIP: remote, tokenMemory: tokenMemory, eventLoop: streamChannel.eventLoop))
            }
        }
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
