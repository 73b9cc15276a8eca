import Foundation
import Testing
import GatehouseTokenFixtures
import GatehouseConfig

/// `[[resource]]` (docs/reference.md §17): read with its defaults, every mistake reported at its key path.
struct ConfigurationResourceTests {
    typealias Case = ConfigurationValidationTests.Case

    static func resource(_ body: String) -> String {
        ConfigFixture.minimal("[[resource]]\n" + body + "\n")
    }

    @Test func aResourceIsReadWithItsDefaults() throws {
        let configuration = try Configuration.parse(toml: Self.resource("""
            url = "https://MCP.example.com:443/mcp/"
            authorization_servers = ["https://issuer.example.test"]
            mcp = true
            """))
        let resource = try #require(configuration.resources.first)
        #expect(resource.url == "https://MCP.example.com:443/mcp/", "the identifier exactly as written: what aud must name")
        #expect(resource.origin == "https://mcp.example.com")
        #expect(resource.host == "mcp.example.com")
        #expect(resource.path == "/mcp")
        #expect(resource.metadataURL == "https://mcp.example.com/.well-known/oauth-protected-resource/mcp")
        #expect(resource.maxMessageBytes == 1 << 20)
        #expect(resource.sessionTTL == .seconds(86400))
        #expect(resource.forwardsToken(upstreamDefault: true) == false, "an MCP server never gets the token unless asked")
        #expect(resource.scopesSupported == nil && resource.name == nil && resource.allowedOrigins.isEmpty)
        #expect(configuration.summary.contains(", 0 routes, 1 resource (https://MCP.example.com:443/mcp/ MCP), upstream"), "\(configuration.summary)")

        let full = try Configuration.parse(toml: Self.resource("""
            url = "http://127.0.0.1:8080"
            authorization_servers = ["https://issuer.example.test"]
            scopes_supported = ["mcp:tools"]
            name = "Tools"
            mcp = true
            allowed_origins = ["https://App.example.com", "http://localhost:5173"]
            forward_token = true
            max_message_bytes = "64KiB"
            session_ttl = "1h"
            """))
        let settings = try #require(full.resources.first)
        #expect(settings.path == "" && settings.metadataPath == "/.well-known/oauth-protected-resource")
        #expect(settings.origin == "http://127.0.0.1:8080")
        #expect(settings.allowedOrigins == ["https://app.example.com", "http://localhost:5173"])
        #expect(settings.maxMessageBytes == 65536)
        #expect(settings.sessionTTL == .seconds(3600))
        #expect(settings.forwardsToken(upstreamDefault: false))
        #expect(try Configuration.parse(toml: Self.resource("url = \"https://a.test/x\"\nauthorization_servers = [\"https://issuer.example.test\"]\n"
            + "max_message_bytes = 4096\nmcp = true")).resources.first?.maxMessageBytes == 4096)
    }

    @Test(arguments: [
        Case(resource("authorization_servers = [\"https://issuer.example.test\"]"), "resource[0].url", "required"),
        Case(resource("url = \"https://a.test/x?y=1\"\nauthorization_servers = [\"https://issuer.example.test\"]"), "resource[0].url", "query"),
        Case(resource("url = \"ftp://a.test/x\"\nauthorization_servers = [\"https://issuer.example.test\"]"), "resource[0].url", "http"),
        Case(resource("url = \"https://a.test/x\""), "resource[0].authorization_servers", "required"),
        Case(resource("url = \"https://a.test/x\"\nauthorization_servers = []"), "resource[0].authorization_servers", "at least one"),
        Case(resource("url = \"https://a.test/x\"\nauthorization_servers = [\"https://issuer.example.test\", \"https://other.test\"]"),
             "resource[0].authorization_servers[1]", "not the issuer of a configured [[provider]]"),
        Case(resource("url = \"https://a.test/x\"\nauthorization_servers = [\"https://issuer.example.test\"]\nallowed_origins = [\"https://b.test\"]"),
             "resource[0].allowed_origins", "only to an MCP server"),
        Case(resource("url = \"https://a.test/x\"\nauthorization_servers = [\"https://issuer.example.test\"]\nmcp = true\nallowed_origins = [\"https://b.test/path\"]"),
             "resource[0].allowed_origins", "not an origin"),
        Case(resource("url = \"https://a.test/x\"\nauthorization_servers = [\"https://issuer.example.test\"]\nmcp = true\nmax_message_bytes = \"1GB\""),
             "resource[0].max_message_bytes", "not a byte count"),
        Case(resource("url = \"https://a.test/x\"\nauthorization_servers = [\"https://issuer.example.test\"]\nmcp = true\nmax_message_bytes = 0"),
             "resource[0].max_message_bytes", "between 1"),
        Case(resource("url = \"https://a.test/x\"\nauthorization_servers = [\"https://issuer.example.test\"]\nmcp = true\nsession_ttl = \"0s\""),
             "resource[0].session_ttl", "more than 0s"),
        Case(resource("url = \"https://a.test/x\"\nauthorization_servers = [\"https://issuer.example.test\"]\nmpc = true"), "resource[0].mpc", "unknown key"),
        Case(resource("url = \"https://a.test/x\"\nauthorization_servers = [\"https://issuer.example.test\"]\n[[resource]]\nurl = \"https://A.test/x/y\"\n"
            + "authorization_servers = [\"https://issuer.example.test\"]"), "resource[1].url", "overlaps resource[0]"),
        Case(resource("url = \"https://a.test\"\nauthorization_servers = [\"https://issuer.example.test\"]\n[[resource]]\nurl = \"https://a.test/y\"\n"
            + "authorization_servers = [\"https://issuer.example.test\"]"), "resource[1].url", "overlaps resource[0]"),
    ])
    func everyMistakeIsReportedAtItsKeyPath(_ testCase: Case) {
        ConfigurationValidationTests.expectOnlyIssue(testCase)
    }

    /// Paths that only share a prefix of characters, or hosts that differ, do not overlap.
    @Test func resourcesOnOtherPathsOrHostsMayCoexist() throws {
        let configuration = try Configuration.parse(toml: Self.resource("""
            url = "https://a.test/mcp"
            authorization_servers = ["https://issuer.example.test"]
            [[resource]]
            url = "https://a.test/mcpx"
            authorization_servers = ["https://issuer.example.test"]
            [[resource]]
            url = "https://b.test/mcp"
            authorization_servers = ["https://issuer.example.test"]
            """))
        #expect(configuration.resources.count == 3)
    }
}
