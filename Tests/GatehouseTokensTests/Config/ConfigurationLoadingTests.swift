import Foundation
import Testing
import GatehouseTokenFixtures
@testable import GatehouseConfig
import GatehouseRules

struct ConfigurationLoadingTests {
    @Test func minimalConfigurationGetsEveryDocumentedDefault() throws {
        let configuration = try Configuration.parse(toml: ConfigFixture.minimal())
        #expect(configuration.listen == ListenSettings())
        #expect(configuration.listen.address.description == "0.0.0.0:8080")
        #expect(configuration.listen.drainTimeout == .seconds(10))
        #expect(configuration.listen.maxHeaderBytes == 16384)
        #expect(configuration.listen.tokenMaxBytes == 8192)
        #expect(configuration.listen.tlsCertificatePath == nil)
        #expect(configuration.listen.http2)
        #expect(configuration.upstream.protocolVersion == .http1)
        #expect(configuration.admin.address.description == "127.0.0.1:9901")
        #expect(configuration.upstream.url.absoluteString == "http://127.0.0.1:3000")
        #expect(configuration.upstream.connectTimeout == .seconds(2))
        #expect(configuration.upstream.timeout == .seconds(30))
        #expect(configuration.upstream.forwardToken)
        #expect(configuration.failureLog == FailureLogSettings())
        #expect(configuration.log.format == .text && configuration.log.level == .info)
        #expect(configuration.verification == VerificationSettings())
        #expect(configuration.jwks == JWKSSettings())
        #expect(configuration.headers.mappings == HeaderSettings.defaultMappings)
        #expect(configuration.headers.forwardClaimsJSON)
        #expect(configuration.routes.isEmpty)
        #expect(configuration.revocation == nil)
        let provider = try #require(configuration.providers.first)
        #expect(provider.name == "local" && provider.type == .jwks)
        #expect(provider.issuer == "https://issuer.example.test")
        #expect(provider.jwksURI?.absoluteString == "http://127.0.0.1:8999/jwks.json")
        #expect(provider.audiences == ["orders-api"])
        #expect(provider.algorithms == nil)
        #expect(provider.headers.isEmpty)
    }

    @Test func everyServerSettingIsRead() throws {
        let configuration = try Configuration.parse(toml: ConfigFixture.minimal("""
            [listen]
            address = "[::1]:8443"
            tls_cert = "/etc/tls.crt"
            tls_key = "/etc/tls.key"
            drain_timeout = "3s"
            max_header_bytes = 1024
            token_max_bytes = 1048576
            http2 = false
            [admin]
            address = "localhost:0"
            [failure_log]
            path = "/var/log/gatehouse/failures.log"
            max_lines_per_second = 1
            pseudonymize = true
            pseudonymize_key_file = "/run/secrets/key"
            [log]
            format = "json"
            level = "critical"
            [verification]
            leeway = "0s"
            cache_size = 0
            token_cookie = "id_token"
            token_header = "X-Api-Token"
            bypass_cors_preflight = true
            [jwks]
            min_refresh = "1m"
            max_refresh = "1m"
            unknown_kid_cooldown = "0s"
            max_stale = "1h"
            fetch_timeout = "500ms"
            cache_dir = "/var/lib/gatehouse/jwks"
            """))
        #expect(configuration.listen.address == SocketAddressSetting(host: "::1", port: 8443))
        #expect(configuration.listen.address.description == "[::1]:8443")
        #expect(configuration.listen.tlsCertificatePath == "/etc/tls.crt" && configuration.listen.tlsKeyPath == "/etc/tls.key")
        #expect(configuration.listen.drainTimeout == .seconds(3))
        #expect(configuration.listen.maxHeaderBytes == 1024 && configuration.listen.tokenMaxBytes == 1_048_576)
        #expect(!configuration.listen.http2)
        #expect(configuration.admin.address == SocketAddressSetting(host: "localhost", port: 0))
        #expect(configuration.failureLog.path == "/var/log/gatehouse/failures.log")
        #expect(configuration.failureLog.maxLinesPerSecond == 1)
        #expect(configuration.failureLog.pseudonymize && configuration.failureLog.pseudonymizeKeyFile == "/run/secrets/key")
        #expect(configuration.log.format == .json && configuration.log.level == .critical)
        #expect(configuration.verification.leeway == .zero && configuration.verification.cacheSize == 0)
        #expect(configuration.verification.tokenCookie == "id_token" && configuration.verification.tokenHeader == "X-Api-Token")
        #expect(configuration.verification.bypassCORSPreflight)
        #expect(configuration.jwks.minRefresh == .seconds(60) && configuration.jwks.maxRefresh == .seconds(60))
        #expect(configuration.jwks.unknownKidCooldown == .zero && configuration.jwks.maxStale == .seconds(3600))
        #expect(configuration.jwks.fetchTimeout == .milliseconds(500))
        #expect(configuration.jwks.cacheDirectory == "/var/lib/gatehouse/jwks")
    }

