#if canImport(Glibc)
import Glibc
#endif
import Foundation
@testable import Gatehouse
import NIOCore
import NIOSSL
import Testing
import GatehouseProxy

/// docs/reference.md §2 "Signals" and §10: real signals sent to the real `gatehouse serve` binary
/// (not `hangUp()` / `stop()` called in-process), with the configuration file rewritten underneath it.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct SignalTests {
    static func token(subject: String = "user-1") -> String { TestSigner.ec.token(claims: Claims.valid(subject: subject)) }

    /// One request on its own connection (no keep-alive fast path): status and what came back.
    static func request(_ process: ServedGatehouse, _ path: String, token: String? = nil) -> (status: Int?, response: String) {
        var request = "GET \(path) HTTP/1.1\r\nHost: a\r\nConnection: close\r\n"
        if let token { request += "Authorization: Bearer \(token)\r\n" }
        let response = RawHTTP.exchange(port: process.port, request + "\r\n", timeout: .seconds(5))
        return (RawHTTP.statuses(response).first, response)
    }

    static func cacheCounts(_ process: ServedGatehouse) async throws -> (hit: Double, miss: Double) {
        let metrics = try await process.metrics()
        let hit = try #require(metrics.value("gatehouse_verify_cache_total", ["result": "hit"]), "\(metrics.text)")
        let miss = try #require(metrics.value("gatehouse_verify_cache_total", ["result": "miss"]), "\(metrics.text)")
        return (hit, miss)
    }

    // MARK: - SIGHUP

    /// SIGHUP re-reads the file: a new route applies to the next request, and the verified-token cache
    /// starts empty (the same token, verified and cached before, is a cache miss after the reload).
    @Test func aHangUpAppliesTheNewConfigurationToTheNextRequestWithEmptyCaches() async throws {
        try await Contract.withPeers { jwks, upstream in
            let base = Contract.toml(upstreamPort: upstream.port, jwks: jwks)
            let process = try await ServedGatehouse(toml: base)
            defer { process.stop() }
            let token = Self.token()
            #expect(Self.request(process, "/v1/a", token: token).status == 200)
            #expect(Self.request(process, "/v1/b", token: token).status == 200)
            let cached = try await Self.cacheCounts(process)
            #expect(cached.hit >= 1, "the second request was served from the cache: \(cached)")
            #expect(Self.request(process, "/open/page").status == 401)

            try process.rewrite(base + "\n[[route]]\nprefix = \"/open\"\nauth = \"public\"\n")
            try await process.hangUp()
            #expect(process.lines(containing: "SIGHUP: configuration reloaded") == 1, "\(process.output)")
            #expect(Self.request(process, "/open/page").status == 200, "the new route applies to the next request")
            #expect(upstream.last?.uri == "/open/page")

            #expect(Self.request(process, "/v1/c", token: token).status == 200)
            let after = try await Self.cacheCounts(process)
            #expect(after.hit == cached.hit, "a verification cached before the reload was used after it: \(cached) -> \(after)")
            #expect(after.miss == cached.miss + 1, "\(cached) -> \(after)")
            // And it is cached again from there on.
            #expect(Self.request(process, "/v1/d", token: token).status == 200)
            #expect(try await Self.cacheCounts(process).hit == cached.hit + 1)
        }
    }

    /// A refused reload is alertable (deploy/prometheus: GatehouseConfigReloadFailed): the last-reload gauge goes to 0
    /// while the running configuration keeps serving; the next good file brings it back to 1 with a newer timestamp.
    @Test func aRefusedHangUpIsExportedAndTheNextGoodOneClearsIt() async throws {
        try await Contract.withPeers { jwks, upstream in
            let base = Contract.toml(upstreamPort: upstream.port, jwks: jwks)
            let process = try await ServedGatehouse(toml: base)
            defer { process.stop() }
            let started = try await process.metrics()
            #expect(started.value("gatehouse_config_last_reload_successful") == 1)
            let loadedAt = try #require(started.value("gatehouse_config_last_reload_success_timestamp_seconds"))
            #expect(abs(Date().timeIntervalSince1970 - loadedAt) < 120)

            try process.rewrite(base + "\n[[route]]\nprefix = \"/open\"\nauth = \"sometimes\"\n")
            try await process.hangUp()
            #expect(process.lines(containing: "SIGHUP: new configuration refused") == 1, "\(process.output)")
            let refused = try await process.metrics()
            #expect(refused.value("gatehouse_config_last_reload_successful") == 0)
            #expect(refused.value("gatehouse_config_last_reload_success_timestamp_seconds") == loadedAt)
            #expect(Self.request(process, "/v1/a", token: Self.token()).status == 200, "the running configuration serves on")

            try process.rewrite(base)
            try await process.hangUp()
            let fixed = try await process.metrics()
            #expect(fixed.value("gatehouse_config_last_reload_successful") == 1)
            #expect((fixed.value("gatehouse_config_last_reload_success_timestamp_seconds") ?? 0) > loadedAt)
        }
    }

    /// logrotate: the failure-log file is moved away, SIGHUP, and the next lines go to a new file at the
    /// configured path (created with mode 0640); the moved file keeps what was written before.
    @Test func aHangUpReopensTheFailureLogSoLogrotateCanMoveIt() async throws {
        try await Contract.withPeers { jwks, upstream in
            let directory = try Contract.makeDirectory("rotate")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let path = directory + "/failures.jsonl"
            let rotated = path + ".1"
            let process = try await ServedGatehouse(
                toml: Contract.toml(upstreamPort: upstream.port, jwks: jwks, extra: "[failure_log]\npath = \"\(path)\"\n"))
            defer { process.stop() }
            func lines(_ file: String) -> [String] {
                ((try? String(contentsOfFile: file, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
            }
            #expect(Self.request(process, "/v1/before-rotation").status == 401)
            #expect(lines(path).count == 1)
            try FileManager.default.moveItem(atPath: path, toPath: rotated)
            // Until the SIGHUP the open file (now the rotated one) takes the lines.
            #expect(Self.request(process, "/v1/between").status == 401)
            #expect(lines(rotated).count == 2)
            #expect(!FileManager.default.fileExists(atPath: path))

            try await process.hangUp()
            #expect(Self.request(process, "/v1/after-rotation").status == 401)
            let fresh = lines(path)
            #expect(fresh.count == 1, "\(fresh)")
            #expect(fresh.first?.contains("\"path\":\"/v1/after-rotation\"") == true, "\(fresh)")
            #expect(lines(rotated).count == 2, "nothing more in the rotated file")
            let mode = try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
            #expect(mode == 0o640, "mode \(String(mode, radix: 8))")
        }
    }

    /// Restart-only changes (`[upstream] url`, `connect_timeout`, `[failure_log]`, `[log]`) are named in the
    /// operational log and keep their running values; what can be applied still is.
    @Test func aHangUpNamesTheChangesThatNeedARestartAndKeepsTheirRunningValues() async throws {
        try await Contract.withPeers { jwks, upstream in
            let process = try await ServedGatehouse(toml: Contract.toml(upstreamPort: upstream.port, jwks: jwks))
            defer { process.stop() }
            let deadPort = try await freeLoopbackPort()
            try process.rewrite(Contract.toml(upstreamPort: deadPort, jwks: jwks, extra: """
                [failure_log]
                max_lines_per_second = 5
                [log]
                level = "debug"
                [[route]]
                prefix = "/open"
                auth = "public"
                """).replacingOccurrences(of: "[upstream]\n", with: "[upstream]\nconnect_timeout = \"3s\"\n"))
            try await process.hangUp()
            let reported = process.output.split(separator: "\n").filter { $0.contains("reload: these changes need a restart") }
            #expect(reported.count == 1, "\(process.output)")
            for section in ["[upstream] url/connect_timeout/protocol/ca_file", "[failure_log]", "[log]"] {
                #expect(reported.first?.contains(section) == true, "\(section) not named: \(reported)")
            }
            #expect(reported.first?.contains("[listen]") == false && reported.first?.contains("[admin]") == false, "\(reported)")
            // The running upstream is still the one requests go to, and the new route applies.
            #expect(Self.request(process, "/v1/orders", token: Self.token()).status == 200)
            #expect(Self.request(process, "/open/x").status == 200)
            #expect(upstream.requests.map(\.uri) == ["/v1/orders", "/open/x"])
        }
    }

    /// A certificate and key that do not belong together (renewed half-way) are refused on SIGHUP: the old
    /// pair keeps serving new connections and the operational log says so. A good pair is then taken.
    @Test func aBrokenCertificatePairOnHangUpKeepsTheOldOneServing() async throws {
        try await Contract.withPeers { jwks, upstream in
            let directory = try Contract.makeDirectory("tls")
            let renewal = directory + "/renewal"
            try FileManager.default.createDirectory(atPath: renewal, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let files = try TLSListenerTests.makeCertificate(in: directory)
            let next = try TLSListenerTests.makeCertificate(in: renewal)
            let process = try await ServedGatehouse(
                toml: Contract.toml(upstreamPort: upstream.port, jwks: jwks),
                listen: "tls_cert = \"\(files.certificate)\"\ntls_key = \"\(files.key)\"\n")
            defer { process.stop() }
            let original = try NIOSSLCertificate.fromPEMFile(files.certificate)
            let renewed = try NIOSSLCertificate.fromPEMFile(next.certificate)
            #expect(try await TLSListenerTests.status(port: process.port, trusting: original) == 200)

            // The new certificate is in place, its key not yet.
            try FileManager.default.removeItem(atPath: files.certificate)
            try FileManager.default.copyItem(atPath: next.certificate, toPath: files.certificate)
            try await process.hangUp()
            #expect(await Contract.eventually { process.lines(containing: "reload: TLS certificate not replaced") == 1 }, "\(process.output)")
            #expect(try await TLSListenerTests.status(port: process.port, trusting: original) == 200, "the old pair serves")
            #expect((try? await TLSListenerTests.status(port: process.port, trusting: renewed, timeout: .seconds(2))) == nil)

            // The key follows: the next SIGHUP takes the new pair.
            try FileManager.default.removeItem(atPath: files.key)
            try FileManager.default.copyItem(atPath: next.key, toPath: files.key)
            try await process.hangUp()
            #expect(try await TLSListenerTests.status(port: process.port, trusting: renewed) == 200, "the renewed pair serves")
            #expect((try? await TLSListenerTests.status(port: process.port, trusting: original, timeout: .seconds(2))) == nil)
            #expect(process.lines(containing: "reload: TLS certificate not replaced") == 1)
        }
    }

    // MARK: - SIGTERM

    /// SIGTERM: an idle keep-alive connection is closed at once; a request in flight finishes, with
    /// `Connection: close`; no new connection is accepted; the process exits 0.
    @Test func sigtermClosesIdleConnectionsFinishesTheRequestInFlightAndExitsZero() async throws {
        try await Contract.withPeers { jwks, upstream in
            let process = try await ServedGatehouse(toml: Contract.toml(upstreamPort: upstream.port, jwks: jwks))
            defer { process.stop() }
            let token = Self.token()
            let idle = try #require(RawHTTP.Connection(port: process.port, timeout: .seconds(5)))
            idle.send("GET /v1/idle HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(token)\r\n\r\n")
            #expect(RawHTTP.statuses(idle.receive(until: "}")) == [200])
            let busy = try #require(RawHTTP.Connection(port: process.port, timeout: .seconds(8)))
            busy.send("GET /slow HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer \(token)\r\n\r\n")
            #expect(await Contract.eventually { upstream.requests.contains { $0.uri == "/slow" } }, "the request is in flight at the upstream")

            let signalled = ContinuousClock.now
            process.signal(SIGTERM)
            let idleRest = idle.receive()  // returns when Gatehouse closes it (or after 5 s)
            let idleClosedAfter = ContinuousClock.now - signalled
            #expect(idleRest.isEmpty, "\(idleRest)")
            #expect(idleClosedAfter < .seconds(1), "the idle connection was closed \(idleClosedAfter) after SIGTERM")
            #expect(await Contract.eventually(timeout: .seconds(1)) { RawHTTP.Connection(port: process.port, timeout: .seconds(1)) == nil },
                    "new connections are not accepted while draining")

            let answer = busy.receive()  // the upstream answers /slow 2 s after it came; then Gatehouse closes
            #expect(RawHTTP.statuses(answer) == [200], "\(answer)")
            #expect(answer.hasSuffix("slow"), "the whole body: \(answer)")
            let head = answer.components(separatedBy: "\r\n\r\n").first ?? ""
            #expect(head.lowercased().contains("\r\nconnection: close"), "\(head)")
            #expect(ContinuousClock.now - signalled < .seconds(4))
            #expect(await process.exitCode(within: .seconds(5)) == 0, "\(process.output)")
        }
    }
}
