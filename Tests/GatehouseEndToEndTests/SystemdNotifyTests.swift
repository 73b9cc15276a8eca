#if canImport(Glibc)
import Glibc
#endif
import Foundation
import NIOCore
@testable import Gatehouse
import Testing

/// `Type=notify` (deploy/systemd, issue 43): `gatehouse serve` under a `$NOTIFY_SOCKET` of the test's own (a unix
/// datagram socket, as systemd's) says `READY=1` once `/readyz` is 200 (not before its keys are in), `RELOADING=1`
/// with `MONOTONIC_USEC` and `READY=1` around a SIGHUP, and `STOPPING=1` when SIGTERM starts the drain.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct SystemdNotifyTests {
    /// A bound `AF_UNIX` datagram socket, read without blocking.
    final class NotifySocket {
        let path: String
        let descriptor: Int32

        init() throws {
            path = NSTemporaryDirectory() + "gatehouse-notify-\(UUID().uuidString.prefix(8)).sock"
            descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { buffer in
                for (index, byte) in path.utf8.enumerated() { buffer[index] = byte }
            }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            guard descriptor >= 0, bound == 0 else { throw ChildProcess.Failed(description: "cannot bind \(path)") }
            chmod(path, 0o666)
        }

        /// Every message that has arrived so far.
        func drain() -> [String] {
            var messages: [String] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = recv(descriptor, &buffer, buffer.count, 0)
                guard count > 0 else { return messages }
                messages.append(String(decoding: buffer[..<count], as: UTF8.self))
            }
        }

        deinit {
            close(descriptor)
            unlink(path)
        }
    }

    @Test func serveTellsSystemdWhenItIsReadyReloadingAndStopping() async throws {
        let notify = try NotifySocket()
        let jwks = try await TestJWKSServer(jwks: TestSigner.jwks([.ec]))
        let upstream = try await TestUpstream()
        // The keys are slow to come: READY=1 must wait for them.
        jwks.update { $0.delay = .milliseconds(800) }
        do {
            let process = try await ServedGatehouse(
                toml: Contract.toml(upstreamPort: upstream.port, jwks: jwks), prefix: ["/usr/bin/env", "NOTIFY_SOCKET=\(notify.path)"],
                waitUntilReady: false)
            defer { process.stop() }
            var messages: [String] = []
            let ready = await Contract.eventually {
                messages += notify.drain()
                return messages.contains { $0.split(separator: "\n").contains("READY=1") }
            }
            #expect(ready, "no READY=1: \(messages)\n\(process.output)")
            #expect(try await process.admin("/readyz").status == 200, "READY=1 before /readyz was 200")
            #expect(jwks.fetchCount >= 1)

            messages = []
            try await process.hangUp()
            #expect(await Contract.eventually { messages += notify.drain(); return messages.count >= 2 }, "\(messages)")
            #expect(messages.first?.hasPrefix("RELOADING=1\nMONOTONIC_USEC=") == true, "\(messages)")
            #expect(messages.last?.hasPrefix("READY=1") == true, "\(messages)")

            messages = []
            process.signal(SIGTERM)
            #expect(await process.exitCode(within: .seconds(10)) == 0)
            messages += notify.drain()
            #expect(messages == ["STOPPING=1"], "\(messages)")
        } catch {
            Issue.record(error)
        }
        await jwks.close()
        await upstream.close()
    }
}
