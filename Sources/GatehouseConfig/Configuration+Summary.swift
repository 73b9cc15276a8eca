import Foundation

extension Configuration {
    /// One line for `check-config`, e.g.
    /// `config OK: 2 providers (google, local), 3 routes, upstream http://127.0.0.1:3000, listen 0.0.0.0:8080`.
    public var summary: String {
        let names = providers.map(\.name).joined(separator: ", ")
        let tls = listen.tlsCertificatePath != nil ? " (TLS)" : ""
        let http2 = listen.http2 ? ", HTTP/2" : ""
        let upstreamProtocol = upstream.protocolVersion == .http2 ? " (HTTP/2)" : ""
        let checks = extAuthz.map { ", ext_authz \($0.address)\($0.tlsCertificatePath != nil ? " (TLS)" : "")" } ?? ""
        let signs = assertion.map {
            ", assertion \($0.signingKey.algorithm) kid \($0.signingKey.keyID)"
                + ($0.publishedKeys.isEmpty ? "" : " (+\(Self.counted($0.publishedKeys.count, "published key")))")
        } ?? ""
        let traces = tracing.map { ", traces to \($0.endpoint.absoluteString) (sampling \($0.samplingRatio))" } ?? ""
        let serving = servesClientPort
            ? "upstream \(upstream.url.absoluteString)\(upstreamProtocol), listen \(listen.address)\(tls)\(http2)" : "an authorizer only"
        let protected = resources.isEmpty ? "" : ", \(Self.counted(resources.count, "resource")) ("
            + resources.map { $0.url + ($0.mcp ? " MCP" : "") }.joined(separator: ", ") + ")"
        let logouts = providers.filter { $0.backchannelLogout != nil }.map {
            "\nback-channel logout of \($0.name): register backchannel_logout_uri = <this Gatehouse's public origin>\(Self.backchannelLogoutPath)\($0.name)"
        }.joined()
        return "config OK: \(Self.counted(providers.count, "provider")) (\(names)), \(Self.counted(routes.count, "route"))\(protected), "
            + "\(serving)\(checks)\(signs)\(traces)\(logouts)"
    }

    /// Where a provider's logout tokens are POSTed on the client port (docs/reference.md §7.3), the provider's name after it.
    public static let backchannelLogoutPath = "/.gatehouse/backchannel-logout/"

    private static func counted(_ count: Int, _ noun: String) -> String {
        "\(count) \(noun)\(count == 1 ? "" : "s")"
    }
}