    @Test func upstreamSettingsAreRead() throws {
        let configuration = try Configuration.parse(toml: """
            [upstream]
            url = "https://api.internal:8443/base"
            connect_timeout = "250ms"
            timeout = "2m"
            forward_token = false
            protocol = "http2"
            """ + "\n" + ConfigFixture.jwksProvider)
        #expect(configuration.upstream.url.absoluteString == "https://api.internal:8443/base")
        #expect(configuration.upstream.connectTimeout == .milliseconds(250))
        #expect(configuration.upstream.timeout == .seconds(120))
        #expect(!configuration.upstream.forwardToken)
        #expect(configuration.upstream.protocolVersion == .http2)
    }

    @Test func upstreamProtocolAndHTTP2SwitchRefuseWrongValues() {
        let issues = ConfigFixture.issues("""
            [listen]
            http2 = "yes"
            [upstream]
            url = "http://127.0.0.1:3000"
            protocol = "h2c"
            """ + "\n" + ConfigFixture.jwksProvider).map(\.description)
        #expect(issues.contains { $0.hasPrefix("listen.http2:") }, "\(issues)")
        #expect(issues.contains { $0.hasPrefix("upstream.protocol:") && $0.contains("http1") && $0.contains("http2") }, "\(issues)")
    }

    /// R09: sign-outs are kept `maxLeeway` past a token's `exp`, so no larger leeway may be configured.
    @Test func leewayIsAtMostTenMinutes() throws {
        let issues = ConfigFixture.issues(ConfigFixture.minimal("[verification]\nleeway = \"11m\"\n")).map(\.description)
        #expect(issues.count == 1 && issues[0].hasPrefix("verification.leeway:") && issues[0].contains("600s"), "\(issues)")
        let accepted = try Configuration.parse(toml: ConfigFixture.minimal("[verification]\nleeway = \"10m\"\n"))
        #expect(accepted.verification.leeway == .seconds(600))
    }

