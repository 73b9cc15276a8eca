import GatehouseSyntax
public import GatehouseConfig

/// Every request header name Gatehouse may set upstream for a configuration (docs/reference.md §5, §15): what a proxy
/// in front (nginx `auth_request`, Traefik ForwardAuth, Envoy, Istio, the Gateway API) must strip from a client's
/// request and copy from Gatehouse's answer only. One source, so a name added under `[headers]` is never forgotten in
/// a proxy's configuration by hand (`gatehouse proxy-headers`).
public enum IdentityHeaderCatalog {
    /// The names Gatehouse sets of its own, whatever the configuration.
    package static let ownNames = ["X-Auth-Provider", "X-Auth-Claims", "X-Auth-Guest", "X-Auth-Cnf-Jkt", "X-Auth-Cnf-X5t-S256"]

    /// The names of a configuration with nothing of its own: the default `[headers]`, Gatehouse's own, every preset's
    /// and the default `[assertion]` header. A proxy that clears them all is safe whichever provider is added later.
    public static let builtInNames: [String] = unique(
        HeaderSettings.defaultMappings.map(\.name) + ownNames + ProviderType.allCases.flatMap(\.presetHeaders).map(\.name)
            + [AssertionSettings.defaultHeader])

    /// The built-in names, then every name `configuration` adds: `[headers]`, each `[provider.headers]` and the
    /// `[assertion] header`, once each (names compare without regard to ASCII case, `_` read as `-`).
    public static func names(for configuration: Configuration?) -> [String] {
        guard let configuration else { return builtInNames }
        let configured = configuration.headers.mappings.map(\.name)
            + configuration.providers.flatMap { $0.headerMappings(globalHeaders: configuration.headers.mappings) }.map(\.name)
        return unique(builtInNames + configured + (configuration.assertion.map { [$0.header] } ?? []))
    }

    private static func unique(_ names: [String]) -> [String] {
        var seen = Set<[UInt8]>()
        return names.filter { seen.insert($0.utf8.map(ASCIIByte.foldedHeaderNameByte)).inserted }
    }
}
