#if canImport(Glibc)
import Glibc
#endif
import Foundation
@testable import Gatehouse
import Testing
import GatehouseProxy
import GatehouseExtAuthz

/// `gatehouse serve` as an unprivileged user (`nobody`), as systemd's unit and the image run it. Found by the image
/// test (issue 43): every listener and upstream pool set TCP_NODELAY at the socket level, which is SO_DEBUG; as root
/// it passed unnoticed (and TCP_NODELAY was never set), without CAP_NET_ADMIN every client connection was closed at
/// accept and every upstream connection failed. Seen failing with `.socketOption(.tcp_nodelay)` back.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct UnprivilegedServeTests {
    /// Runs the binary as `nobody` when this process is root (CI), else as this (already unprivileged) user.
    static var unprivileged: [String] { getuid() == 0 ? ["/usr/sbin/runuser", "-u", "nobody", "--"] : [] }

    /// The binary copied once into the temporary directory: the checkout may sit where `nobody` cannot reach (under
    /// /root). Once, and before any case spawns it: a copy still open for writing in a child another test forked
    /// meanwhile would fail to execute (ETXTBSY).
    static let reachableCopy: Result<String, any Error> = Result {
        // The copy of an earlier run goes first (this one stays for the cases of this run: a binary is large).
        let temporary = NSTemporaryDirectory()
        for old in (try? FileManager.default.contentsOfDirectory(atPath: temporary)) ?? [] where old.hasPrefix("gatehouse-unprivileged-") {
            try? FileManager.default.removeItem(atPath: temporary + old)
        }
        let folder = try Contract.makeDirectory("unprivileged")
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder)
        try FileManager.default.copyItem(atPath: ServedGatehouse.executable, toPath: folder + "/gatehouse")
        return folder + "/gatehouse"
    }

    @Test(arguments: [false, true])
    func aClientIsServedAndForwardedWithoutPrivileges(upstreamHTTP2: Bool) async throws {
        let jwks = try await TestJWKSServer(jwks: TestSigner.jwks([.ec]))
        let upstream = try await TestUpstream(http2: upstreamHTTP2)
        do {
            let url = "url = \"http://127.0.0.1:\(upstream.port)\""
            let toml = Contract.toml(upstreamPort: upstream.port, jwks: jwks)
                .replacingOccurrences(of: url, with: url + (upstreamHTTP2 ? "\nprotocol = \"http2\"" : ""))
            let process = try await ServedGatehouse(toml: toml, prefix: Self.unprivileged, executable: try Self.reachableCopy.get())
            defer { process.stop() }
            let token = TestSigner.ec.token(claims: Claims.valid())
            let connection = try #require(RawHTTP.Connection(port: process.port, timeout: .seconds(5)))
            connection.send("GET /v1/orders HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(token)\r\n\r\n")
            let answer = connection.receive(until: "}")
            #expect(RawHTTP.statuses(answer) == [200], "\(answer)\n\(process.output)")
            #expect(upstream.last?.values("x-auth-subject") == ["user-1"])
        } catch {
            Issue.record(error)
        }
        await jwks.close()
        await upstream.close()
    }
}
