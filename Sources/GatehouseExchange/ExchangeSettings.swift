package import NIOCore
package import GatehouseConfig
package import GatehousePolicy
package import GatehouseHTTP

/// What the request core reads of the configuration: plain rules and figures, no service (no gatekeeper, logger,
/// metrics or tracer: those are the drivers'). One per configuration, made with its `ProxyServices`; a request keeps
/// the one it started with (a reload applies to the next request). A class: every request holds it with one retain.
package final class ExchangeSettings: Sendable {
    /// Seconds a client is told to wait after a 503 (keys, introspection or the revocation store unavailable).
    package static let retryAfterSeconds = 5

    package let routes: RouteTable
    /// `[[resource]]`: the protected resources, their metadata documents and rules.
    package let resources: ResourceTable
    /// Where the token may come from besides `Authorization` (`[verification] token_cookie`, `token_header`).
    package let tokenCookie: String?
    package let tokenHeader: String?
    /// The scheme an upstream is told the client used (`X-Forwarded-Proto`).
    package let scheme: String
    /// The head sent upstream, with the identity headers' rules: the upstream legs write it, `/.gatehouse/check`
    /// answers an allowed request with its identity headers, `/.gatehouse/jwks` publishes its assertion keys.
    package let upstreamHead: UpstreamRequestHead
    /// `[upstream] timeout`: the upstream's response head must come within it.
    let responseTimeout: TimeAmount
    /// `[listen] idle_timeout`: a response or request body that moves no byte for this long is cut.
    package let idleTimeout: TimeAmount
    /// Whether a connection may remember its last verified token (`RecentToken`): not with userinfo enrichment,
    /// whose fields may change from one request to the next.
    package let remembersTokens: Bool
    /// The providers with `backchannel_logout = true`: each has its `/.gatehouse/backchannel-logout/<name>`.
    let backchannelLogoutProviders: Set<String>

    /// The settings of one configuration. `upstreamHead`: its head's rules (`UpstreamRequestHead(configuration)`,
    /// with the assertion signer its owner made); `remembersTokens`: false with userinfo enrichment.
    package init(_ configuration: Configuration, upstreamHead: UpstreamRequestHead, remembersTokens: Bool) {
        routes = RouteTable(configuration.routes)
        resources = ResourceTable(configuration)
        tokenCookie = configuration.verification.tokenCookie
        tokenHeader = configuration.verification.tokenHeader
        scheme = configuration.listen.tlsCertificatePath == nil ? "http" : "https"
        self.upstreamHead = upstreamHead
        responseTimeout = TimeAmount(configuration.upstream.timeout)
        idleTimeout = TimeAmount(configuration.listen.idleTimeout)
        self.remembersTokens = remembersTokens
        backchannelLogoutProviders = Set(configuration.providers.filter { $0.backchannelLogout != nil }.map(\.name))
    }

    /// The heads for an upstream (`UpstreamRequestHead.make`, `makeHTTP2Head`), written from here: a call through this
    /// object borrows the head's rules, where a caller's `settings.upstreamHead.make` copied them first (six references
    /// a request).
    package func writeUpstreamHead(
        _ request: UpstreamRequestHead.Request, admission: Admission, at now: @autoclosure () -> Int64, reusing headBuffer: inout ReusedBuffer,
        allocator: ByteBufferAllocator, chunkedBody: Bool, identityFields: ByteBuffer?
    ) -> UpstreamRequestHead.Written {
        upstreamHead.make(
            request, admission: admission, at: now(), reusing: &headBuffer, allocator: allocator, chunkedBody: chunkedBody,
            identityFields: identityFields)
    }

    package func writeHTTP2UpstreamHead(
        _ request: UpstreamRequestHead.Request, admission: Admission, at now: @autoclosure () -> Int64, scheme: String,
        identityFields: [NGHTTP2Session.OutboundField]?
    ) -> HTTP2UpstreamHead {
        upstreamHead.makeHTTP2Head(request, admission: admission, at: now(), scheme: scheme, identityFields: identityFields)
    }

    /// Whether this configuration answers `endpoint`: a back-channel logout only for a provider that takes them.
    func opens(_ endpoint: OwnEndpoint) -> Bool {
        guard case .backchannelLogout(let provider) = endpoint else { return true }
        return backchannelLogoutProviders.contains(provider)
    }
}
