import Testing
import GatehouseConfig
import GatehousePolicy

/// `[[route]] hosts` (docs/reference.md §3.11; issue 44): the request's host without port and one trailing dot, any
/// ASCII case; `*.x` matches names under x (one label or more), never x itself; no `hosts`, every host.
struct RouteHostsTests {
    static func route(_ prefix: String, hosts: [String], auth: RouteSettings.Auth = .public) -> RouteSettings {
        var route = RouteSettings(match: .prefix(prefix))
        route.hosts = hosts
        route.auth = auth
        return route
    }

    @Test func hostsAreComparedWithoutPortTrailingDotOrCase() throws {
        let hosts = try #require(RouteHosts(["orders.example.com", "*.shop.example.com", "[::1]", "10.0.0.5"]))
        for host in ["orders.example.com", "ORDERS.Example.com", "orders.example.com:8443", "orders.example.com.", "orders.example.com.:80",
                     "a.shop.example.com", "a.b.shop.example.com:443", "[::1]:8080", "[::1]", "10.0.0.5:80"] {
            #expect(hosts.matches(host[...]), "\(host)")
        }
        for host in ["shop.example.com", "xshop.example.com", "orders.example.com.evil", "evil-orders.example.com", "[::2]", "10.0.0.50", ""] {
            #expect(!hosts.matches(host[...]), "\(host)")
        }
        #expect(!hosts.matches(nil), "a request without a host matches no route with hosts")
        #expect(RouteHosts([]) == nil)
    }

    @Test func theTableTakesTheFirstRouteWhoseHostMethodAndPathMatch() {
        let table = RouteTable([
            Self.route("/admin", hosts: ["orders.example.com"]),
            Self.route("/admin", hosts: ["*.shop.example.com"], auth: .optional),
            Self.route("/", hosts: [], auth: .required),
        ])
        #expect(table.usesHosts)
        #expect(table.match(method: "GET", path: "/admin", host: "orders.example.com:443").auth == .public)
        #expect(table.match(method: "GET", path: "/admin", host: "eu.shop.example.com").auth == .optional)
        #expect(table.match(method: "GET", path: "/admin", host: "shop.example.com").auth == .required)
        #expect(table.match(method: "GET", path: "/admin", host: nil).auth == .required)
        #expect(!RouteTable([Self.route("/", hosts: [])]).usesHosts)
    }
}
