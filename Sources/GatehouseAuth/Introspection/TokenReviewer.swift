package import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import GatehouseSyntax
package import GatehouseConfig
package import GatehouseTokens
package import GatehouseTelemetry
import GatehouseVocabulary

/// `token_review = true` on a `kubernetes` provider: after a service-account token verified, the API server
/// is asked whether it still authenticates it (a TokenReview), so the token of a deleted pod or service
/// account is refused before its `exp`. Verdicts are kept like introspection answers (`IssuerVerdicts`).
/// The API server answers `201 Created` and leaves `status.authenticated` out when it is false.
package final class TokenReviewer: Sendable {
    package let providerIndex: Int
    private let api: KubernetesAPI
    private let audiences: [String]
    private let client: HTTPClient
    private let timeout: Duration
    private let settings: IntrospectionSettings
    private let verdicts: IssuerVerdicts

    package init(
        providerIndex: Int, provider: Provider, api: KubernetesAPI, client: HTTPClient, timeout: Duration,
        metrics: GatehouseMetrics
    ) {
        self.providerIndex = providerIndex
        self.api = api
        self.audiences = provider.audiences.sorted()
        self.client = client
        self.timeout = timeout
        self.settings = IntrospectionSettings()
        self.verdicts = IssuerVerdicts(
            providerName: provider.name, capacity: settings.cacheMaxEntries, maxInFlight: settings.maxInFlight,
            maxCallsPerSecond: settings.maxCallsPerSecond, metrics: metrics)
    }

    /// The verified identity, if the API server still authenticates the token.
    func review(_ token: Substring, identity: VerifiedIdentity, now: Int64, on eventLoop: any EventLoop) -> TokenVerifier.Verdict {
        verdicts.judge(token, now: now, on: eventLoop) { [self] _ in
            ask(token, on: eventLoop).map { status, body in
                Self.answer(status: status, body: body, identity: identity, now: now, settings: self.settings)
            }
        }
    }

    private func ask(_ token: Substring, on eventLoop: any EventLoop) -> EventLoopFuture<(UInt, [UInt8])> {
        let review = JSONValue.object([
            "apiVersion": .string("authentication.k8s.io/v1"), "kind": .string("TokenReview"),
            "spec": .object(["token": .string(String(token)), "audiences": .array(audiences.map(JSONValue.string))]),
        ]).compactJSON
        let request: HTTPClient.Request
        do {
            let access = try JWKSFetcher.kubernetesAccess(api)
            var headers: HTTPHeaders = ["Content-Type": "application/json", "Accept": "application/json"]
            headers.add(contentsOf: access.headers)
            request = try HTTPClient.Request(
                url: api.url.appendingPathComponent("apis/authentication.k8s.io/v1/tokenreviews"), method: .POST, headers: headers,
                body: .string(review), tlsConfiguration: access.tls)
        } catch {
            return eventLoop.makeFailedFuture(error)
        }
        let accumulator = ResponseAccumulator(request: request, maxBodySize: IntrospectionAnswer.maxBodyBytes)
        return client.execute(request: request, delegate: accumulator, eventLoop: .delegate(on: eventLoop), deadline: .now() + TimeAmount(timeout))
            .futureResult.map { ($0.status.code, Array(buffer: $0.body ?? ByteBuffer())) }
    }

    /// `status.authenticated` must be the boolean `true`; absent or false is an inactive token; anything
    /// but a 200/201 JSON object is an API server that did not answer usably.
    package static func answer(status: UInt, body: [UInt8], identity: VerifiedIdentity, now: Int64, settings: IntrospectionSettings) -> IssuerVerdicts.Answer {
        guard status == 200 || status == 201, case .object(let review)? = try? StrictJSON.parse(body) else {
            return .unusable(AuthFailure(.introspectionUnavailable, "the API server's TokenReview answer was HTTP \(status) or not JSON"))
        }
        guard review["status"]?.objectValue?["authenticated"] == .bool(true) else {
            let reason = review["status"]?.objectValue?["error"]?.stringValue.map { ": " + LogText.truncated($0, maxBytes: 120) } ?? ""
            return .inactive(AuthFailure(.tokenInactive, "the API server no longer authenticates this token (a deleted pod?)\(reason)"),
                             until: now + settings.negativeCacheTTL.components.seconds)
        }
        return .active(identity, until: min(now + settings.cacheTTL.components.seconds, identity.expiry))
    }

    /// One per `kubernetes` provider with `token_review = true`.
    package static func all(for settings: [ProviderSettings], providers: [Provider], client: HTTPClient, timeout: Duration, metrics: GatehouseMetrics)
        -> [TokenReviewer]
    {
        providers.indices.compactMap { index in
            guard settings.indices.contains(index), settings[index].tokenReview, case .kubernetes(let api) = providers[index].keySource else { return nil }
            return TokenReviewer(providerIndex: index, provider: providers[index], api: api, client: client, timeout: timeout, metrics: metrics)
        }
    }
}

