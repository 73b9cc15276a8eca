import Foundation
@testable import Gatehouse
import Testing
import GatehouseRules
import GatehouseConfig
import GatehouseAuth
import GatehouseExchange

/// Issue 42: whatever a proxy in front of Gatehouse must strip and copy comes from Gatehouse itself
/// (`gatehouse proxy-headers`); every example under deploy/ holds exactly the blocks it prints for the example's
/// configuration (the built-in names where the example has no gatehouse.toml of its own).
struct ProxyExampleBlocksTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    struct Example: CustomStringConvertible {
        var proxy: ProxyKind
        var file: String
        var configuration: String?
        /// The blocks the file holds (nil: every block the proxy has).
        var blocks: [String]?
        var description: String { file }
    }

    static let examples = [
        Example(proxy: .nginx, file: "deploy/nginx/auth-request.conf"),
        Example(proxy: .traefik, file: "deploy/traefik/dynamic.yml", configuration: "deploy/traefik/gatehouse.toml"),
        Example(proxy: .envoy, file: "deploy/envoy/ext-authz-http.yaml", configuration: "deploy/envoy/gatehouse.toml"),
        // gRPC: Envoy applies the headers of Gatehouse's answer itself; only the removal before the check is configured.
        Example(proxy: .envoy, file: "deploy/envoy/ext-authz-grpc.yaml", configuration: "deploy/envoy/gatehouse.toml", blocks: ["removal"]),
        Example(proxy: .istio, file: "deploy/istio/mesh-config.yaml"),
        Example(proxy: .envoyGateway, file: "deploy/envoy-gateway/security-policy.yaml"),
        Example(proxy: .gatewayAPI, file: "deploy/gateway-api/httproute-external-auth.yaml"),
    ]

    @Test(arguments: examples)
    func theExampleHoldsWhatGatehousePrints(_ example: Example) throws {
        let configuration = try example.configuration.map { try Configuration.load(fromFile: Self.repository.appendingPathComponent($0).path) }
        let text = try String(contentsOf: Self.repository.appendingPathComponent(example.file), encoding: .utf8)
        let snippets = try ProxySnippets.snippets(for: example.proxy, names: IdentityHeaderCatalog.names(for: configuration))
            .filter { example.blocks?.contains($0.block) ?? true }
        #expect(!snippets.isEmpty)
        for snippet in snippets {
            #expect(snippet.isContained(in: text), "\(example.file): block \(snippet.block) should read\n\(snippet.text())")
        }
    }

    /// Every name Gatehouse can set is in the catalogue (reference §5, §15: seventeen), and a name mapped under
    /// `[headers]` or `[provider.headers]`, or a renamed `[assertion]` header, joins it: never forgotten by hand.
    @Test func theNamesFollowTheConfiguration() throws {
        let builtIn = IdentityHeaderCatalog.builtInNames
        #expect(builtIn.count == 17, "\(builtIn)")
        for name in ["X-Auth-Cnf-Jkt", "X-Auth-Cnf-X5t-S256", "X-Auth-Tenant-Id", "X-Auth-Object-Id", "X-Auth-Username",
                     "X-Auth-Sign-In-Provider", "X-Auth-K8s-Namespace", "X-Auth-K8s-Service-Account", "X-Gatehouse-Assertion"] {
            #expect(builtIn.contains(name), "\(name)")
        }
        var configuration = Configuration(upstream: UpstreamSettings(url: URL(string: "http://127.0.0.1:3000")!), providers: [])
        configuration.headers.mappings.append(HeaderMapping(name: "X-Tenant", claimPath: "tid"))
        // Issue 44: a computed header is an identity header like a claim's.
        configuration.headers.mappings.append(HeaderMapping(name: "X-Org-Tier", expression: try RuleExpression(headerValue: "claims.tier", maxHeaderBytes: 16384)))
        var provider = ProviderSettings(name: "corp", type: .jwks)
        provider.headers = [HeaderMapping(name: "X-Department", claimPath: "dept")]
        configuration.providers = [provider]
        let names = IdentityHeaderCatalog.names(for: configuration)
        #expect(names.contains("X-Tenant") && names.contains("X-Department") && names.contains("X-Org-Tier"))
        let nginx = try ProxySnippets.snippets(for: .nginx, names: names).map { $0.text() }.joined()
        #expect(nginx.contains("proxy_set_header X-Tenant $gatehouse_x_tenant;") && nginx.contains("proxy_set_header X-Department"))
        #expect(nginx.contains("proxy_set_header X-Org-Tier $gatehouse_x_org_tier;"))
        let envoy = try ProxySnippets.snippets(for: .envoy, names: names).map { $0.text() }.joined()
        #expect(envoy.contains("{exact: \"x-tenant\", ignore_case: true}"), "outside x-auth-*: listed by name")
        let traefik = ProxySnippets.traefik(names).text()
        #expect(traefik.contains("x[-_]tenant"), "\(traefik)")
    }
}
