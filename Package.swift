// swift-tools-version:6.1
import PackageDescription
import Foundation

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    // Release builds leave out the run-time exclusivity checks (the compile-time ones stay): 4-6 % of a forwarded
    // request's CPU went to them (bench/RESULTS.md, issue 57). Debug builds keep them, so the suite, the soak and the
    // fuzzers run with every access checked (docs/security.md P69). The release builds of the image and the bench
    // pass the same flag to the dependencies' code (`-Xswiftc -enforce-exclusivity=unchecked`).
    .unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release)),
]

/// `GATEHOUSE_REVISION` at build time (the image build and scripts/image.sh pass the commit), else "unknown"; only
/// `[0-9A-Za-z._-]` are kept. Not the checkout's own commit: SwiftPM keeps a manifest's evaluation until the manifest
/// or the environment changes, so a commit read here would go stale on the next commit and name the wrong one.
let buildRevision: String = {
    let given = Context.environment["GATEHOUSE_REVISION"] ?? ""
    let kept = given.filter { $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) }
    return kept.isEmpty ? "unknown" : String(kept.prefix(64))
}()

/// The products of the dependencies, by the names targets list them under.
extension Target.Dependency {
    static let nioHTTP1: Self = .product(name: "NIOHTTP1", package: "swift-nio")
    static let nioCore: Self = .product(name: "NIOCore", package: "swift-nio")
    static let nioHTTP2: Self = .product(name: "NIOHTTP2", package: "swift-nio-http2")
    static let crypto: Self = .product(name: "Crypto", package: "swift-crypto")
    static let cryptoExtras: Self = .product(name: "_CryptoExtras", package: "swift-crypto")
    static let tomlKit: Self = .product(name: "TOMLKit", package: "TOMLKit")
    static let nioConcurrencyHelpers: Self = .product(name: "NIOConcurrencyHelpers", package: "swift-nio")
    static let logging: Self = .product(name: "Logging", package: "swift-log")
    static let prometheus: Self = .product(name: "Prometheus", package: "swift-prometheus")
    static let atomics: Self = .product(name: "Atomics", package: "swift-atomics")
    static let asyncHTTPClient: Self = .product(name: "AsyncHTTPClient", package: "async-http-client")
    static let nioPosix: Self = .product(name: "NIOPosix", package: "swift-nio")
    static let nioSSL: Self = .product(name: "NIOSSL", package: "swift-nio-ssl")
    static let postgresNIO: Self = .product(name: "PostgresNIO", package: "postgres-nio")
    static let sqliteNIO: Self = .product(name: "SQLiteNIO", package: "sqlite-nio")
    static let nioTLS: Self = .product(name: "NIOTLS", package: "swift-nio")
    static let serviceLifecycle: Self = .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")
    static let unixSignals: Self = .product(name: "UnixSignals", package: "swift-service-lifecycle")
    static let argumentParser: Self = .product(name: "ArgumentParser", package: "swift-argument-parser")
    static let nioEmbedded: Self = .product(name: "NIOEmbedded", package: "swift-nio")
}

