import Foundation
import GatehouseSyntax
import GatehouseRules

// [assertion]: the signed identity assertion sent upstream (docs/reference.md §15).
extension ConfigurationDecoder {
    /// - Parameter upstreamOrigin: the default audience; nil for an authorizer only (no `[upstream]`).
    static func assertionSettings(_ table: TOMLReader, upstreamOrigin: String?) -> AssertionSettings? {
        let issuer = table.nonEmptyString("issuer")
        if issuer == nil, !table.contains("issuer") { table.report("issuer", "required: the iss of every assertion, e.g. \"https://gatehouse.orders.svc\"") }
        let audience = table.nonEmptyString("audience") ?? upstreamOrigin
        if audience == nil, !table.contains("audience") { table.report("audience", "required without [upstream] (its default is the upstream URL's origin)") }
        let header = table.nonEmptyString("header")
        if let header, let problem = assertionHeaderProblem(header) { table.report("header", problem) }
        var lifetime: Duration?
        if let value = table.duration("lifetime") {
            if value < .seconds(1) || value > AssertionSettings.maxLifetime {
                table.report("lifetime", "must be from 1s to 10m")
            } else {
                lifetime = value
            }
        }
        var signingKey: AssertionKey?
        if let path = table.nonEmptyString("signing_key_file") {
            do {
                signingKey = try AssertionKey.load(file: path, needs: .privateKey)
            } catch {
                table.report("signing_key_file", "\(error)")
            }
        } else if !table.contains("signing_key_file") {
            table.report("signing_key_file", "required: a PEM private key, EC P-256 (ES256) or Ed25519 (EdDSA)")
        }
        var published: [AssertionKey] = []
        for (index, path) in (table.strings("published_key_files") ?? []).enumerated() {
            do {
                let key = try AssertionKey.load(file: path, needs: .publicKey)
                if key.keyID != signingKey?.keyID, !published.contains(where: { $0.keyID == key.keyID }) { published.append(key) }
            } catch {
                table.report("published_key_files", "element \(index) (\(path)): \(error)")
            }
        }
        let claims = table.strings("claims") ?? []
        for claim in claims {
            if AssertionSettings.reservedClaims.contains(claim) {
                table.report("claims", "\(claim.jsonQuoted) is set by Gatehouse itself")
            } else if claim.isEmpty || claim.contains(".") {
                table.report("claims", "\(claim.jsonQuoted) must be a top-level claim name")
            }
        }
        table.finish()
        guard let issuer, let audience, let signingKey else { return nil }
        var settings = AssertionSettings(issuer: issuer, audience: audience, signingKey: signingKey)
        if let header { settings.header = header }
        if let lifetime { settings.lifetime = lifetime }
        settings.publishedKeys = published
        settings.claims = claims.reduce(into: []) { if !$0.contains($1) { $0.append($1) } }
        return settings
    }

    /// Incoming headers of this name are removed in every spelling (`_` read as `-`, as upstream stacks do), so it must
    /// name nothing HTTP, the proxy or Gatehouse's own fields depend on (docs/security.md P31, A01).
    private static func assertionHeaderProblem(_ header: String) -> String? {
        guard ConfigSyntax.isToken(header) else { return "\(ConfigKeyPath.quoted(header)) is not a header name" }
        let folded = String(decoding: header.utf8.map(ASCIIByte.foldedHeaderNameByte), as: UTF8.self)
        if protectedHeaderNames.contains(folded) || folded.hasPrefix("proxy-") || reservedHeaderNames.contains(folded) {
            return "\(header) cannot carry the assertion: HTTP, the proxy or Gatehouse depends on it"
        }
        return nil
    }

    /// The assertion's header must not be an identity header Gatehouse also sets (`[headers]`, `[provider.headers]`).
    static func checkAssertionHeader(_ assertion: AssertionSettings, against mappings: [HeaderMapping], sink: ConfigIssueSink) {
        let folded = assertion.header.utf8.map(ASCIIByte.foldedHeaderNameByte)
        if let clash = mappings.first(where: { $0.name.utf8.map(ASCIIByte.foldedHeaderNameByte) == folded }) {
            let carried = clash.expression.map { "the value of \($0.source.jsonQuoted)" } ?? "the claim \(clash.claimPath.jsonQuoted)"
            sink.add(.invalid("assertion.header", "\(assertion.header) already carries \(carried)"))
        }
    }

    /// `scheme://host[:port]` of the upstream URL: the default audience of its assertions.
    static func origin(of url: URL) -> String {
        let scheme = url.scheme?.lowercased() ?? "http"
        var host = url.host ?? ""
        if host.contains(":"), !host.hasPrefix("[") { host = "[\(host)]" }
        return url.port.map { "\(scheme)://\(host):\($0)" } ?? "\(scheme)://\(host)"
    }
}
