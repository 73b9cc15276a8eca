package import AsyncHTTPClient
import Foundation
package import Logging
import NIOConcurrencyHelpers
import NIOCore
import GatehouseSyntax
import GatehouseConfig
import GatehouseTokens
package import GatehouseTelemetry
import GatehouseVocabulary

/// One introspection provider's judge of opaque tokens: which tokens it takes (`token_prefix`), the RFC 7662
/// call (the endpoint configured or discovered once), and the answer judged (`IntrospectionAnswer`); the
/// cache, single-flight and in-flight bound are `IssuerVerdicts`'.
package final class Introspector: Sendable {
    package let providerIndex: Int
    package let provider: Provider
    private let settings: IntrospectionSettings
    private let client: IntrospectionClient
    private let leeway: Int64
    private let logger: Logger
    private let failures = RateLimitedReport()
    private let verdicts: IssuerVerdicts
    private let endpoint: NIOLockedValueBox<URL?>

    package init(
        providerIndex: Int, provider: Provider, client: IntrospectionClient, leeway: Int64, metrics: GatehouseMetrics, logger: Logger
    ) {
        self.providerIndex = providerIndex
        self.provider = provider
        self.settings = provider.introspection ?? IntrospectionSettings()
        self.client = client
        self.leeway = leeway
        self.logger = logger
        self.verdicts = IssuerVerdicts(
            providerName: provider.name, capacity: settings.cacheMaxEntries, maxInFlight: settings.maxInFlight,
            maxCallsPerSecond: settings.maxCallsPerSecond, metrics: metrics)
        self.endpoint = NIOLockedValueBox(settings.endpoint)
    }

    /// Whether this provider takes the token (its `token_prefix`, if any).
    package func takes(_ token: Substring) -> Bool {
        settings.tokenPrefix.map { token.hasPrefix($0) } ?? true
    }

    var hasTokenPrefix: Bool { settings.tokenPrefix != nil }

    func introspect(_ token: Substring, now: Int64, on eventLoop: any EventLoop) -> TokenVerifier.Verdict {
        verdicts.judge(token, now: now, on: eventLoop) { [self] key in
            let url = endpoint.withLockedValue { $0 }.map { eventLoop.makeSucceededFuture($0) } ?? discover(on: eventLoop)
            return url.flatMap { self.client.introspect(token, endpoint: $0, on: eventLoop) }.map { status, body in
                self.answer(IntrospectionAnswer.judge(status: status, body: body, provider: self.provider, now: now, leeway: self.leeway),
                            key: key, now: now)
            }.flatMapError { error in
                eventLoop.makeSucceededFuture(self.answer(.unusable("\(error)"), key: key, now: now))
            }
        }
    }

    private func discover(on eventLoop: any EventLoop) -> EventLoopFuture<URL> {
        client.discoverEndpoint(on: eventLoop).map { url in
            self.endpoint.withLockedValue { $0 = url }
            return url
        }
    }

    /// An active answer lives at most `min(cache_ttl, exp − now)`, an inactive one `negative_cache_ttl`.
    private func answer(_ outcome: IntrospectionAnswer.Outcome, key: TokenKey, now: Int64) -> IssuerVerdicts.Answer {
        switch outcome {
        case .active(let claims):
            let identity = makeIdentity(claims, key: key, now: now)
            return .active(identity, until: min(now + settings.cacheTTL.components.seconds, identity.expiry))
        case .inactive(let failure):
            return .inactive(failure, until: now + settings.negativeCacheTTL.components.seconds)
        case .unusable(let why):
            failures.occurred("introspection failed", metadata: ["gatehouse.provider": "\(provider.name)", "gatehouse.error": "\(why)"], to: logger)
            return .unusable(AuthFailure(.introspectionUnavailable, "the issuer did not answer usably: \(LogText.truncated(why, maxBytes: 200))"))
        }
    }

    private func makeIdentity(_ claims: [String: JSONValue], key: TokenKey, now: Int64) -> VerifiedIdentity {
        let ttl = settings.cacheTTL.components.seconds
        return VerifiedIdentity(
            providerIndex: providerIndex,
            providerName: provider.name,
            claims: claims,
            encodedPayload: Base64URL.encode(Array(JSONValue.object(claims).compactJSON.utf8)),
            keyID: nil,
            expiry: claims["exp"]?.integerValue ?? now + ttl,
            tokenDigest: key,
            keysFetchedAt: nil)
    }

    /// One per `type = "introspection"` provider, by provider index. A secret that cannot be read throws
    /// (`serve` refuses to start, naming the key).
    package static func all(
        for providers: [Provider], client: HTTPClient, timeout: Duration, leeway: Int64, metrics: GatehouseMetrics, logger: Logger
    ) throws -> [Introspector] {
        try providers.indices.compactMap { index in
            guard let settings = providers[index].introspection else { return nil }
            let secret: String?
            do {
                secret = try settings.clientSecret?.resolve()
            } catch {
                throw IntrospectionClient.Failure(description: "provider \(providers[index].name) client_secret: \(error)")
            }
            let client = IntrospectionClient(
                client: client, settings: settings, issuer: providers[index].issuers.first, clientSecret: secret, timeout: timeout)
            return Introspector(providerIndex: index, provider: providers[index], client: client, leeway: leeway, metrics: metrics, logger: logger)
        }
    }
}