    @Test func headersTableReplacesTheDefaultsSortedByName() throws {
        let configuration = try Configuration.parse(toml: ConfigFixture.minimal("""
            [headers]
            "X-User" = "sub"
            "X-Country" = "address.country"
            forward_claims_json = false
            """))
        #expect(configuration.headers.mappings == [
            HeaderMapping(name: "X-Country", claimPath: "address.country"),
            HeaderMapping(name: "X-User", claimPath: "sub"),
        ])
        #expect(!configuration.headers.forwardClaimsJSON)
    }

    @Test func emptyHeadersTableMapsNothing() throws {
        let configuration = try Configuration.parse(toml: ConfigFixture.minimal("[headers]\n"))
        #expect(configuration.headers.mappings.isEmpty)
        #expect(configuration.headers.forwardClaimsJSON)
    }

    @Test func providerSpecificKeysAreReadForEachType() throws {
        let configuration = try Configuration.parse(toml: ConfigFixture.upstream + """
            [[provider]]
            name = "google"
            type = "google"
            audiences = ["a.apps.googleusercontent.com", "b"]
            hosted_domains = ["example.com"]
            algorithms = ["RS256", "ES256", "RS256"]
            revocation_endpoint = "https://oauth2.googleapis.com/revoke"
            [provider.headers]
            "X-Auth-Domain" = "hd"
            [[provider]]
            name = "fire_base-1"
            type = "firebase"
            project_id = "my-project"
            jwks_uri = "http://127.0.0.1:9099/keys"
            [[provider]]
            name = "cognito"
            type = "cognito"
            region = "eu-west-1"
            user_pool_id = "eu-west-1_AbCdEf123"
            client_ids = ["4h2k1example"]
            token_use = "any"
            userinfo = true
            domain = "https://auth.example.com"
            [[provider]]
            name = "corp"
            type = "oidc"
            issuer = "http://localhost:8080/realms/test"
            audiences = ["api://orders"]
            """)
        let providers = configuration.providers
        #expect(providers.map(\.name) == ["google", "fire_base-1", "cognito", "corp"])
        #expect(providers[0].audiences == ["a.apps.googleusercontent.com", "b"])
        #expect(providers[0].hostedDomains == ["example.com"])
        #expect(providers[0].algorithms == ["RS256", "ES256"])
        #expect(providers[0].revocationEndpoint?.absoluteString == "https://oauth2.googleapis.com/revoke")
        #expect(providers[0].headers == [HeaderMapping(name: "X-Auth-Domain", claimPath: "hd")])
        #expect(providers[1].type == .firebase && providers[1].projectID == "my-project")
        #expect(providers[1].jwksURI?.absoluteString == "http://127.0.0.1:9099/keys")
        #expect(providers[2].region == "eu-west-1" && providers[2].userPoolID == "eu-west-1_AbCdEf123")
        #expect(providers[2].clientIDs == ["4h2k1example"] && providers[2].tokenUse == .any)
        #expect(providers[2].userinfo && providers[2].domain?.absoluteString == "https://auth.example.com")
        #expect(providers[3].issuer == "http://localhost:8080/realms/test")
    }

    @Test func cognitoTokenUseDefaultsToAccess() throws {
        let configuration = try Configuration.parse(toml: ConfigFixture.upstream + """
            [[provider]]
            name = "cognito"
            type = "cognito"
            region = "us-east-1"
            user_pool_id = "us-east-1_X"
            client_ids = ["c"]
            """)
        #expect(configuration.providers[0].tokenUse == .access)
        #expect(!configuration.providers[0].userinfo)
    }

    @Test func routesKeepFileOrderAndUpperCaseMethods() throws {
        let configuration = try Configuration.parse(toml: ConfigFixture.minimal("""
            [[route]]
            path = "/exact"
            methods = ["get", "Post", "GET"]
            auth = "optional"
            [[route]]
            prefix = "/v1/"
            providers = ["local"]
            scopes = ["sync:write", "read"]
            groups = ["admins"]
            email_domains = ["example.com"]
            require_email_verified = true
            [[route]]
            prefix = "/"
            auth = "public"
            """))
        let routes = configuration.routes
        #expect(routes.count == 3)
        #expect(routes[0].match == .path("/exact") && routes[0].methods == ["GET", "POST"] && routes[0].auth == .optional)
        #expect(routes[1].match == .prefix("/v1/") && routes[1].auth == .required)
        #expect(routes[1].providers == ["local"] && routes[1].scopes == ["sync:write", "read"])
        #expect(routes[1].groups == ["admins"] && routes[1].emailDomains == ["example.com"] && routes[1].requireEmailVerified)
        #expect(routes[2].match == .prefix("/") && routes[2].auth == .public && routes[2].methods.isEmpty)
    }

    @Test(arguments: [
        ("store = \"postgres://gatehouse@db/gatehouse\"\npassword = \"hunter2\"", SecretSetting?.some(.inline("hunter2")),
         "postgres://gatehouse@db/gatehouse"),
        ("store = \"postgres://db/g\"\npassword_file = \"/run/secrets/pg\"", .file("/run/secrets/pg"), "postgres://db/g"),
        ("store = \"postgresql://db/g\"\npassword = \"env:PG_PASSWORD\"", .environment("PG_PASSWORD"), "postgresql://db/g"),
        ("store = \"sqlite:/var/lib/gatehouse/revoked.db\"", nil, "sqlite:/var/lib/gatehouse/revoked.db"),
        ("", nil, "memory"),
    ])
    func revocationStoreAndSecretAreRead(body: String, secret: SecretSetting?, store: String) throws {
        let toml = ConfigFixture.minimal("[revocation]\n" + body + "\n")
        let configuration = try Configuration.parse(toml: toml)
        #expect(configuration.revocation?.store == store)
        #expect(configuration.revocation?.password == secret)
    }

    @Test func summaryNamesProvidersRoutesUpstreamAndListener() throws {
        let configuration = try Configuration.parse(toml: ConfigFixture.upstream + """
            [[provider]]
            name = "google"
            type = "google"
            audiences = ["x"]
            """ + "\n" + ConfigFixture.jwksProvider + """
            [[route]]
            prefix = "/a"
            [[route]]
            prefix = "/b"
            [[route]]
            path = "/c"
            """)
        #expect(configuration.summary
            == "config OK: 2 providers (google, local), 3 routes, upstream http://127.0.0.1:3000, listen 0.0.0.0:8080, HTTP/2")
        let single = try Configuration.parse(toml: ConfigFixture.minimal("[[route]]\nprefix = \"/\"\n[listen]\naddress = \"[::]:80\"\n"))
        #expect(single.summary == "config OK: 1 provider (local), 1 route, upstream http://127.0.0.1:3000, listen [::]:80, HTTP/2")
    }

    @Test func exampleFileParsesWithZeroIssues() throws {
        let configuration: Configuration
        do {
            configuration = try Configuration.load(fromFile: ConfigFixture.examplePath)
        } catch {
            Issue.record("config.example.toml: \(error)")
            return
        }
        #expect(configuration.providers.map(\.type) == [.google, .apple, .firebase, .cognito, .oidc, .jwks])
        #expect(configuration.providers.map(\.name) == ["google", "apple", "firebase", "cognito", "corp", "local"])
        #expect(configuration.routes.map(\.match) == [.prefix("/health"), .prefix("/admin"), .prefix("/v1/events"), .prefix("/v1/sync")])
        #expect(configuration.routes.map(\.auth) == [.public, .required, .optional, .required])
        #expect(configuration.routes[1].hosts == ["admin.example.com", "*.internal.example.com"])
        #expect(configuration.routes[1].when?.source.hasPrefix("claims.email_verified == true") == true)
        #expect(configuration.routes[3].providers == ["google", "apple"])
        // The example spells out the defaults, so apart from its example providers and routes it is the default.
        var defaults = configuration
        defaults.listen = ListenSettings()
        defaults.failureLog = FailureLogSettings()
        #expect(configuration.listen == defaults.listen && configuration.failureLog == defaults.failureLog)
        #expect(configuration.jwks == JWKSSettings() && configuration.verification == VerificationSettings())
        #expect(Set(configuration.headers.mappings.map(\.name)) == Set(HeaderSettings.defaultMappings.map(\.name)))
    }

    @Test func exampleFileMentionsEveryKey() throws {
        let text = try String(contentsOfFile: ConfigFixture.examplePath, encoding: .utf8)
        let keys = [
            "address", "tls_cert", "tls_key", "drain_timeout", "idle_timeout", "max_header_bytes", "token_max_bytes", "url", "connect_timeout",
            "timeout", "forward_token", "ca_file", "protocol", "http2", "path", "max_lines_per_second", "pseudonymize", "pseudonymize_key_file", "format", "level",
            "leeway", "cache_size", "token_cookie", "token_header", "bypass_cors_preflight", "min_refresh", "max_refresh",
            "unknown_kid_cooldown", "max_stale", "fetch_timeout", "cache_dir", "forward_claims_json", "name", "type", "issuer",
            "jwks_uri", "audiences", "algorithms", "hosted_domains", "revocation_endpoint", "project_id", "region", "user_pool_id",
            "client_ids", "token_use", "userinfo", "domain", "prefix", "methods", "auth", "providers", "scopes", "groups",
            "email_domains", "require_email_verified", "store", "password", "password_file",
            "[listen]", "[admin]", "[upstream]", "[failure_log]", "[log]", "[verification]", "[jwks]", "[headers]",
            "[[provider]]", "[provider.headers]", "[[route]]", "[revocation]",
            "[assertion]", "audience", "header", "lifetime", "signing_key_file", "published_key_files", "claims",
            "[[resource]]", "authorization_servers", "scopes_supported", "mcp", "allowed_origins", "max_message_bytes", "session_ttl",
            "mcp_tools", "mcp_methods",
            "[tracing]", "endpoint", "sampling_ratio", "service_name", "export_interval", "export_timeout", "max_queue_size", "max_batch_size",
        ]
        for key in keys {
            #expect(text.contains(key.hasPrefix("[") ? key : "\(key) ="), "config.example.toml does not document \(key)")
        }
    }

    @Test func missingFileIsOneIssueNamingTheFile() {
        let path = "/nonexistent/gatehouse-\(UInt64.random(in: 0...UInt64.max)).toml"
        #expect {
            _ = try Configuration.load(fromFile: path)
        } throws: { error in
            guard let error = error as? ConfigurationError, error.issues.count == 1 else { return false }
            return error.issues[0].keyPath == path && error.issues[0].message.contains("cannot read")
        }
    }

    @Test func loadReadsAFile() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-\(UUID().uuidString).toml").path
        try ConfigFixture.minimal().write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let configuration = try Configuration.load(fromFile: path)
        #expect(configuration.providers.map(\.name) == ["local"])
    }

    @Test func nonUTF8FileIsRejected() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-\(UUID().uuidString).toml").path
        try Data([0x61, 0x20, 0x3D, 0x20, 0x22, 0xFF, 0xFE, 0x22]).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(throws: ConfigurationError(issues: [ConfigurationIssue(keyPath: path, message: "the configuration file is not valid UTF-8")])) {
            try Configuration.load(fromFile: path)
        }
    }

    @Test func syntaxErrorIsOneIssueWithLineAndColumn() {
        let issues = ConfigFixture.issues("[upstream]\nurl = \"http://x\"\n\n  bad = = 2\n")
        #expect(issues.count == 1)
        #expect(issues.first?.keyPath == "")
        #expect(issues.first?.message.hasPrefix("TOML syntax error at line 4, column") == true)
    }

    @Test func duplicateKeyIsASyntaxError() {
        let issues = ConfigFixture.issues(ConfigFixture.minimal("[listen]\naddress = \"0.0.0.0:1\"\naddress = \"0.0.0.0:2\"\n"))
        #expect(issues.count == 1)
        #expect(issues.first?.message.hasPrefix("TOML syntax error at line 11, column") == true, "\(issues)")
    }

    @Test func nulEscapeIsRejectedRatherThanTruncated() {
        let issues = ConfigFixture.issues(ConfigFixture.minimal("[headers]\n\"X-User\" = \"sub\\u0000x\"\n"))
        #expect(issues == [ConfigurationIssue(keyPath: "", message: "line 10: strings must not contain NUL (\\u0000)")])
    }

    @Test func issueAndErrorDescriptions() {
        let first = ConfigurationIssue(keyPath: "provider[1].audiences", message: "required for type \"google\"")
        let second = ConfigurationIssue(keyPath: "", message: "TOML syntax error at line 1, column 2: x")
        #expect(first.description == "provider[1].audiences: required for type \"google\"")
        #expect(second.description == "TOML syntax error at line 1, column 2: x")
        #expect(ConfigurationError(issues: [first, second]).description == "\(first)\n\(second)")
    }
}
