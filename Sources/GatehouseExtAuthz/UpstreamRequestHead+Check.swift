import NIOHTTP1
import GatehouseSyntax
import GatehouseTokens
import GatehouseTelemetry
import GatehouseExchange
import GatehousePolicy
import GatehouseVocabulary

extension UpstreamRequestHead {
    /// An allowed Check's changes to the request (`CheckAllowance`), by the rules the doors forward with
    /// (`fate(ofField:)`): the identity headers to set, the client's fields to remove (never a name Gatehouse
    /// sets: Envoy removes after it sets, so the name would not reach the upstream at all), the DPoP token as
    /// `Bearer`, and the identity as metadata. Hop-by-hop fields, `X-Forwarded-*` and the request id are
    /// Envoy's own to write.
    func checkAllowance(_ request: Request, admission: Admission, at now: @autoclosure () -> Int64) -> CheckAllowance {
        var allowance = CheckAllowance()
        var identityFields = CheckFieldSink()
        writeAdmissionHeaders(admission, at: now(), into: &identityFields)
        allowance.headersToSet = identityFields.fields
        let nominated = request.hasConnectionField ? HeaderHygiene.connectionNominations(request.head.headers) : []
        if let trace = request.trace {
            // The gateway forwards with Gatehouse's span as the parent (Envoy's own tracing, if on, may set them again).
            allowance.headersToSet.append(("traceparent", trace.traceParent))
            if let state = trace.traceState { allowance.headersToSet.append(("tracestate", state)) }
        }
        for (name, value) in request.head.headers {
            if request.trace != nil, Self.isTraceHeader(name) {
                let lowered = HTTP2FieldName.lowercased(name)
                if lowered == "tracestate", request.trace?.traceState == nil, !allowance.headersToRemove.contains(lowered) {
                    allowance.headersToRemove.append(lowered)
                }
                continue
            }
            switch fate(ofField: name, value, clientIP: request.clientIP, nominated: nominated, forwardToken: request.forwardsToken) {
            case .identity, .token, .untrustedCertificate, .proof:
                let lowered = HTTP2FieldName.lowercased(name)
                if !allowance.headersToSet.contains(where: { $0.0 == lowered }) && !allowance.headersToRemove.contains(lowered) {
                    allowance.headersToRemove.append(lowered)
                }
            case .bearerForm(let bearer):
                allowance.headersToSet.append(("authorization", bearer))
            case .forward, .hopByHop, .forwardedFor, .requestID:
                break
            }
        }
        // Envoy sets only what Gatehouse returns: every identity header Gatehouse could set and did not is removed
        // too, whether the Check listed it or not (Envoy's HTTP protocol lists only `allowed_headers`).
        for names in [IdentityHeaderNames.ownNames, identityHeaderNames.lowercasedNames] {
            for name in names where !allowance.headersToSet.contains(where: { $0.0 == name }) && !allowance.headersToRemove.contains(name) {
                allowance.headersToRemove.append(name)
            }
        }
        allowance.spellingsToRemove = identityHeaderNames.otherSpellings
        if case .verified(let identity) = admission {
            allowance.metadata.append(("provider", .string(identity.providerName)))
            if let subject = identity.subject { allowance.metadata.append(("sub", .string(subject))) }
            if let issuer = identity.claim("iss")?.stringValue { allowance.metadata.append(("iss", .string(issuer))) }
            let scopes = RouteRule.grantedScopes(identity)
            if !scopes.isEmpty { allowance.metadata.append(("scopes", .list(scopes.map(String.init)))) }
        }
        return allowance
    }
}

/// The identity fields a Check sets, their names in lower case (as Envoy takes them).
private struct CheckFieldSink: IdentityFieldSink {
    var fields: [(String, String)] = []

    mutating func add(_ name: String, _ value: String) { fields.append((HTTP2FieldName.lowercased(name), value)) }
}
