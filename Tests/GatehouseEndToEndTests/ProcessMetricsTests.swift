import Foundation
@testable import Gatehouse
import Testing

/// `gatehouse serve` raises its soft open-files limit to the hard one and says so; `/metrics` has the standard
/// `process_*` series (issue 43), typed as Prometheus's client libraries type them.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct ProcessMetricsTests {
    @Test func serveRaisesItsOpenFilesLimitAndExportsTheProcessSeries() async throws {
        try await Contract.withPeers { jwks, upstream in
            let process = try await ServedGatehouse(
                toml: Contract.toml(upstreamPort: upstream.port, jwks: jwks), prefix: ["/usr/bin/prlimit", "--nofile=256:4096", "--"])
            defer { process.stop() }
            #expect(process.output.contains("open files limit") && process.output.contains("gatehouse.limit=4096")
                && process.output.contains("gatehouse.raised_from=256"), "\(process.output)")
            let metrics = MetricsText(try await ServedGatehouse.admin(process.adminPort, "/metrics").body)
            #expect(metrics.value("process_max_fds") == 4096, "\(metrics.text)")
            #expect((metrics.value("process_open_fds") ?? 0) >= 3)
            #expect((metrics.value("process_resident_memory_bytes") ?? 0) > Double(1 << 20))
            #expect((metrics.value("process_virtual_memory_bytes") ?? 0) > (metrics.value("process_resident_memory_bytes") ?? 0))
            #expect((metrics.value("process_cpu_seconds_total") ?? -1) >= 0)
            let started = try #require(metrics.value("process_start_time_seconds"))
            #expect(abs(Date().timeIntervalSince1970 - started) < 120, "started \(started)")
            #expect(metrics.types["process_cpu_seconds_total"] == "counter")
            #expect(metrics.types["process_max_fds"] == "gauge")
        }
    }
}
