#if canImport(Glibc)
import Glibc
#endif
import Foundation
@testable import Gatehouse
import Testing
import GatehouseSyntax
import GatehouseProxy

/// Faults only a process meets, through the real `gatehouse serve` binary: a full descriptor table
/// (`prlimit --nofile`), a failure log on a full disk (`/dev/full`) or one that fills mid-line
/// (`prlimit --fsize`: the write is cut short exactly as on a disk that fills).
@Suite(.serialized, .timeLimit(.minutes(2)))
struct ProcessFaultTests {
    static func configuration(_ jwks: TestJWKSServer, _ upstream: TestUpstream, extra: String = "") -> String {
        Contract.toml(upstreamPort: upstream.port, jwks: jwks, extra: extra)
    }

    // MARK: - Issue 23.4: a full descriptor table (P54)

    /// 400 connections against a limit of 256 descriptors: accept fails with EMFILE. The listener backs off
    /// (a few attempts a second) instead of spinning a core, says so once in the operational log, counts it
    /// in `gatehouse_accept_errors_total`; a connection already open is served meanwhile, and new ones are
    /// accepted again once descriptors are free. Before, accept failed ~4 500 times a second at 100% CPU.
    @Test func aFullDescriptorTableMakesTheListenerBackOffInsteadOfSpinning() async throws {
        try await Contract.withPeers { jwks, upstream in
            let process = try await ServedGatehouse(
                toml: Self.configuration(jwks, upstream), prefix: ["/usr/bin/prlimit", "--nofile=256:256", "--"])
            defer { process.stop() }
            let token = TestSigner.ec.token(claims: Claims.valid())
            let request = "GET /v1/kept HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(token)\r\n\r\n"
            let kept = try #require(RawHTTP.Connection(port: process.port, timeout: .seconds(5)))
            kept.send(request)
            #expect(RawHTTP.statuses(kept.receive(until: "}")) == [200])

            var flood: [RawHTTP.Connection] = []
            for _ in 0..<400 {
                guard let connection = RawHTTP.Connection(port: process.port, timeout: .seconds(1)) else { break }
                flood.append(connection)
            }
            #expect(flood.count == 400, "the kernel's backlog takes what Gatehouse cannot accept")
            #expect(await Contract.eventually { process.output.contains("accept failed") }, "\(process.output)")
            let before = process.cpuTime
            let window = ContinuousClock.now
            try await Task.sleep(for: .seconds(2))  // a measuring window, not a synchronisation
            let used = process.cpuTime - before
            let elapsed = ContinuousClock.now - window
            #expect(used < elapsed / 4, "\(used) of CPU in \(elapsed) while the table is full: the listener spins")

            kept.send(request)
            #expect(RawHTTP.statuses(kept.receive(until: "}")) == [200], "an open connection is served while the table is full")

            flood.removeAll()  // closes them
            #expect(await Contract.eventually { (try? await process.admin("/readyz").status) == 200 })
            let metrics = try await process.metrics()
            let errors = try #require(metrics.value("gatehouse_accept_errors_total", ["listener": "client"]))
            #expect(errors >= 1 && errors < 100, "accept retried a few times a second, not thousands: \(errors)")
            #expect(metrics.value("gatehouse_accept_errors_total", ["listener": "admin"]) != nil)
            let logged = process.output.split(separator: "\n").filter { $0.contains("accept failed") }
            #expect(logged.count <= 2, "rate-limited: \(logged)")
            #expect(await Contract.eventually {
                guard let fresh = RawHTTP.Connection(port: process.port, timeout: .seconds(2)) else { return false }
                fresh.send(request)
                return RawHTTP.statuses(fresh.receive(until: "}")) == [200]
            }, "new connections are accepted again")
        }
    }

    // MARK: - Issue 23.5, 23.6: failure-log write errors (L04, L05)

    /// `/dev/full`: every write fails with ENOSPC. The 401s stay right, every lost line is counted in
    /// `gatehouse_failure_log_write_errors_total`, and the operational log says lines are being lost,
    /// at most once per 10 s. Before, the lines vanished and nothing said so.
    @Test func failureLogWritesThatFailAreCountedAndReported() async throws {
        try await Contract.withPeers { jwks, upstream in
            let process = try await ServedGatehouse(
                toml: Self.configuration(jwks, upstream, extra: "[failure_log]\npath = \"/dev/full\"\n"))
            defer { process.stop() }
            for attempt in 0..<5 {
                let response = RawHTTP.exchange(port: process.port, "GET /v1/\(attempt) HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
                #expect(RawHTTP.statuses(response) == [401])
            }
            let metrics = try await process.metrics()
            #expect(metrics.value("gatehouse_failure_log_write_errors_total", [:]) == 5)
            #expect(metrics.value("gatehouse_auth_failures_total", ["reason": "missing_token", "provider": ""]) == 5)
            let logged = process.output.split(separator: "\n").filter { $0.contains("failure log write failed") }
            #expect(logged.count == 1 && logged[0].contains("No space left on device") && logged[0].contains("/dev/full"), "\(process.output)")
        }
    }

    /// A failure log that fills mid-line (the file-size limit cuts the write as a full disk does): the
    /// fragment is taken back, so once space is free again every line of the file is one JSON object.
    /// Before, the next line was appended to the half line and both events were lost to `jq`.
    @Test func aLineCutShortByAFullDiskNeverTearsTheFile() async throws {
        try await Contract.withPeers { jwks, upstream in
            let directory = NSTemporaryDirectory() + "gatehouse-torn-" + UUID().uuidString
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let path = directory + "/failures.jsonl"
            let limit = 1500  // a few lines of ~400 bytes fit, then one is cut
            let process = try await ServedGatehouse(
                toml: Self.configuration(jwks, upstream, extra: "[failure_log]\npath = \"\(path)\"\n"),
                prefix: ["/usr/bin/prlimit", "--fsize=\(limit)", "--"])
            defer { process.stop() }
            for attempt in 0..<12 {
                let target = "/v1/" + String(repeating: "p", count: 40 + attempt * 7)
                let response = RawHTTP.exchange(port: process.port, "GET \(target) HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
                #expect(RawHTTP.statuses(response) == [401])
            }
            let errors = try #require(try await process.metrics().value("gatehouse_failure_log_write_errors_total", [:]))
            #expect(errors >= 1, "the limit was reached")
            let text = try String(contentsOfFile: path, encoding: .utf8)
            #expect(text.hasSuffix("\n"), "the file ends with a whole line: \(text)")
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            #expect(!lines.isEmpty)
            for line in lines {
                #expect((try? StrictJSON.parse(Array(line.utf8)).objectValue) != nil, "a torn line: \(line)")
            }
            #expect(lines.count + Int(errors) == 12, "every event is either a whole line or counted as lost")
        }
    }
}
