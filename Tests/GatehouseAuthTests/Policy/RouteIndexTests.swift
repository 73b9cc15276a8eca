import GatehouseTestSupport
import Testing
import GatehouseConfig
import GatehousePolicy

/// The route index (issue 44) narrows, never decides: on random tables and requests it must pick exactly the route
/// the first-match scan picks (hosts, wildcards, methods, context, prefixes, exact paths, `%2F`, `;` parameters).
struct RouteIndexTests {
    static let contexts: [[String: String]] = [[:], ["service": "billing"], ["service": "billing", "tier": "gold"], ["tier": "gold"], ["service": "orders"]]
    static let segments = ["a", "b", "ab", "api", "v1", "a%2Fb", "x;p=1", "B", "é"]
    static let hosts = ["orders.example.com", "*.example.com", "*.shop.example.com", "shop.example.com", "[::1]"]
    static let requestHosts = ["orders.example.com", "ORDERS.example.com:443", "a.shop.example.com", "shop.example.com.", "x.y.example.com",
                               "example.com", "[::1]:8080", "other.test"]

    static func path(_ random: inout SplitMix64, trailingSlash: Bool) -> String {
        let count = Int.random(in: 0...3, using: &random)
        let path = "/" + (0..<count).map { _ in segments.randomElement(using: &random)! }.joined(separator: Bool.random(using: &random) ? "/" : "%2F")
        return trailingSlash && count > 0 ? path + "/" : path
    }

    static func table(_ random: inout SplitMix64, size: Int) -> [RouteSettings] {
        (0..<size).map { _ in
            let text = path(&random, trailingSlash: Int.random(in: 0..<4, using: &random) == 0)
            var route = RouteSettings(match: Bool.random(using: &random) ? .prefix(text) : .path(text))
            if Int.random(in: 0..<3, using: &random) == 0 { route.hosts = Array(hosts.shuffled(using: &random).prefix(Int.random(in: 1...2, using: &random))) }
            if Int.random(in: 0..<4, using: &random) == 0 { route.methods = ["GET"] }
            if Int.random(in: 0..<4, using: &random) == 0 { route.context = contexts.dropFirst().randomElement(using: &random)! }
            return route
        }
    }

    @Test(arguments: [20, 200, 2000])
    func theIndexPicksTheRouteTheScanPicks(size: Int) {
        var random = SplitMix64(seed: UInt64(size))
        for _ in 0..<(size >= 2000 ? 4 : 20) {
            let routes = Self.table(&random, size: size)
            let scanned = RouteTable(routes, indexed: false), indexed = RouteTable(routes, indexed: true)
            for _ in 0..<300 {
                let request = PathNormalizer.normalize(Self.path(&random, trailingSlash: Bool.random(using: &random)))
                guard let path = request?.path else { continue }
                let host = Bool.random(using: &random) ? Self.requestHosts.randomElement(using: &random)![...] : nil
                let method = ["GET", "HEAD", "POST"].randomElement(using: &random)!
                let context = Self.contexts.randomElement(using: &random)!
                let expected = scanned.match(method: method, path: path, host: host, context: context)
                let found = indexed.match(method: method, path: path, host: host, context: context)
                #expect(found.index == expected.index, "\(method) \(path) host \(host ?? "-"): index \(String(describing: found.index)), scan \(String(describing: expected.index))")
                if found.index != expected.index { return }
            }
        }
    }
}
