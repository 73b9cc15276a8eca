#if canImport(Glibc)
import Glibc
#endif
import Foundation
@testable import Gatehouse
import Testing
import GatehouseSyntax
import GatehouseConfig
import GatehouseProxy

/// The HTTP/2 flood attacks, with raw frames (Resources/h2, Python, `h2`'s HPACK for the
/// encoding): each attack is cut (GOAWAY with its code, then the socket closed, or the stream
/// refused), another client is served normally while and after it happens, and where the attack
/// is about memory this process (Gatehouse runs in it) stays within a generous bound.
///
/// What answers each attack is `HTTP2ServerConnection`: nghttp2 with swift-nio-http2's DoS rules carried over
/// (`HTTP2FloodDefence`), the GOAWAY lifecycle (`HTTP2ConnectionLifecycle`: an idle connection whose client
/// ignores the GOAWAY's PING is closed, as is a half-closed one), and `HTTP2ServerStream` (a stream whose writes
/// stalled for `idle_timeout`: reset). (The comments on each test name NIO's numbers, which these rules keep.) The scripts are bounded in frames and
/// seconds and talk to 127.0.0.1 only.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct HTTP2AttackTests {
    /// Growth of this process's resident memory that an attack may cause: far below what the
    /// attacks would cost if buffered (hundreds of MiB each), far above noise.
    static let memoryBound = 64 << 20

    static func token() -> String { TestSigner.ec.token(claims: Claims.valid()) }

    /// What an attack script printed last.
    struct Report: CustomStringConvertible {
        let object: [String: JSONValue]

        func int(_ key: String) -> Int? { object[key]?.integerValue.map { Int($0) } }
        func bool(_ key: String) -> Bool { object[key]?.boolValue ?? false }
        func double(_ key: String) -> Double? {
            if case .number(let literal) = object[key] { return Double(literal) }
            return nil
        }
        func ints(_ key: String) -> [Int?] { object[key]?.arrayValue?.map { $0.integerValue.map { Int($0) } } ?? [] }
        func doubles(_ key: String) -> [Double?] {
            object[key]?.arrayValue?.map { value in
                if case .number(let literal) = value { return Double(literal) }
                return nil
            } ?? []
        }
        subscript(_ key: String) -> Report { Report(object: object[key]?.objectValue ?? [:]) }
        var description: String { JSONValue.object(object).compactJSON }
    }

    /// Set by `whileServingOthers`: the file the attack creates once its first connection is open.
    @TaskLocal static var startedFile: String?

    /// An attack script (Resources/h2) against Gatehouse's client port (or `port`); its last JSON line.
    static func attack(_ script: String, _ env: TestEnvironment, _ arguments: [String] = [], port: Int? = nil) async throws -> Report {
        let path = try PythonPeer.script("h2", script)
        let announced = startedFile.map { ["--started-file", $0] } ?? []
        let (exitCode, output) = try await ChildProcess.runToEnd(
            ["/usr/bin/env", "python3", path, "--port", String(port ?? env.port)] + announced + arguments)
        let line = output.split(separator: "\n").last { $0.hasPrefix("{") }
        guard exitCode == 0, let line, let object = try? StrictJSON.parse(Array(line.utf8), maxDepth: 64).objectValue else {
            throw PythonPeer.Failed(description: "\(script) \(arguments.joined(separator: " ")) failed (\(exitCode)): \(output)")
        }
        return Report(object: object)
    }

    /// This process's resident set (VmRSS), in bytes.
    static func residentBytes() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            return fields.count > 1 ? (Int(fields[1]) ?? 0) * 1024 : 0
        }
        return 0
    }

    /// The least of a few samples: suites running in parallel in this process can only add to it.
    static func settledResidentBytes() async throws -> Int {
        var least = Int.max
        for _ in 0..<5 {
            least = min(least, residentBytes())
            try await Task.sleep(for: .milliseconds(20))
        }
        return least
    }

    /// The resident set once the server has read what the attacker's sockets still held: sampled until
    /// it stops growing (two samples 50 ms apart within 1 MiB), for 2 s at most.
    static func residentBytesOnceTheServerHasReadEverything() async throws -> Int {
        var previous = try await settledResidentBytes()
        for _ in 0..<40 {
            try await Task.sleep(for: .milliseconds(50))
            let current = try await settledResidentBytes()
            if current - previous < 1 << 20 { return max(current, previous) }
            previous = current
        }
        return previous
    }

    /// Runs an attack script and measures how much this process grew while the attack's
    /// connections were still as the server left them: the script, once done attacking, creates
    /// its `--hold-file` and waits (sockets open) until the file is removed here.
    static func attackMeasuringMemory(_ script: String, _ env: TestEnvironment, _ arguments: [String]) async throws -> (Report, growth: Int) {
        let holdFile = NSTemporaryDirectory() + "gatehouse-h2-hold-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: holdFile) }
        let baseline = try await settledResidentBytes()
        async let running = attack(script, env, arguments + ["--hold-file", holdFile])
        var held: Int?
        for _ in 0..<1000 where held == nil {
            if FileManager.default.fileExists(atPath: holdFile) {
                held = try await residentBytesOnceTheServerHasReadEverything()
                try? FileManager.default.removeItem(atPath: holdFile)
            } else {
                try await Task.sleep(for: .milliseconds(10))
            }
        }
        let report = try await running
        #expect(held != nil, "\(script) never reached the end of its attack: \(report)")
        return (report, (held ?? residentBytes()) - baseline)
    }

    static func expectBounded(_ growth: Int, _ attack: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(growth < memoryBound, "\(attack): resident memory grew by \(growth >> 20) MiB", sourceLocation: sourceLocation)
    }

    /// Another client, not the attacker: a valid token over HTTP/2 (prior knowledge) and over
    /// HTTP/1.1, each curl on a connection of its own, is answered 200 by the upstream, which was
    /// given the verified identity. `echoesIdentity`: the upstream (big_upstream.py) says in its
    /// body what it was given, instead of TestUpstream recording it.
    static func expectServed(
        _ env: TestEnvironment, _ moment: String, echoesIdentity: Bool = false, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let id = UUID().uuidString.prefix(8).lowercased()
        for (protocolOption, version) in [("--http2-prior-knowledge", "2"), ("--http1.1", "1.1")] {
            let path = "/v1/bystander/\(moment)/\(version)/\(id)"
            let response = try await HTTP2Tests.curl([protocolOption, "-H", "Authorization: Bearer \(token())", env.baseURL + path])
            #expect(response.version == version && response.status == 200, "HTTP/\(version) client \(moment) the attack: \(response)",
                    sourceLocation: sourceLocation)
            if echoesIdentity {
                #expect(response.body.contains("\"x-auth-subject\": \"user-1\""), "\(path): \(response.body)", sourceLocation: sourceLocation)
            } else {
                let received = env.upstream.requests.first { $0.uri == path }
                #expect(received?.values("x-auth-subject") == ["user-1"], "\(path) upstream: \(String(describing: received))",
                        sourceLocation: sourceLocation)
            }
        }
    }

    /// Runs `attack` while another client is served, then checks that client again afterwards.
    static func whileServingOthers<T: Sendable>(
        _ env: TestEnvironment, echoesIdentity: Bool = false, _ attack: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        try await expectServed(env, "before", echoesIdentity: echoesIdentity)
        let announcedFile = NSTemporaryDirectory() + "gatehouse-h2-started-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: announcedFile) }
        return try await Self.$startedFile.withValue(announcedFile) {
            async let result = attack()
            // "During" means once the attacker's first connection is open (the script says so).
            for _ in 0..<500 where !FileManager.default.fileExists(atPath: announcedFile) { try await Task.sleep(for: .milliseconds(10)) }
            #expect(FileManager.default.fileExists(atPath: announcedFile), "the attack never started")
            try await expectServed(env, "during", echoesIdentity: echoesIdentity)
            let value = try await result
            try await expectServed(env, "after", echoesIdentity: echoesIdentity)
            return value
        }
    }

    static func upstreamRequests(_ env: TestEnvironment, under prefix: String) -> Int {
        env.upstream.requests.filter { $0.uri.hasPrefix(prefix) }.count
    }

    // MARK: - Attacks

    /// CVE-2023-44487: HEADERS then RST_STREAM, 5000 times. NIO's reset-frame rate limit (200 per
    /// 30 s) answers GOAWAY ENHANCE_YOUR_CALM naming no stream (last stream 0), and the connection
    /// is closed; the cancelled streams never add up to upstream requests.
    @Test func rapidResetIsCutWithEnhanceYourCalmAndBarelyReachesTheUpstream() async throws {
        try await TestEnvironment.run { env in
            let (report, growth) = try await Self.whileServingOthers(env) {
                try await Self.attackMeasuringMemory("rapid_reset.py", env, ["--token", Self.token(), "--streams", "5000"])
            }
            #expect(report.bool("goaway"), "\(report)")
            #expect(report.int("error_code") == 11, "ENHANCE_YOUR_CALM: \(report)")
            #expect(report.int("goaway_last_stream") == 0, "\(report)")
            #expect(report.bool("closed"), "the connection must be closed after its GOAWAY: \(report)")
            let responses = try #require(report.int("responses"), "\(report)")
            #expect(responses <= 200, "\(report)")
            #expect(Self.upstreamRequests(env, under: "/v1/rapid-reset") <= 200)
            Self.expectBounded(growth, "rapid reset")
        }
    }

    /// 2024 CONTINUATION flood, CPU flavour: a header block that never ends, in empty CONTINUATION
    /// frames. NIO allows 5 CONTINUATION frames in a row, then GOAWAY ENHANCE_YOUR_CALM; closed.
    @Test func endlessEmptyContinuationFramesAreCutWithEnhanceYourCalm() async throws {
        try await TestEnvironment.run { env in
            let report = try await Self.whileServingOthers(env) {
                try await Self.attack("continuation_flood.py", env, ["--token", Self.token(), "--payload", "0", "--frames", "200000"])
            }
            #expect(report.int("error_code") == 11, "ENHANCE_YOUR_CALM: \(report)")
            #expect(report.bool("closed"), "\(report)")
            #expect(report.int("responses") == 0)
            #expect(Self.upstreamRequests(env, under: "/v1/continuation") == 0)
        }
    }

    /// 2024 CONTINUATION flood, memory flavour: 16 KiB CONTINUATION frames (up to 128 MiB). The
    /// block may not outgrow SETTINGS_MAX_HEADER_LIST_SIZE ([listen] max_header_bytes, 16 KiB): NIO
    /// answers GOAWAY PROTOCOL_ERROR as soon as it would, before buffering more; closed.
    @Test func continuationFramesBeyondTheHeaderListSizeAreCutWithBoundedMemory() async throws {
        try await TestEnvironment.run { env in
            let (report, growth) = try await Self.whileServingOthers(env) {
                try await Self.attackMeasuringMemory("continuation_flood.py", env, [
                    "--token", Self.token(), "--payload", "16384", "--max-bytes", String(128 << 20),
                ])
            }
            #expect(report.int("error_code") == 1, "PROTOCOL_ERROR: \(report)")
            #expect(report.bool("closed"), "\(report)")
            #expect(Self.upstreamRequests(env, under: "/v1/continuation") == 0)
            Self.expectBounded(growth, "CONTINUATION flood with large frames")
        }
    }

    /// HPACK bomb: 8 connections, each one HEADERS frame of 16 000 bytes that would decode to
    /// 47 MB (a 4 000-byte literal indexed, then referenced 11 000 times). NIO's decoder counts
    /// the list as it decodes and stops at max_header_bytes: GOAWAY COMPRESSION_ERROR, nothing
    /// reaches the upstream, memory stays put.
    @Test func hpackBombIsRefusedWithoutDecodingItAll() async throws {
        try await TestEnvironment.run { env in
            let (report, growth) = try await Self.whileServingOthers(env) {
                try await Self.attackMeasuringMemory("hpack_bomb.py", env, ["--token", Self.token(), "--connections", "8"])
            }
            #expect((report.int("decoded_bytes_if_expanded") ?? 0) > 300_000_000, "\(report)")
            #expect(report.bool("all_refused"), "\(report)")
            #expect(!report.bool("any_answered"), "no stream may be served (431 at most): \(report)")
            #expect(report.ints("goaway_codes") == [9], "COMPRESSION_ERROR: \(report)")
            #expect(report.bool("all_closed"), "\(report)")
            #expect(Self.upstreamRequests(env, under: "/v1/hpack-bomb") == 0)
            Self.expectBounded(growth, "HPACK bomb")
        }
    }

    /// Control frames whose answers cannot leave: the client floods and never reads (4 KiB
    /// receive buffer). NIO's control-frame rate limit (200 per 30 s) answers GOAWAY
    /// ENHANCE_YOUR_CALM, its buffered-control-frame cap (10 000) bounds the queued ACKs; the
    /// connection is closed, and memory stays put.
    static func controlFrameFlood(_ kind: String) async throws {
        try await TestEnvironment.run { env in
            let (report, growth) = try await Self.whileServingOthers(env) {
                try await Self.attackMeasuringMemory("control_flood.py", env, ["--kind", kind, "--frames", "2000000", "--seconds", "8"])
            }
            #expect(report.bool("closed"), "\(kind) flood: the connection must be closed: \(report)")
            // The GOAWAY may be lost when the server closes on a client that sends and never reads.
            if report.bool("goaway") { #expect(report.int("error_code") == 11, "ENHANCE_YOUR_CALM: \(report)") }
            #expect((report.int(kind == "ping" ? "ping_acks" : "settings_acks") ?? 0) <= 10_001, "\(report)")
            Self.expectBounded(growth, "\(kind) flood")
        }
    }

    @Test func pingFloodFromAClientThatNeverReadsIsCut() async throws {
        try await Self.controlFrameFlood("ping")
    }

    @Test func settingsFloodFromAClientThatNeverReadsIsCut() async throws {
        try await Self.controlFrameFlood("settings")
    }

    /// Zero-window stall on a large response: SETTINGS_INITIAL_WINDOW_SIZE 0 and never a
    /// WINDOW_UPDATE, 4 streams of a 64 MiB answer each. Gatehouse stops reading the upstream
    /// once the stream's buffer is full (NIO's stream writability, 8 KiB), and resets the stream
    /// (RST_STREAM CANCEL) after `idle_timeout` (1 s here) without progress; memory stays put.
    @Test func zeroWindowStallOnALargeResponseIsResetAfterTheIdleTimeout() async throws {
        try await BigUpstream.with { upstream in
            try await TestEnvironment.run(configure: { configuration, _ in
                configuration.upstream.url = URL(string: "http://127.0.0.1:\(upstream.port)")!
                configuration.upstream.timeout = .seconds(5)
                configuration.listen.idleTimeout = .seconds(1)
            }) { env in
                let (report, growth) = try await Self.whileServingOthers(env, echoesIdentity: true) {
                    try await Self.attackMeasuringMemory(
                        "zero_window.py", env, ["--token", Self.token(), "--path", "/big", "--streams", "4", "--hold", "8", "--stall", "0.5"])
                }
                Self.expectStallReset(report, streams: 4)
                Self.expectBounded(growth, "zero-window stall on 4 x 64 MiB")
            }
        }
    }

    /// Zero-window stall on a small response: the whole answer (upstream done) waits for a window
    /// that never opens. The stream must still be reset after `idle_timeout`, not held for ever.
    @Test func zeroWindowStallOnASmallResponseIsResetAfterTheIdleTimeout() async throws {
        try await TestEnvironment.run(configure: { configuration, _ in
            configuration.listen.idleTimeout = .seconds(1)
        }) { env in
            let report = try await Self.whileServingOthers(env) {
                try await Self.attack("zero_window.py", env, ["--token", Self.token(), "--path", "/v1/stall", "--streams", "4", "--hold", "8"])
            }
            Self.expectStallReset(report, streams: 4)
            #expect(Self.upstreamRequests(env, under: "/v1/stall") == 4)
        }
    }

    /// H23: a stream whose request body stops coming (HEADERS with a valid token and a length, a first DATA frame,
    /// then nothing) is reset (CANCEL) once it has not moved for `idle_timeout` while the upstream could take more, on
    /// both upstream protocols: the rule an HTTP/1.1 body that stops meets (P25), in the driver both doors share.
    /// Before, such a stream held its upstream leg until `[upstream] timeout` (10 s here) and then got a 504.
    @Test(arguments: HTTP2IntakeTests.upstreamProtocols)
    func aStreamWhoseBodyStopsIsResetAfterTheIdleTimeout(_ upstream: UpstreamProtocol) async throws {
        try await HTTP2IntakeTests.run(upstream, configure: { configuration in
            configuration.listen.idleTimeout = .seconds(1)
            configuration.upstream.timeout = .seconds(10)  // so the reset is the stall's, not a 504
        }) { env in
            let started = ContinuousClock.now
            let answers = try await HTTP2IntakeTests.send([
                .init(name: "stalled", headers: HTTP2IntakeTests.block(
                    env, method: "POST", path: "/v1/stalled-upload", token: HTTP2IntakeTests.token(), [("content-length", "100000")]),
                      body: "first bytes", open: true),
            ], to: env)
            let elapsed = ContinuousClock.now - started
            let stalled = answers["stalled"]
            #expect(stalled?.resetCode == 8 && stalled?.status == nil, "reset (CANCEL), never answered: \(String(describing: stalled))")
            #expect(elapsed < .seconds(4), "after idle_timeout (1 s), not [upstream] timeout (10 s): \(elapsed)")
        }
    }

    static func expectStallReset(_ report: Report, streams: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(report.int("data_bytes") == 0, "the window never opened: \(report)", sourceLocation: sourceLocation)
        #expect(report.bool("all_reset"), "every stalled stream must be reset: \(report)", sourceLocation: sourceLocation)
        #expect(report.ints("rst_codes").allSatisfy { $0 == 8 }, "CANCEL: \(report)", sourceLocation: sourceLocation)
        let resets = report.doubles("reset_after").compactMap { $0 }
        #expect(resets.count == streams && resets.allSatisfy { $0 >= 0.9 && $0 < 6 }, "after idle_timeout (1 s): \(report)",
                sourceLocation: sourceLocation)
    }

    /// An idle connection gets a graceful GOAWAY after `idle_timeout` (NIO's connection manager),
    /// which waits for the acknowledgement of a PING before closing; a client that never answers
    /// must not keep the connection for ever: closed `drain_timeout` after that GOAWAY.
    @Test func idleClientThatNeverAnswersTheGoawayPingIsClosedAfterTheDrainTimeout() async throws {
        try await TestEnvironment.run(configure: { configuration, _ in
            configuration.listen.idleTimeout = .seconds(1)
            configuration.listen.drainTimeout = .seconds(2)
        }) { env in
            let report = try await Self.whileServingOthers(env) {
                try await Self.attack("idle_client.py", env, ["--hold", "10"])
            }
            #expect(report.bool("goaway") && report.int("error_code") == 0, "a graceful GOAWAY (NO_ERROR): \(report)")
            #expect((report.int("pings") ?? 0) >= 1, "\(report)")
            #expect(report.bool("closed"), "\(report)")
            let closedAfter = report.double("closed_after") ?? .infinity
            #expect(closedAfter > 2.5 && closedAfter < 6, "idle_timeout (1 s) + drain_timeout (2 s): \(report)")
        }
    }

    /// A client that shuts down its sending side (TCP half-close, which HTTP/2 gives no meaning):
    /// the connection is closed at once, not left half-open (CLOSE_WAIT) until something writes.
    @Test func clientThatClosesItsSendingSideIsClosed() async throws {
        try await TestEnvironment.run { env in
            let report = try await Self.whileServingOthers(env) {
                try await Self.attack("idle_client.py", env, ["--half-close", "--hold", "5"])
            }
            #expect(report.bool("closed"), "\(report)")
            #expect((report.double("closed_after") ?? .infinity) < 2, "\(report)")
        }
    }

    /// 110 open streams against SETTINGS_MAX_CONCURRENT_STREAMS 100 (acknowledged). The 10 in
    /// excess are refused - NIO makes this a connection error (GOAWAY PROTOCOL_ERROR that lets
    /// the streams in flight finish) where RFC 9113 §5.1.2 asks for RST_STREAM REFUSED_STREAM or
    /// PROTOCOL_ERROR; either is accepted - and never reach the upstream; the first 100 are served.
    @Test func streamsBeyondTheConcurrencyLimitAreRefusedAndTheFirstHundredServed() async throws {
        try await TestEnvironment.run(configure: { configuration, _ in
            configuration.upstream.timeout = .seconds(10)
        }) { env in
            let report = try await Self.whileServingOthers(env) {
                try await Self.attack("concurrent_streams.py", env, ["--token", Self.token(), "--streams", "110"])
            }
            #expect(report.int("advertised_max_concurrent_streams") == HTTP2ServerSetup.maxConcurrentStreams, "\(report)")
            #expect(report.int("first_ok") == 100, "the first 100 streams are served: \(report)")
            #expect(report.int("excess_answered") == 0, "\(report)")
            let excessCodes = report.ints("excess_rst_codes")
            let refusedByStream = excessCodes.count == 10 && excessCodes.allSatisfy { $0 == 7 || $0 == 1 }
            let refusedByConnection = report.bool("goaway") && report.int("error_code") == 1
            #expect(refusedByStream || refusedByConnection, "REFUSED_STREAM / PROTOCOL_ERROR: \(report)")
            if refusedByConnection { #expect(report.bool("closed"), "closed once the first 100 are done: \(report)") }
            #expect(Self.upstreamRequests(env, under: "/v1/streams/") == 100)
        }
    }

    /// One connection: a forged token (401), a `connection:` header, an upper-case header name and
    /// a misplaced pseudo-header (each RST_STREAM PROTOCOL_ERROR, RFC 9113 §8.2, §8.3) between
    /// valid streams; the valid ones are answered 200 with the identity upstream, the bad ones
    /// reach nothing, and the connection goes on taking streams.
    @Test func aBadStreamDoesNotHarmItsSiblings() async throws {
        try await TestEnvironment.run { env in
            let forged = String(Self.token().dropLast(8)) + "AAAAAAAA"
            let report = try await Self.whileServingOthers(env) {
                try await Self.attack("sibling_streams.py", env, ["--token", Self.token(), "--forged-token", forged])
            }
            #expect(!report.bool("goaway") && !report.bool("closed"), "\(report)")
            let streams = report["streams"]
            for name in ["valid_before", "valid_after", "valid_later"] {
                #expect(streams[name].int("status") == 200, "\(name): \(report)")
                #expect(streams[name].object["x_upstream"]?.stringValue == "test", "\(name): \(report)")
            }
            #expect(streams["forged_token"].int("status") == 401, "\(report)")
            // The forged stream is the one authentication failure: one line, with the reason that names it.
            #expect(env.failureLog.map { $0["reason"] } == [.string("bad_signature")], "\(env.failureLog)")
            for name in ["connection_header", "uppercase_name", "late_pseudo_header"] {
                #expect(streams[name].int("rst_code") == 1, "\(name): PROTOCOL_ERROR: \(report)")
                #expect(streams[name].int("status") == nil, "\(name): \(report)")
            }
            let siblings = env.upstream.requests.filter { $0.uri.hasPrefix("/v1/siblings/") }
            #expect(Set(siblings.map(\.uri)) == ["/v1/siblings/before", "/v1/siblings/after", "/v1/siblings/later"])
            #expect(siblings.allSatisfy { $0.values("x-auth-subject") == ["user-1"] })
        }
    }
}

/// Resources/h2/big_upstream.py on a free loopback port: 64 MiB under /big, a small echo elsewhere.
fileprivate final class BigUpstream: Sendable {
    let port: Int
    private let pid: pid_t

    init(size: Int = 64 << 20) async throws {
        (pid, port) = try await PythonPeer.startServer(
            "h2", "big_upstream.py", ["--size", String(size), "--lifetime", "120"], what: "big_upstream.py")
    }

    func close() {
        kill(pid, SIGKILL)
        ChildProcess.wait(pid)
    }

    static func with<T: Sendable>(_ body: (BigUpstream) async throws -> T) async throws -> T {
        let upstream = try await BigUpstream()
        defer { upstream.close() }
        return try await body(upstream)
    }
}
