import NIOCore
import NIOHPACK
import NIOHTTP1
import NIOHTTP2

/// The pipeline of a client connection that speaks HTTP/2: NIO's frame codec with its flood
/// defences, a connection manager for graceful stops and idle connections, and per stream the
/// HTTP/2-to-HTTP/1 parts codec in front of a `StreamRequestHandler` that judges the stream
/// like any HTTP/1.1 request.
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
        var stream = NIOHTTP2Handler.StreamConfiguration()
        stream.targetWindowSize = 65535
        let handle = self.handle
        let upstream = self.upstream
        _ = try sync.configureHTTP2Pipeline(
            mode: .server, connectionConfiguration: connection, streamConfiguration: stream,
            streamDelegate: manager.http2StreamDelegate
        ) { streamChannel in
            streamChannel.eventLoop.makeCompletedFuture {
                let remote = streamChannel.parent?.remoteAddress?.ipAddress ?? "unknown"
                try streamChannel.syncOptions?.setOption(ChannelOptions.autoRead, value: false)
                let streamSync = streamChannel.pipeline.syncOperations
                try streamSync.addHandler(HeadersEndStreamCoalescer())
                try streamSync.addHandler(HTTP2FramePayloadToHTTP1ServerCodec())
                try streamSync.addHandler(StreamRequestHandler(handle: handle, upstream: upstream, clientIP: remote))
            }
        }
        try sync.addHandler(manager)
        // HTTP/2 flow control is per stream (streams read by hand, their windows bound what waits);
        // the connection itself must always be read, or SETTINGS, PING and new streams would stall.
        try channel.syncOptions?.setOption(ChannelOptions.autoRead, value: true)
    }
}
