import Foundation
@testable import Gatehouse
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import Testing
import GatehouseSyntax
import GatehouseConfig
import GatehouseTelemetry

/// The whole under load for most of a minute (docs/security.md K19): concurrent clients with valid, forged, expired and
/// random-kid tokens while the identity provider rotates its keys (signing with the new key at once), fails at the
/// moment of some rotations, the upstream restarts and the configuration is reloaded. Every answer is judged; memory
/// and descriptors after warm-up are compared with the end.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct SoakTests {
    static let duration = Duration.seconds(50)
    static let warmUp = Duration.seconds(10)
    static let clients = 16

    /// What a client sent.
    enum Kind: String, CaseIterable {
        /// Signed by one of the provider's two newest keys, fresh: 200 with its subject, or 503 with Retry-After
        /// (a key not fetched yet and no refetch to be had), or 502 while the upstream restarts. Never 401 or 403.
        case valid
        /// A published kid, a signature over another payload: refused, never forwarded.
        case forged
        /// Expired, signed by a key the provider retired: 401 (the kid is retired, or it was issued before the listing;
        /// `expired` while the set Gatehouse holds still lists it).
        case expiredRetired
        /// A kid nobody publishes, fresh: 401 with evidence or 503; never forwarded.
        case randomKid
    }

    /// The provider's key generations: the three newest are published, valid tokens use the two newest.
    final class Keys: Sendable {
        private let newest = NIOLockedValueBox(0)
        func signer(_ generation: Int) -> TestSigner { TestSigner.ec.with(keyID: "gen-\(generation)") }
        var current: Int { newest.withLockedValue { $0 } }
        func rotate(_ jwks: TestJWKSServer) -> Int {
            let next = newest.withLockedValue { $0 += 1; return $0 }
            jwks.update { $0.body = TestSigner.jwks((max(0, next - 2)...next).map(signer)) }
            return next
        }
    }

    /// When the upstream was down (start, end), so a 502 can be told from a fault.
    final class Windows: Sendable {
        private let spans = NIOLockedValueBox<[(ContinuousClock.Instant, ContinuousClock.Instant?)]>([])
        func begin() { spans.withLockedValue { $0.append((.now, nil)) } }
        func end() { spans.withLockedValue { $0[$0.count - 1].1 = .now } }
        /// Whether a request from `start` to `end` overlapped a restart (with a second's grace for pooled connections).
        func overlap(_ start: ContinuousClock.Instant, _ end: ContinuousClock.Instant) -> Bool {
            spans.withLockedValue { spans in
                spans.contains { down, up in start <= (up ?? .now) + .seconds(1) && end >= down }
            }
        }
    }

    final class Tally: Sendable {
        private let counts = NIOLockedValueBox<[String: Int]>([:])
        private let faults = NIOLockedValueBox<[String]>([])
        func count(_ kind: Kind, _ status: Int) { counts.withLockedValue { $0["\(kind.rawValue) \(status)", default: 0] += 1 } }
        func fault(_ text: String) { faults.withLockedValue { if $0.count < 20 { $0.append(text) } } }
        var summary: [String: Int] { counts.withLockedValue { $0 } }
        var faultList: [String] { faults.withLockedValue { $0 } }
        func total(_ kind: Kind, _ status: Int) -> Int { summary["\(kind.rawValue) \(status)"] ?? 0 }
    }

    @Test func validTokensAreNeverRefusedThroughRotationsFailuresRestartsAndReloads() async throws {
        let keys = Keys()
        var upstream = try await TestUpstream()
        let upstreamPort = upstream.port
        try await TestEnvironment.run(signers: [keys.signer(0)], configure: { configuration, _ in
            configuration.upstream.url = URL(string: "http://127.0.0.1:\(upstreamPort)")!
            configuration.jwks.unknownKidCooldown = .seconds(1)
            configuration.jwks.minRefresh = .seconds(3)
            configuration.jwks.maxRefresh = .seconds(3)
            configuration.failureLog.maxLinesPerSecond = 100_000
        }) { (env: TestEnvironment) async throws in
            let windows = Windows()
            let tally = Tally()
            let started = ContinuousClock.now
            let deadline = started + Self.duration
            var baseline: (resident: Int, descriptors: Int)?
            var rotations = 0, failures = 0, restarts = 0, reloads = 0

            try await withThrowingTaskGroup(of: Void.self) { group in
                for client in 0..<Self.clients {
                    group.addTask { try await Self.client(client, env: env, keys: keys, windows: windows, tally: tally, until: deadline) }
                }
                // The world changes under the clients, once a second.
                var tick = 0
                while ContinuousClock.now < deadline {
                    try await Task.sleep(for: .seconds(1))
                    tick += 1
                    if tick % 4 == 0 {
                        // Every third rotation happens while the provider fails, for 1.5 s.
                        let failing = tick % 12 == 0
                        if failing { env.jwks.update { $0.status = .internalServerError } }
                        _ = keys.rotate(env.jwks)
                        rotations += 1
                        if failing {
                            failures += 1
                            try await Task.sleep(for: .milliseconds(1500))
                            env.jwks.update { $0.status = .ok }
                        }
                    }
                    if tick % 7 == 0 {
                        var configuration = env.gatehouse.configuration
                        if configuration.routes.isEmpty {
                            configuration.routes = [RouteSettings(match: .prefix("/soak-public"))]
                            configuration.routes[0].auth = .public
                        } else {
                            configuration.routes = []
                        }
                        let refused = await env.gatehouse.reload(configuration)
                        #expect(refused.isEmpty, "reload: \(refused)")
                        reloads += 1
                    }
                    if tick % 11 == 0 {
                        windows.begin()
                        await upstream.close()
                        try await Task.sleep(for: .milliseconds(300))
                        upstream = try await TestUpstream(port: upstreamPort)
                        windows.end()
                        restarts += 1
                    }
                    // Keep what the test itself holds flat, so memory growth is Gatehouse's.
                    upstream.reset()
                    env.forgetFailureLog()
                    if baseline == nil, ContinuousClock.now - started >= Self.warmUp {
                        baseline = (HTTP2AttackTests.residentBytes(), Self.openDescriptors())
                    }
                }
                try await group.waitForAll()
            }
            await upstream.close()

            let summary = tally.summary.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ")
            print("soak: \(rotations) rotations (\(failures) while the provider failed), \(restarts) upstream restarts, \(reloads) reloads; \(summary)")
            #expect(tally.faultList.isEmpty, "wrong answers: \(tally.faultList); all answers: \(summary)")
            #expect(rotations >= 10 && failures >= 3 && restarts >= 3 && reloads >= 6, "\(rotations) \(failures) \(restarts) \(reloads)")
            let validServed = tally.total(.valid, 200)
            let validAll = tally.summary.filter { $0.key.hasPrefix("valid ") }.values.reduce(0, +)
            #expect(validServed * 4 >= validAll * 3, "most valid tokens are served: \(summary)")
            #expect(tally.total(.expiredRetired, 401) > 0 && tally.total(.randomKid, 401) + tally.total(.randomKid, 503) > 0, "\(summary)")

            // Memory and descriptors: the load has stopped; pooled connections may take a moment to close.
            env.forgetFailureLog()
            let warm = try #require(baseline)
            #expect(await Contract.eventually { Self.openDescriptors() <= warm.descriptors + 8 },
                    "descriptors: \(warm.descriptors) after warm-up, \(Self.openDescriptors()) at the end")
            let grown = HTTP2AttackTests.residentBytes() - warm.resident
            print("soak: resident memory \(warm.resident >> 20) MiB after warm-up, \(HTTP2AttackTests.residentBytes() >> 20) MiB at the end; descriptors \(warm.descriptors) -> \(Self.openDescriptors())")
            #expect(grown < 48 << 20, "resident memory grew \(grown >> 20) MiB after warm-up; answers: \(summary)")
        }
    }

    /// One client: a token of a random kind per request, each answer judged.
    static func client(_ index: Int, env: TestEnvironment, keys: Keys, windows: Windows, tally: Tally, until deadline: ContinuousClock.Instant) async throws {
        var sequence = 0
        while ContinuousClock.now < deadline {
            sequence += 1
            let kind = Kind.allCases[(index + sequence) % 10 < 6 ? 0 : 1 + (index + sequence) % 3]
            let subject = "soak-\(index)-\(sequence)"
            let now = Int64(Date().timeIntervalSince1970)
            let generation = keys.current - (sequence % 2)
            let token: String
            switch kind {
            case .valid:
                token = keys.signer(max(0, generation)).token(claims: Claims.valid(subject: subject))
            case .forged:
                // A valid token's signature over another payload (the subject raised to "admin").
                let signer = keys.signer(max(0, generation))
                let genuine = signer.token(claims: Claims.valid(subject: subject)).split(separator: ".")
                let other = signer.token(claims: Claims.valid(subject: "admin")).split(separator: ".")
                token = [genuine[0], other[1], genuine[2]].joined(separator: ".")
            case .expiredRetired:
                let retired = keys.current - 3 - sequence % 3
                token = keys.signer(retired).token(claims: Claims.valid(
                    subject: subject, extra: ["iat": .number(String(now - 7200)), "exp": .number(String(now - 3600))]))
            case .randomKid:
                token = TestSigner.ec.with(keyID: "random-\(index)-\(sequence)").token(claims: Claims.valid(subject: subject))
            }
            if kind == .expiredRetired && keys.current < 3 { continue }
            let start = ContinuousClock.now
            let response: TestEnvironment.Response
            do {
                response = try await env.request("/whoami/\(subject)", token: token, headers: [("X-Auth-Subject", "mallory")])
            } catch {
                tally.fault("\(kind) \(subject): no answer: \(error)")
                continue
            }
            tally.count(kind, response.status)
            let reason = response.json?["reason"]?.stringValue ?? "-"
            let what = "\(kind) \(subject) (gen \(generation), newest \(keys.current)): \(response.status) \(reason) \(response.body.prefix(120))"
            switch (kind, response.status) {
            case (.valid, 200):
                if response.body != subject { tally.fault("\(what): the upstream was told \(response.body)") }
            case (.valid, 503), (.forged, 503), (.randomKid, 503):
                if reason != "keys_unavailable" || (Int(response.headers.first(name: "retry-after") ?? "") ?? 0) < 1 { tally.fault(what) }
            case (.valid, 502):
                if !windows.overlap(start, .now) { tally.fault("\(what): outside an upstream restart") }
            case (.forged, 401):
                if reason != "bad_signature" && reason != "unknown_key" { tally.fault(what) }
            case (.expiredRetired, 401):
                // `expired` while Gatehouse still holds a set that lists the key (the retiring fetch has not happened yet).
                if reason != "unknown_key" && reason != "expired" { tally.fault(what) }
            case (.randomKid, 401):
                if reason != "unknown_key" { tally.fault(what) }
            default:
                tally.fault(what)
            }
        }
    }

    static func openDescriptors() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
    }
}
