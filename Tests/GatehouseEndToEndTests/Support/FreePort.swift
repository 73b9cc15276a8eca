import NIOCore
import NIOPosix

/// A loopback port nothing listens on right now, for a helper server (PostgreSQL, nginx) that binds it itself.
func freeLoopbackPort() async throws -> Int {
    // Not port 0: that is a port of the ephemeral range (32768-60999 on Linux), which any outgoing
    // connection of a test running beside this one may take before the helper binds it. Below it,
    // only another helper's pick could collide, and that one is checked free here too.
    for _ in 0..<100 {
        let candidate = Int.random(in: 20_000..<32_768)
        if let channel = try? await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: candidate).get() {
            try await channel.close()
            return candidate
        }
    }
    throw ChildProcess.Failed(description: "no free loopback port between 20000 and 32767")
}
