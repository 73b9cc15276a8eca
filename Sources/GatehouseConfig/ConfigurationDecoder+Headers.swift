import TOMLKit
import GatehouseRules

// [headers] and [provider.headers]: which claims go upstream under which header names.
extension ConfigurationDecoder {
    /// Names Gatehouse sets itself on every verified or guest request (docs/reference.md §5).
    static let reservedHeaderNames: Set<String> = ["x-auth-provider", "x-auth-claims", "x-auth-guest"]

    /// Names that HTTP framing, the proxy or the token itself depend on. Incoming headers with a mapped name
    /// are stripped (§5), so mapping a claim to one of these would break or smuggle requests.
    static let protectedHeaderNames: Set<String> = [
        "authorization", "connection", "content-length", "content-type", "cookie", "expect", "forwarded", "host",
        "keep-alive", "te", "trailer", "transfer-encoding", "upgrade", "x-forwarded-for", "x-forwarded-host",
        "x-forwarded-proto", "x-request-id",
    ]

    /// The top-level `[headers]`. When present it replaces the default mappings entirely.
    static func headerSettings(_ table: TOMLReader, maxHeaderBytes: Int) -> HeaderSettings {
        var settings = HeaderSettings()
        settings.mappings = headerMappings(table, allowsForwardClaimsJSON: true, maxHeaderBytes: maxHeaderBytes)
        settings.forwardClaimsJSON = table.bool("forward_claims_json") ?? settings.forwardClaimsJSON
        table.finish()
        return settings
    }

    /// Every key but `forward_claims_json` is a header name whose value is a claim path, or `{ expression = '…' }`
    /// (CEL over the claims). Sorted by name, because TOMLKit does not keep a table's file order.
    static func headerMappings(_ table: TOMLReader, allowsForwardClaimsJSON: Bool, maxHeaderBytes: Int) -> [HeaderMapping] {
        var mappings: [HeaderMapping] = []
        var seen: [String: String] = [:]
        for name in table.keys.sorted() {
            if name == "forward_claims_json" {
                if !allowsForwardClaimsJSON {
                    _ = table.value(name)
                    table.report(name, "only allowed in the top-level [headers] table")
                }
                continue
            }
            guard let value = table.value(name) else { continue }
            let lowercased = name.lowercased()
            if !ConfigSyntax.isToken(name) {
                table.report(name, "not a valid header name (RFC 9110 token characters only)")
                continue
            }
            if reservedHeaderNames.contains(lowercased) {
                table.report(name, "\(name) is reserved: Gatehouse sets it itself")
                continue
            }
            if protectedHeaderNames.contains(lowercased) || lowercased.hasPrefix("proxy-") {
                table.report(name, "\(name) cannot carry a claim: HTTP or the proxy depends on it")
                continue
            }
            if let earlier = seen[lowercased] {
                table.report(name, "duplicate header name (header names are case-insensitive: see \(ConfigKeyPath.appending(earlier, to: table.path)))")
                continue
            }
            seen[lowercased] = name
            if value.table != nil, let computed = table.table(name) {
                if let mapping = expressionMapping(name, computed, maxHeaderBytes: maxHeaderBytes) { mappings.append(mapping) }
                continue
            }
            guard let claimPath = value.string else {
                table.sink.add(.wrongType(
                    table.keyPath(name), expected: "a claim path string or { expression = '…' }", found: TOMLReader.typeName(value.type)))
                continue
            }
            if let problem = ConfigSyntax.claimPathProblem(claimPath) {
                table.report(name, problem)
                continue
            }
            mappings.append(HeaderMapping(name: name, claimPath: claimPath))
        }
        return mappings
    }

    /// `{ expression = '<CEL>' }`: checked at load like a route's rule, reported at `<table>.<name>.expression`.
    private static func expressionMapping(_ name: String, _ table: TOMLReader, maxHeaderBytes: Int) -> HeaderMapping? {
        defer { table.finish() }
        guard let source = table.string("expression") else {
            // A misspelt key is reported as unknown, with the hint; an empty table as missing its one key.
            if !table.contains("expression") && table.keys.isEmpty { table.sink.add(.required(table.keyPath("expression"))) }
            return nil
        }
        do {
            return HeaderMapping(name: name, expression: try RuleExpression(headerValue: source, maxHeaderBytes: maxHeaderBytes))
        } catch {
            table.report("expression", error.message)
            return nil
        }
    }
}