let package = Package(
    name: "gatehouse",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "gatehouse", targets: ["GatehouseCLI"]),
        // The library's API names types of the modules below it (`JSONValue`, `RuleExpression`): they come with it.
        .library(name: "Gatehouse", targets: ["Gatehouse", "GatehouseExtAuthz", "GatehouseProxy", "GatehouseExchange", "GatehouseAuth", "GatehouseTelemetry", "GatehousePolicy", "GatehouseTokens", "GatehouseConfig", "GatehouseHTTP", "GatehouseRules", "GatehouseVocabulary", "GatehouseSyntax"]),
    ],
    // Pinned up to the next minor version (a patch release may come in): what the image builds is what the
    // tests ran. Package.resolved stays out of git (the package copies of these machines make it unusable).
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", .upToNextMinor(from: "2.101.3")),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", .upToNextMinor(from: "2.37.6")),
        .package(url: "https://github.com/apple/swift-nio-http2.git", .upToNextMinor(from: "1.46.0")),
        .package(url: "https://github.com/apple/swift-atomics.git", .upToNextMinor(from: "1.3.0")),
        .package(url: "https://github.com/apple/swift-crypto.git", .upToNextMinor(from: "4.5.2")),
        .package(url: "https://github.com/apple/swift-log.git", .upToNextMinor(from: "1.16.2")),
        .package(url: "https://github.com/apple/swift-argument-parser.git", .upToNextMinor(from: "1.8.2")),
        .package(url: "https://github.com/swift-server/async-http-client.git", .upToNextMinor(from: "1.37.0")),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", .upToNextMinor(from: "2.4.1")),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", .upToNextMinor(from: "2.13.0")),
        .package(url: "https://github.com/LebJe/TOMLKit.git", .upToNextMinor(from: "0.6.0")),
        .package(url: "https://github.com/vapor/postgres-nio.git", .upToNextMinor(from: "1.33.2")),
        .package(url: "https://github.com/vapor/sqlite-nio.git", .upToNextMinor(from: "1.13.2")),
    ],
    targets: [
        // nghttp2 (Debian's libnghttp2-dev): the HTTP/2 codec.
        .systemLibrary(name: "CNGHTTP2", pkgConfig: "libnghttp2", providers: [.apt(["libnghttp2-dev"])]),
        // OpenSSL's libcrypto (Debian's libssl-dev) with what each call would set up made once: RSA keys prepared per
        // JWK, numbers and digest contexts per thread. What swift-crypto's API sets up and allocates on every call.
        .target(name: "CPreparedCrypto", linkerSettings: [.linkedLibrary("crypto")]),
        // The wire syntaxes Gatehouse reads and writes, below everything else: ASCII, HTTP field names and values,
        // JSON, base64url, form encoding, protobuf. No I/O. Its API is `public` and what the parsers call per byte
        // `@inlinable`: Swift 6.3 does not inline an `@inlinable package` declaration into another module (seen in
        // the disassembly; bench/RESULTS.md, issue 45), nor specialize a generic one.
        .target(
            name: "GatehouseSyntax",
            dependencies: [.nioHTTP1],
            swiftSettings: swiftSettings
        ),
        // The words every part shares, below configuration, tokens and telemetry: the JWS algorithms and a key's
        // thumbprint, why a request is refused (`AuthFailure`), what a request came to, a provider's key status, the
        // trace headers sent on, and a value now or later (`Eventual`). Values only.
        .target(
            name: "GatehouseVocabulary",
            dependencies: ["GatehouseSyntax", .nioCore, .crypto],
            swiftSettings: swiftSettings
        ),
        // Rules: Gatehouse's CEL (parser, checker, cost bound, evaluator) and its linear-time RE2 matcher. Pure
        // functions of their input.
        .target(
            name: "GatehouseRules",
            dependencies: ["GatehouseSyntax", .nioHTTP1],
            swiftSettings: swiftSettings
        ),
        // HTTP on the wire, without policy: the strict parsers (an HTTP/1.1 request, an upstream's HTTP/1.1
        // response, an HTTP/2 request's header block), response heads as they travel, the framing both ways
        // (HTTP/1.1 heads and chunks, HTTP/2 frame output, flow windows, write coalescing, the per-connection
        // timer), HTTP/2 stream events and the connection guard. No token, route or service. Public, with its
        // per-request generics `@inlinable` or given concrete overloads, for the reason GatehouseSyntax is.
        .target(
            name: "GatehouseHTTP",
            dependencies: [
                "GatehouseSyntax",
                "CNGHTTP2",
                .nioCore,
                .nioHTTP1,
            ],
            swiftSettings: swiftSettings
        ),
        // The configuration as data: the TOML file read and checked into settings values, and the small vocabularies
        // settings name (address ranges, route hosts, assertion keys, the presets' identity headers, the Entra preset's
        // issuers). No service and no network: every other part of Gatehouse reads it, it reads none of them.
        .target(
            name: "GatehouseConfig",
            dependencies: [
                "GatehouseSyntax",
                "GatehouseVocabulary",
                "GatehouseRules",
                .crypto,
                .cryptoExtras,
                .tomlKit,
            ],
            swiftSettings: swiftSettings
        ),
        // Tokens and keys as data: the compact JWS and its signature check, JWKs and key sets, the claim checks, the
        // bearer token and its scheme, DPoP proofs, who a verified token is. Pure functions of their input and
        // swift-crypto: no cache, fetch, clock or service (those are the verifier's, above).
        .target(
            name: "GatehouseTokens",
            dependencies: [
                "GatehouseSyntax",
                "GatehouseVocabulary",
                "CPreparedCrypto",
                .nioCore,
                .nioHTTP1,
                .nioConcurrencyHelpers,
                .crypto,
                .cryptoExtras,
            ],
            swiftSettings: swiftSettings
        ),
        // What a request is judged against and judged to be, as values: routes and their table, the path
        // normalization they match, `[[resource]]`s, the certificate a trusted proxy forwards, an MCP session's owner,
        // and the admission or refusal of a request. No cache, fetch, clock or service: the gatekeeper (GatehouseAuth)
        // decides with them, the request core reads them.
        .target(
            name: "GatehousePolicy",
            dependencies: [
                "GatehouseSyntax",
                "GatehouseVocabulary",
                "GatehouseRules",
                "GatehouseConfig",
                "GatehouseTokens",
                .nioHTTP1,
                .crypto,
            ],
            swiftSettings: swiftSettings
        ),
        // What operators and the security team read: Prometheus metrics, the failure log's JSON lines, the operational
        // log's form, a request's OTLP spans and their exporter, the version. Fed values by the library (what a request
        // came to, key and store states); it calls nothing above it.
        .target(
            name: "GatehouseTelemetry",
            dependencies: [
                "GatehouseSyntax",
                "GatehouseVocabulary",
                "GatehouseConfig",
                "CGatehouseBuildInfo",
                .nioCore,
                .nioConcurrencyHelpers,
                .crypto,
                .logging,
                .prometheus,
                .nioHTTP1,
                .atomics,
                .asyncHTTPClient,
            ],
            swiftSettings: swiftSettings
        ),
        // Who the caller is and whether they may pass: the token verifier and its caches, the key store and the JWKS
        // fetcher, the provider presets and userinfo, token introspection and TokenReview, revocation and its
        // stores, DPoP and certificate binding, routes and the gatekeeper's verdict. It reads tokens, settings and
        // telemetry below it and knows nothing of a connection, a door or an upstream.
        .target(
            name: "GatehouseAuth",
            dependencies: [
                "GatehouseSyntax",
                "GatehouseVocabulary",
                "GatehouseRules",
                "GatehousePolicy",
                "GatehouseConfig",
                "GatehouseTokens",
                "GatehouseTelemetry",
                .nioCore,
                .nioPosix,
                .nioHTTP1,
                .nioConcurrencyHelpers,
                .nioSSL,
                .atomics,
                .crypto,
                .cryptoExtras,
                .logging,
                .prometheus,
                .asyncHTTPClient,
                .postgresNIO,
                .sqliteNIO,
            ],
            swiftSettings: swiftSettings
        ),
        // The request core: the exchange state machine every door drives (time, settings and verdicts in as plain
        // values, records and actions out), what it reads a request into, its local answers (401/403/503 in RFC
        // 6750 form, gRPC refusals, own endpoints), and the head it sends upstream (hygiene, identity headers, the
        // signed assertion). No event loop, channel, socket or service: SwiftNIO's value types only.
        .target(
            name: "GatehouseExchange",
            dependencies: [
                "GatehouseSyntax",
                "GatehouseVocabulary",
                "GatehouseRules",
                "GatehouseHTTP",
                "GatehouseConfig",
                "GatehouseTokens",
                "GatehousePolicy",
                .nioCore,
                .nioHTTP1,
                .atomics,
                .crypto,
            ],
            swiftSettings: swiftSettings
        ),
        // The data plane: the listeners (bind, protocol selection, drain), both client doors (HTTP/1.1 with its
        // WebSocket tunnel, HTTP/2 frame by frame), the drivers that execute the core's actions, the upstream legs and
        // their pools, and the services a connection shares (swapped whole on reload).
        .target(
            name: "GatehouseProxy",
            dependencies: [
                "GatehouseSyntax",
                "GatehouseVocabulary",
                "GatehousePolicy",
                "GatehouseHTTP",
                "GatehouseConfig",
                "GatehouseTokens",
                "GatehouseTelemetry",
                "GatehouseAuth",
                "GatehouseExchange",
                .nioCore,
                .nioPosix,
                .nioHTTP1,
                .nioConcurrencyHelpers,
                .nioSSL,
                .nioTLS,
                .atomics,
                .crypto,
                .logging,
                .prometheus,
            ],
            swiftSettings: swiftSettings
        ),
        // Envoy's ext_authz: the gRPC Check and the HTTP protocol, on their own port, a third way into the same core.
        .target(
            name: "GatehouseExtAuthz",
            dependencies: [
                "GatehouseSyntax",
                "GatehouseVocabulary",
                "GatehousePolicy",
                "GatehouseHTTP",
                "GatehouseTokens",
                "GatehouseTelemetry",
                "GatehouseAuth",
                "GatehouseExchange",
                "GatehouseProxy",
                .nioCore,
                .nioPosix,
                .nioHTTP1,
                .nioSSL,
                .prometheus,
            ],
            swiftSettings: swiftSettings
        ),
        // The process: the service that builds and wires the data plane, ext_authz and the admin port from a
        // configuration, reloads it, and runs it under swift-service-lifecycle; the demo; the proxy snippets.
        .target(
            name: "Gatehouse",
            dependencies: [
                "GatehouseSyntax",
                "GatehouseVocabulary",
                "GatehousePolicy",
                "GatehouseRules",
                "GatehouseHTTP",
                "GatehouseConfig",
                "GatehouseTokens",
                "GatehouseTelemetry",
                "GatehouseAuth",
                "GatehouseExchange",
                "GatehouseProxy",
                "GatehouseExtAuthz",
                .nioCore,
                .nioPosix,
                .nioHTTP1,
                .nioConcurrencyHelpers,
                .nioSSL,
                .atomics,
                .crypto,
                .cryptoExtras,
                .logging,
                .asyncHTTPClient,
                .prometheus,
                .serviceLifecycle,
                .unixSignals,
                .tomlKit,
                .postgresNIO,
                .sqliteNIO,
            ],
            swiftSettings: swiftSettings
        ),
        // `gatehouse demo` and `gatehouse bench-verify`: a demo issuer and upstream, and the micro-benchmarks of
        // verification, DPoP, introspection and rules. The command line's alone: not in the library product.
        .target(
            name: "GatehouseDemo",
            dependencies: [
                "GatehouseSyntax",
                "GatehouseHTTP",
                "GatehouseVocabulary",
                "GatehouseRules",
                "GatehouseConfig",
                "GatehouseTokens",
                "GatehousePolicy",
                "GatehouseAuth",
                "GatehouseProxy",
                "GatehouseExtAuthz",
                .nioCore,
                .nioPosix,
                .nioHTTP1,
                .crypto,
                .cryptoExtras,
            ],
            swiftSettings: swiftSettings
        ),
        // The commit a binary is built from (`gatehouse --version`, `gatehouse_build_info`), as a C string: the only
        // kind of target a manifest can hand a value to.
        .target(name: "CGatehouseBuildInfo", cSettings: [.define("GATEHOUSE_REVISION", to: "\"\(buildRevision)\"")]),
        .executableTarget(
            name: "GatehouseCLI",
            dependencies: [
                "Gatehouse",
                "GatehouseDemo",
                "GatehouseExchange",
                "GatehouseAuth",
                "GatehouseConfig",
                "GatehouseTelemetry",
                "GatehouseTokens",
                "GatehouseVocabulary",
                "GatehouseSyntax",
                .argumentParser,
                .logging,
                .nioPosix,
                .serviceLifecycle,
                .unixSignals,
            ],
            swiftSettings: swiftSettings
        ),
        // The data plane's own tests (the strict HTTP/1.1 parsers with their smuggling corpus and the differential
        // against llhttp, the upstream response parser, the back-channel logout handler) and the module graph's.
        .testTarget(
            name: "GatehouseProxyTests",
            dependencies: [
                "Gatehouse",
                "GatehouseTestSupport",
                "GatehouseTokenFixtures",
                "GatehouseExtAuthz",
                "GatehouseProxy",
                "GatehouseExchange",
                "GatehouseAuth",
                "GatehouseConfig",
                "GatehouseTokens",
                "GatehouseTelemetry",
                "GatehouseSyntax",
                "GatehouseVocabulary",
                "GatehousePolicy",
                "GatehouseRules",
                "GatehouseHTTP",
                .nioCore,
                .nioEmbedded,
                .nioHTTP1,
                .nioConcurrencyHelpers,
                .crypto,
                .cryptoExtras,
            ],
            swiftSettings: swiftSettings
        ),
        // Tokens and configuration (Config, Tokens): the compact JWS and the signature checks (Wycheproof's vectors and
        // the prepared RSA key's), JWKs, claims, DPoP's syntax, the settings read from TOML. Nothing above them.
        .testTarget(
            name: "GatehouseTokensTests",
            dependencies: [
                "GatehouseSyntax",
                "GatehouseVocabulary",
                "GatehouseRules",
                "GatehouseConfig",
                "GatehouseTokens",
                "GatehouseTokenFixtures",
                .nioCore,
                .nioHTTP1,
                .crypto,
                .cryptoExtras,
                .tomlKit,
            ],
            resources: [.copy("Resources/wycheproof"), .copy("Resources/rsa")],
            swiftSettings: swiftSettings
        ),
        // Who the caller is and whether they may pass (Policy, Telemetry, Auth): routes, revocation, the key store's
        // evidence, the caches, DPoP's replay state, the failure log, metrics and traces. No request core or door.
        .testTarget(
            name: "GatehouseAuthTests",
            dependencies: [
                "GatehouseSyntax",
                "GatehouseVocabulary",
                "GatehouseRules",
                "GatehouseConfig",
                "GatehouseTokens",
                "GatehouseTokenFixtures",
                "GatehousePolicy",
                "GatehouseTelemetry",
                "GatehouseAuth",
                "GatehouseTestSupport",
                .nioCore,
                .nioEmbedded,
                .nioHTTP1,
                .nioConcurrencyHelpers,
                .crypto,
                .cryptoExtras,
            ],
            swiftSettings: swiftSettings
        ),
        // The request core on `CoreTestbed`, without a socket: every `Action` and watch outcome, the upstream head's
        // hygiene and identity headers, the signed assertion, MCP message intake. No Auth, Telemetry or door.
        .testTarget(
            name: "GatehouseExchangeTests",
            dependencies: [
                "GatehouseSyntax",
                "GatehouseVocabulary",
                "GatehouseRules",
                "GatehouseHTTP",
                "GatehouseConfig",
                "GatehouseTokens",
                "GatehouseTokenFixtures",
                "GatehousePolicy",
                "GatehouseExchange",
                .nioCore,
                .nioEmbedded,
                .nioHTTP1,
                .nioConcurrencyHelpers,
                .crypto,
                .cryptoExtras,
            ],
            swiftSettings: swiftSettings
        ),
        // Token, key and configuration builders the Tokens, Auth, core and data-plane tests share.
        .target(
            name: "GatehouseTokenFixtures",
            dependencies: ["GatehouseSyntax", "GatehouseVocabulary", "GatehouseConfig", "GatehouseTokens", .crypto, .cryptoExtras],
            path: "Tests/GatehouseTokenFixtures",
            swiftSettings: swiftSettings
        ),
        // What tests of several targets share (a seeded random generator).
        .target(name: "GatehouseTestSupport", path: "Tests/GatehouseTestSupport"),
        // The rules' own tests (CEL and the RE2 matcher, with the differential against two CEL implementations).
        .testTarget(
            name: "GatehouseRulesTests",
            dependencies: ["GatehouseSyntax", "GatehouseRules", "GatehouseTestSupport", .nioHTTP1],
            resources: [.copy("Resources/cel")],
            swiftSettings: swiftSettings
        ),
        // The wire layer's own tests (Syntax, Vocabulary, HTTP): they reach nothing above it.
        .testTarget(
            name: "GatehouseWireTests",
            dependencies: [
                "GatehouseSyntax",
                "GatehouseVocabulary",
                "GatehouseHTTP",
                "GatehouseTestSupport",
                .nioCore,
                .nioEmbedded,
                .nioHTTP1,
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "GatehouseEndToEndTests",
            dependencies: [
                "Gatehouse",
                "GatehouseExtAuthz",
                "GatehouseProxy",
                "GatehouseExchange",
                "GatehouseAuth",
                "GatehouseConfig",
                "GatehouseTokens",
                "GatehouseTelemetry",
                "GatehouseSyntax",
                "GatehouseVocabulary",
                "GatehousePolicy",
                "GatehouseRules",
                "GatehouseHTTP",
                .asyncHTTPClient,
                .nioHTTP2,
                .nioCore,
                .nioPosix,
                .nioHTTP1,
                .nioConcurrencyHelpers,
                .nioSSL,
                .crypto,
                .cryptoExtras,
                .logging,
            ],
            resources: [.copy("Resources/assertion"), .copy("Resources/dpop"), .copy("Resources/extauthz"), .copy("Resources/grpc"), .copy("Resources/h2"), .copy("Resources/introspection"), .copy("Resources/logout"), .copy("Resources/mcp"), .copy("Resources/tracing")],
            swiftSettings: swiftSettings
        ),
    ]
)

