import Crypto
import Foundation
@testable import Gatehouse
import Testing
import GatehouseSyntax
import GatehouseConfig
import GatehouseTelemetry

/// docs/reference.md §2: the command line as an operator runs it — the `gatehouse` binary's
/// `check-config` and `verify-token` output, exit codes 0 / 1 / 64, and where the configuration is found.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct CLITests {
    static func validTOML(upstreamPort: Int = 3000, jwksURL: String = "http://127.0.0.1:9/jwks.json") -> String {
        "[listen]\naddress = \"127.0.0.1:18080\"\n"
            + Contract.toml(upstreamPort: upstreamPort, jwksURI: jwksURL, extra: "[[route]]\nprefix = \"/health\"\nauth = \"public\"\n")
    }

    static func summary(upstreamPort: Int = 3000) -> String {
        "config OK: 1 provider (test), 1 route, upstream http://127.0.0.1:\(upstreamPort), listen 127.0.0.1:18080, HTTP/2\n"
    }

    /// Runs `body` with a scratch directory, removed afterwards.
    static func inDirectory<T>(_ body: (String) async throws -> T) async throws -> T {
        let directory = try Contract.makeDirectory("cli")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        return try await body(directory)
    }

    /// `check-config` also checks what `serve` would fail on at start (issue 43), each with its key path, without side
    /// effects: a TLS certificate that cannot be read, or whose key is another key's; an `env:` secret that is not set;
    /// a `password_file` that is missing; a failure log and a `cache_dir` that cannot be written. `--syntax-only` (CI on
    /// another machine) checks the file alone.
    @Test func checkConfigRefusesWhatServeWouldFailOnAtStart() async throws {
        try await Self.inDirectory { directory in
            func run(_ argv: [String]) async throws { _ = try await ChildProcess.runToEnd(argv) }
            for name in ["one", "two"] {
                try await run(["/usr/bin/openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
                               "-subj", "/CN=\(name)", "-keyout", "\(directory)/\(name).key", "-out", "\(directory)/\(name).crt"])
            }
            let matching = directory + "/matching.toml"
            try Self.validTOML().replacingOccurrences(of: "[listen]\n", with: """
                [listen]
                tls_cert = "\(directory)/one.crt"
                tls_key = "\(directory)/one.key"

                """).write(toFile: matching, atomically: true, encoding: .utf8)
            let fine = try await Contract.runCLI(["check-config", "--config", matching])
            #expect(fine.exitCode == 0, "a matching pair: \(fine)")

            let broken = directory + "/broken.toml"
            try (Self.validTOML().replacingOccurrences(of: "[listen]\n", with: """
                [listen]
                tls_cert = "\(directory)/one.crt"
                tls_key = "\(directory)/two.key"

                """) + """

                [dpop]
                nonce = true
                nonce_secret = "env:GATEHOUSE_TEST_NEVER_SET"
                [revocation]
                store = "postgres://gatehouse@127.0.0.1:5432/gatehouse"
                password_file = "\(directory)/absent-password"
                [failure_log]
                path = "/etc/hostname/failures.log"
                [jwks]
                cache_dir = "/etc/hostname/jwks"
                """).write(toFile: broken, atomically: true, encoding: .utf8)
            let failed = try await Contract.runCLI(["check-config", "--config", broken])
            #expect(failed.exitCode == 1, "\(failed)")
            let lines = failed.stderr.split(separator: "\n").map(String.init)
            #expect(lines.first == "\(broken): serve would not start: 5 problem(s):", "\(failed.stderr)")
            for keyPath in ["listen.tls_cert: ", "dpop.nonce_secret: ", "revocation.password: ", "failure_log.path: ", "jwks.cache_dir: "] {
                #expect(lines.contains { $0.hasPrefix(keyPath) }, "\(keyPath): \(failed.stderr)")
            }
            #expect(FileManager.default.fileExists(atPath: directory + "/absent-password") == false, "no side effect")
            let syntax = try await Contract.runCLI(["check-config", "--syntax-only", "--config", broken])
            #expect(syntax.exitCode == 0, "\(syntax)")
        }
    }

    /// `check-config`: a valid file prints its one-line summary on standard output and exits 0; a file with
    /// errors prints `FILE: configuration has N error(s):` and every error with its key path on standard
    /// error, and exits 1; so does a file that cannot be read.
    @Test func checkConfigPrintsTheSummaryOrEveryErrorWithExitCodes0And1() async throws {
        try await Self.inDirectory { directory in
            let valid = directory + "/valid.toml"
            try Self.validTOML().write(toFile: valid, atomically: true, encoding: .utf8)
            let ok = try await Contract.runCLI(["check-config", "--config", valid])
            #expect(ok.exitCode == 0, "\(ok)")
            #expect(ok.stdout == Self.summary(), "\(ok)")
            #expect(ok.stderr.isEmpty, "\(ok)")

            let broken = directory + "/broken.toml"
            let brokenTOML = Self.validTOML()
                .replacingOccurrences(of: "[listen]\naddress", with: "[listen]\nadress")
                .replacingOccurrences(of: "type = \"jwks\"", with: "type = \"google\"\njwks_uri_typo = \"x\"")
                .replacingOccurrences(of: "audiences = [\"\(Claims.audience)\"]\n", with: "")
            try brokenTOML.write(toFile: broken, atomically: true, encoding: .utf8)
            let failed = try await Contract.runCLI(["check-config", "--config", broken])
            #expect(failed.exitCode == 1, "\(failed)")
            #expect(failed.stdout.isEmpty, "\(failed)")
            let lines = failed.stderr.split(separator: "\n").map(String.init)
            #expect(lines.first == "\(broken): configuration has \(lines.count - 1) error(s):", "\(failed.stderr)")
            #expect(lines.count == 4, "every error, each on its line: \(failed.stderr)")
            for expected in [
                "listen.adress: unknown key (did you mean \"address\"?)",
                "provider[0].audiences: required for type \"google\"",
                "provider[0].jwks_uri_typo: ",
            ] {
                #expect(lines.dropFirst().contains { $0.hasPrefix(expected) }, "\(expected) missing from \(failed.stderr)")
            }

            // [assertion]: the summary names the key; a key that cannot serve is an error at its key path.
            let key = directory + "/assertion.pem"
            try P256.Signing.PrivateKey().pemRepresentation.write(toFile: key, atomically: true, encoding: .utf8)
            let kid = try AssertionKey.load(file: key, needs: .privateKey).keyID
            let signing = directory + "/signing.toml"
            try (Self.validTOML() + "\n[assertion]\nissuer = \"https://gh\"\nsigning_key_file = \"\(key)\"\n")
                .write(toFile: signing, atomically: true, encoding: .utf8)
            let signs = try await Contract.runCLI(["check-config", "--config", signing])
            #expect(signs.exitCode == 0 && signs.stdout == Self.summary().dropLast() + ", assertion ES256 kid \(kid)\n", "\(signs)")
            let keyless = directory + "/keyless.toml"
            try (Self.validTOML() + "\n[assertion]\nissuer = \"https://gh\"\nsigning_key_file = \"\(directory)/none.pem\"\n")
                .write(toFile: keyless, atomically: true, encoding: .utf8)
            let noKey = try await Contract.runCLI(["check-config", "--config", keyless])
            #expect(noKey.exitCode == 1 && noKey.stderr.contains("assertion.signing_key_file: no such file: \(directory)/none.pem"), "\(noKey)")

            let missing = try await Contract.runCLI(["check-config", "--config", directory + "/absent.toml"])
            #expect(missing.exitCode == 1, "\(missing)")
            #expect(missing.stderr.contains(directory + "/absent.toml"), "\(missing)")
        }
    }

    /// `--config` if given, else `$GATEHOUSE_CONFIG`, else `gatehouse.toml` in the current directory.
    @Test func theConfigurationIsFoundThroughTheOptionTheEnvironmentOrTheCurrentDirectory() async throws {
        try await Self.inDirectory { directory in
            let fromOption = directory + "/option.toml"
            let fromEnvironment = directory + "/environment.toml"
            try Self.validTOML(upstreamPort: 3001).write(toFile: fromOption, atomically: true, encoding: .utf8)
            try Self.validTOML(upstreamPort: 3002).write(toFile: fromEnvironment, atomically: true, encoding: .utf8)
            try Self.validTOML(upstreamPort: 3003).write(toFile: directory + "/gatehouse.toml", atomically: true, encoding: .utf8)

            let environment = try await Contract.runCLI(["check-config"], environment: ["GATEHOUSE_CONFIG": fromEnvironment])
            #expect(environment.exitCode == 0, "\(environment)")
            #expect(environment.stdout == Self.summary(upstreamPort: 3002), "$GATEHOUSE_CONFIG is read without --config: \(environment)")

            let option = try await Contract.runCLI(
                ["check-config", "--config", fromOption], environment: ["GATEHOUSE_CONFIG": fromEnvironment], directory: directory)
            #expect(option.stdout == Self.summary(upstreamPort: 3001), "--config wins: \(option)")

            let both = try await Contract.runCLI(["check-config"], environment: ["GATEHOUSE_CONFIG": fromEnvironment], directory: directory)
            #expect(both.stdout == Self.summary(upstreamPort: 3002), "$GATEHOUSE_CONFIG before ./gatehouse.toml: \(both)")

            let current = try await Contract.runCLI(["check-config"], directory: directory)
            #expect(current.stdout == Self.summary(upstreamPort: 3003), "./gatehouse.toml last: \(current)")

            let unreadable = try await Contract.runCLI(["check-config"], environment: ["GATEHOUSE_CONFIG": directory + "/none.toml"], directory: directory)
            #expect(unreadable.exitCode == 1, "a $GATEHOUSE_CONFIG that cannot be read is an error, not a fallback: \(unreadable)")
            #expect(unreadable.stderr.contains(directory + "/none.toml"), "\(unreadable)")
        }
    }

    /// Usage errors (unknown option, missing value, unknown subcommand, an extra argument) exit 64;
    /// `--version` prints the version and exits 0.
    @Test func usageErrorsExit64() async throws {
        try await Self.inDirectory { directory in
            let valid = directory + "/valid.toml"
            try Self.validTOML().write(toFile: valid, atomically: true, encoding: .utf8)
            let usage: [[String]] = [
                ["check-config", "--bogus"], ["check-config", "--config"], ["check-config", "--config", valid, "extra"],
                ["verify-token", "--config"], ["verify-token", "--config", valid, "--nope", "token"], ["serve", "--config"],
                ["frobnicate"], ["demo", "--port", "not-a-number"],
            ]
            for arguments in usage {
                let result = try await Contract.runCLI(arguments)
                #expect(result.exitCode == 64, "gatehouse \(arguments.joined(separator: " ")): \(result)")
                #expect(result.stdout.isEmpty, "gatehouse \(arguments.joined(separator: " ")): \(result)")
            }
            let version = try await Contract.runCLI(["--version"])
            #expect(version.exitCode == 0)
            #expect(version.stdout == "\(GatehouseVersion.string) (\(GatehouseVersion.revision))\n", "\(version)")
            #expect(version.stdout.hasPrefix("0.1.0 ("), "\(version)")
        }
    }

    /// `verify-token`: a valid token prints `valid: provider NAME, subject SUB` and the claims as one compact
    /// JSON line, exit 0; an invalid one `invalid: REASON: MESSAGE (DETAIL)`, exit 1. The token comes from the
    /// argument or, when absent, standard input (whitespace trimmed); keys are fetched from the issuer.
    @Test func verifyTokenPrintsTheVerdictWithExitCodes0And1() async throws {
        let jwks = try await TestJWKSServer(jwks: TestSigner.jwks([.ec]))
        defer { Task { await jwks.close() } }
        try await Self.inDirectory { directory in
            let path = directory + "/gatehouse.toml"
            try Self.validTOML(jwksURL: jwks.jwksURL.absoluteString).write(toFile: path, atomically: true, encoding: .utf8)
            let claims = Claims.valid(subject: "ada-42")
            let token = TestSigner.ec.token(claims: claims)

            let valid = try await Contract.runCLI(["verify-token", "--config", path, token])
            #expect(valid.exitCode == 0, "\(valid)")
            let lines = valid.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            #expect(lines.count == 3 && lines[2].isEmpty, "two lines: \(valid.stdout)")
            #expect(lines.first == "valid: provider test, subject ada-42", "\(valid)")
            let printed = try #require(lines.count > 1 ? try? StrictJSON.parse(Array(lines[1].utf8)).objectValue : nil, "\(valid.stdout)")
            #expect(printed == claims, "\(lines[1])")
            #expect(jwks.fetchCount >= 1, "the keys came from the issuer")

            let fromInput = try await Contract.runCLI(["verify-token"], environment: ["GATEHOUSE_CONFIG": path], standardInput: "  \(token)\n\n")
            #expect(fromInput.exitCode == 0, "\(fromInput)")
            #expect(fromInput.stdout.hasPrefix("valid: provider test, subject ada-42\n"), "\(fromInput)")

            let expired = try await Contract.runCLI(["verify-token", "--config", path, TestSigner.ec.token(claims: Claims.valid(lifetime: -900))])
            #expect(expired.exitCode == 1, "\(expired)")
            #expect(expired.stdout.hasPrefix("invalid: expired: The access token expired. (exp "), "\(expired)")
            #expect(expired.stdout.hasSuffix("s in the past)\n"), "\(expired)")

            let forged = try await Contract.runCLI(["verify-token", "--config", path, String(token.dropLast(4)) + "AAAA"])
            #expect(forged.exitCode == 1, "\(forged)")
            #expect(forged.stdout.hasPrefix("invalid: bad_signature: The access token signature is invalid."), "\(forged)")

            let garbage = try await Contract.runCLI(["verify-token", "--config", path, "not-a-token"])
            #expect(garbage.exitCode == 1, "\(garbage)")
            #expect(garbage.stdout.hasPrefix("invalid: malformed_token: The access token is malformed."), "\(garbage)")

            let noConfiguration = try await Contract.runCLI(["verify-token", "--config", directory + "/absent.toml", token])
            #expect(noConfiguration.exitCode == 1, "\(noConfiguration)")
            #expect(!noConfiguration.stdout.hasPrefix("valid"), "\(noConfiguration)")
        }
    }

    /// `verify-token --dpop PROOF --method M --url U`: a DPoP-bound token is judged with its proof as `serve`
    /// would judge that request; without a proof it is a bearer token, which a bound token may not be.
    @Test func verifyTokenJudgesADPoPProofForTheNamedRequest() async throws {
        let jwks = try await TestJWKSServer(jwks: TestSigner.jwks([.ec]))
        defer { Task { await jwks.close() } }
        try await Self.inDirectory { directory in
            let path = directory + "/gatehouse.toml"
            try Self.validTOML(jwksURL: jwks.jwksURL.absoluteString).write(toFile: path, atomically: true, encoding: .utf8)
            let client = TestDPoPKey()
            let token = client.boundToken()
            let url = "https://api.example.com/v1/orders"
            let proof = client.proof("POST", url, token: token)

            let valid = try await Contract.runCLI(["verify-token", "--config", path, "--dpop", proof, "--method", "POST", "--url", url, token])
            #expect(valid.exitCode == 0 && valid.stdout.hasPrefix("valid: provider test, subject user-1\n"), "\(valid)")

            let otherURL = try await Contract.runCLI(
                ["verify-token", "--config", path, "--dpop", proof, "--method", "POST", "--url", "https://api.example.com/v1/payments", token])
            #expect(otherURL.exitCode == 1 && otherURL.stdout.hasPrefix("invalid: invalid_dpop_proof: The DPoP proof is invalid. (htu "), "\(otherURL)")

            let otherMethod = try await Contract.runCLI(["verify-token", "--config", path, "--dpop", proof, "--url", url, token])
            #expect(otherMethod.stdout.hasPrefix("invalid: invalid_dpop_proof: The DPoP proof is invalid. (htm "), "\(otherMethod)")

            let asBearer = try await Contract.runCLI(["verify-token", "--config", path, token])
            #expect(asBearer.exitCode == 1 && asBearer.stdout.hasPrefix("invalid: bearer_downgrade: "), "\(asBearer)")

            let noURL = try await Contract.runCLI(["verify-token", "--config", path, "--dpop", proof, token])
            #expect(noURL.exitCode == 64, "\(noURL)")
        }
    }

    /// `verify-token` with an opaque token asks the introspection provider, as `serve` would.
    @Test func verifyTokenIntrospectsAnOpaqueToken() async throws {
        let idp = try await TestIntrospectionIdP { token in
            .init(body: token == "opaque-live" ? TestIntrospectionIdP.active(["sub": .string("ada")]) : #"{"active":false}"#)
        }
        try await Self.inDirectory { directory in
            let path = directory + "/gatehouse.toml"
            let toml = "[listen]\naddress = \"127.0.0.1:18080\"\n[upstream]\nurl = \"http://127.0.0.1:3000\"\n"
                + "[[provider]]\nname = \"opaque\"\ntype = \"introspection\"\nintrospection_endpoint = \"\(idp.endpoint.absoluteString)\"\n"
                + "client_id = \"rs\"\nclient_secret = \"x\"\n"
            try toml.write(toFile: path, atomically: true, encoding: .utf8)
            let live = try await Contract.runCLI(["verify-token", "--config", path, "opaque-live"])
            #expect(live.exitCode == 0 && live.stdout.hasPrefix("valid: provider opaque, subject ada\n"), "\(live)")
            let dead = try await Contract.runCLI(["verify-token", "--config", path, "opaque-dead"])
            #expect(dead.exitCode == 1 && dead.stdout.hasPrefix("invalid: token_inactive: The access token is not active."), "\(dead)")
        }
        await idp.close()
    }
}

