import Testing
import GatehouseConfig
import GatehousePolicy

/// `[[route]] context` (docs/reference.md §3.11; issue 44): every pair must be in a Check's `context_extensions`; a
/// request without context (the doors, an HTTP Check) never takes such a route.
struct RouteContextTests {
    static func route(_ prefix: String, context: [String: String], auth: RouteSettings.Auth) -> RouteSettings {
        var route = RouteSettings(match: .prefix(prefix))
        route.context = context
        route.auth = auth
        return route
    }

    @Test func everyPairMustBeInTheContext() {
        let table = RouteTable([
            Self.route("/api", context: ["service": "billing", "tier": "gold"], auth: .public),
            Self.route("/api", context: ["service": "billing"], auth: .optional),
            Self.route("/", context: [:], auth: .required),
        ])
        #expect(table.match(method: "GET", path: "/api/x", context: ["service": "billing", "tier": "gold", "zone": "eu"]).auth == .public)
        #expect(table.match(method: "GET", path: "/api/x", context: ["service": "billing", "tier": "silver"]).auth == .optional)
        #expect(table.match(method: "GET", path: "/api/x", context: ["service": "Billing"]).auth == .required, "values compare exactly")
        #expect(table.match(method: "GET", path: "/api/x", context: ["tier": "gold"]).auth == .required)
        #expect(table.match(method: "GET", path: "/api/x").auth == .required, "no context: only routes without one")
    }
}