// The fuzz targets (Fuzz/README.md): each target's checks live in Fuzz/<target>/<target>.swift. `swift test`
// replays every seed and saved regression through them (FuzzReplayTests), so they compile and their
// invariants run on every CI. With GATEHOUSE_FUZZ set (scripts/fuzz.sh) they become a library instead, linked
// into one libFuzzer executable per target (Fuzz/Entry/<target>, `--sanitize=fuzzer`); plain builds never see those.
let fuzzTargets = ["FuzzHTTP1RequestParser", "FuzzUpstreamResponseParser", "FuzzCompactJWS", "FuzzStrictJSON", "FuzzCheckRequest", "FuzzCELExpression", "FuzzHTTP2Codec", "FuzzClaimsReader"]
// A target's regressions folder exists once libFuzzer has found something for it (git keeps no empty folder):
// excluded only when present, so SwiftPM has no missing path to warn about.
let fuzzNotSources = fuzzTargets.flatMap { target in
    ["\(target)/seeds"] + (FileManager.default.fileExists(atPath: "\(Context.packageDirectory)/Fuzz/\(target)/regressions") ? ["\(target)/regressions"] : [])
} + ["dicts", "README.md", "Entry", "FuzzSupport"]
let fuzzDependencies: [Target.Dependency] = [
    "Gatehouse",
    "GatehouseExtAuthz",
    "GatehouseProxy",
    "GatehouseExchange",
    "GatehouseAuth",
    "GatehouseSyntax",
    "GatehouseVocabulary",
    "GatehousePolicy",
    "GatehouseRules",
    "GatehouseHTTP",
    "GatehouseConfig",
    "GatehouseTokens",
    "GatehouseTelemetry",
    "FuzzSupport",
    .nioCore,
    .nioEmbedded,
    .nioHTTP1,
]
package.targets.append(.target(name: "FuzzSupport", path: "Fuzz/FuzzSupport"))
if Context.environment["GATEHOUSE_FUZZ"] != nil {
    package.targets.append(.target(name: "FuzzTargets", dependencies: fuzzDependencies, path: "Fuzz", exclude: fuzzNotSources + ["Replay"]))
    for name in fuzzTargets {
        package.targets.append(.executableTarget(name: name, dependencies: ["FuzzTargets"], path: "Fuzz/Entry/\(name)"))
        package.products.append(.executable(name: name, targets: [name]))
    }
} else {
    package.targets.append(.testTarget(name: "FuzzReplayTests", dependencies: fuzzDependencies, path: "Fuzz", exclude: fuzzNotSources))
}
