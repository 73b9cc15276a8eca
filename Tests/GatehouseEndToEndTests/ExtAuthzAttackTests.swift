import Testing
import GatehouseSyntax
import GatehouseConfig

/// docs/security.md H1-H5 on the `[ext_authz]` port: the HTTP/2 attacks of `HTTP2AttackTests`, sent to the port Envoy
/// (or a mesh) calls with its Check. The port runs the same `HTTP2ServerConnection` as the client port, with its own
/// stream kind (`ExtAuthzHTTP2Stream`); these show the connection's flood rules hold there too, judged by what the
/// attacker saw (the scripts' reports) and by Checks from a well-behaved caller still being answered after each.
@Suite(.serialized, .timeLimit(.minutes(4)))
struct ExtAuthzAttackTests {
    private typealias Attack = HTTP2AttackTests

    /// A Check answered on the port after the attack: the flood cost its own connection only.
    private func expectStillAnswering(_ port: Int, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let answers = try await ExtAuthzTests.call(port, [
            ExtAuthzTests.check("after", headers: [("authorization", "Bearer \(ExtAuthzTests.token())")]),
        ])
        let answer = answers["after"]
        #expect(answer?.code == 0 && answer?.allowed == true, "\(String(describing: answer))", sourceLocation: sourceLocation)
    }

    @Test func rapidResetIsCutWithEnhanceYourCalm() async throws {
        try await ExtAuthzTests.run { env, port in
            let report = try await Attack.attack("rapid_reset.py", env, ["--token", Attack.token(), "--streams", "5000"], port: port)
            #expect(report.bool("goaway"), "\(report)")
            #expect(report.int("error_code") == 11, "ENHANCE_YOUR_CALM: \(report)")
            #expect(report.int("goaway_last_stream") == 0, "\(report)")
            #expect(report.bool("closed"), "\(report)")
            #expect((report.int("responses") ?? .max) <= 200, "\(report)")
            try await expectStillAnswering(port)
        }
    }

    @Test func endlessEmptyContinuationFramesAreCutWithEnhanceYourCalm() async throws {
        try await ExtAuthzTests.run { env, port in
            let report = try await Attack.attack(
                "continuation_flood.py", env, ["--token", Attack.token(), "--payload", "0", "--frames", "200000"], port: port)
            #expect(report.int("error_code") == 11, "ENHANCE_YOUR_CALM: \(report)")
            #expect(report.bool("closed"), "\(report)")
            #expect(report.int("responses") == 0, "\(report)")
            try await expectStillAnswering(port)
        }
    }

    @Test func continuationFramesBeyondTheHeaderListSizeAreCut() async throws {
        try await ExtAuthzTests.run { env, port in
            let report = try await Attack.attack(
                "continuation_flood.py", env, ["--token", Attack.token(), "--payload", "16384", "--max-bytes", String(16 << 20)], port: port)
            #expect(report.int("error_code") == 1, "PROTOCOL_ERROR: \(report)")
            #expect(report.bool("closed"), "\(report)")
            try await expectStillAnswering(port)
        }
    }

    @Test func hpackBombIsRefusedWithoutDecodingItAll() async throws {
        try await ExtAuthzTests.run { env, port in
            let report = try await Attack.attack("hpack_bomb.py", env, ["--token", Attack.token(), "--connections", "4"], port: port)
            #expect(report.bool("all_refused"), "\(report)")
            #expect(!report.bool("any_answered"), "\(report)")
            #expect(report.ints("goaway_codes") == [9], "COMPRESSION_ERROR: \(report)")
            #expect(report.bool("all_closed"), "\(report)")
            try await expectStillAnswering(port)
        }
    }

    @Test(arguments: ["ping", "settings"])
    func controlFrameFloodFromACallerThatNeverReadsIsCut(_ kind: String) async throws {
        try await ExtAuthzTests.run { env, port in
            let report = try await Attack.attack("control_flood.py", env, ["--kind", kind, "--frames", "2000000", "--seconds", "8"], port: port)
            #expect(report.bool("closed"), "\(kind) flood: \(report)")
            if report.bool("goaway") { #expect(report.int("error_code") == 11, "ENHANCE_YOUR_CALM: \(report)") }
            #expect((report.int(kind == "ping" ? "ping_acks" : "settings_acks") ?? 0) <= 10_001, "\(report)")
            try await expectStillAnswering(port)
        }
    }
}
