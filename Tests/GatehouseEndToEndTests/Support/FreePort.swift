import NIOCore
import NIOPosix

/// A loopback port nothing listens on right now, for a helper server (PostgreSQL, nginx) that binds it itself.
func freeLoopbackPort() async throws -> Int {
    let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: "127.0.0.1", port: 0).get()
    let port = channel.localAddress?.port ?? 0
    try await channel.close()
    return port
}
