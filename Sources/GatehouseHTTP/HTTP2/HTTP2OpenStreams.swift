public import NIOCore
public import NIOHTTP2

/// The streams NIO reported open on a frame-level HTTP/2 connection (the client port's, the ext_authz port's), and
/// who hears of them: the connection guard (its drain, the GOAWAY's last stream) and the connection manager (its idle
/// timer, its graceful stop). A stream refused on its first frame is reported closed without having been reported
/// open, and must not reach the manager (it asserts on that).
public struct HTTP2OpenStreams {
    public let connectionGuard: HTTP2ConnectionGuard
    public let manager: NIOHTTP2ServerConnectionManagementHandler.HTTP2StreamDelegate
    private var ids = Set<HTTP2StreamID>()

    public init(connectionGuard: HTTP2ConnectionGuard, manager: NIOHTTP2ServerConnectionManagementHandler.HTTP2StreamDelegate) {
        self.connectionGuard = connectionGuard
        self.manager = manager
    }

    public mutating func opened(_ id: HTTP2StreamID, channel: any Channel) {
        ids.insert(id)
        connectionGuard.openStreams += 1
        connectionGuard.lastStreamID = max(connectionGuard.lastStreamID, id)
        manager.streamCreated(id, channel: channel)
    }

    public mutating func closed(_ id: HTTP2StreamID, channel: any Channel) {
        guard ids.remove(id) != nil else { return }
        connectionGuard.openStreams -= 1
        manager.streamClosed(id, channel: channel)
        connectionGuard.streamClosed()
    }
}
