import Foundation
import NIOCore
import NIOHTTP1
import GatehouseSyntax
import GatehouseHTTP
import GatehouseTokens
import GatehouseTelemetry
import GatehouseAuth
import GatehouseExchange
import GatehouseProxy
import GatehouseExtAuthz
import GatehouseVocabulary

/// The admin port: `/healthz`, `/readyz`, `/metrics`, `/.well-known/jwks.json` (docs/reference.md §7.2, §9, §15).
/// Never on the client port.
final class AdminHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// The current key store's status (a reload may replace the store).
    private let keyStatus: @Sendable () -> [ProviderKeyStatus]
    private let revocations: RevocationService
    private let dpopReplay: DPoPReplayCache
    private let metrics: GatehouseMetrics
    /// The current configuration's assertion signer, if any (a reload may replace it).
    private let assertion: @Sendable () -> AssertionSigner?
    private var requestHead: HTTPRequestHead?

    init(
        keyStatus: @escaping @Sendable () -> [ProviderKeyStatus], revocations: RevocationService, dpopReplay: DPoPReplayCache,
        metrics: GatehouseMetrics, assertion: @escaping @Sendable () -> AssertionSigner?
    ) {
        self.keyStatus = keyStatus
        self.assertion = assertion
        self.revocations = revocations
        self.dpopReplay = dpopReplay
        self.metrics = metrics
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            requestHead = head
        case .body:
            break
        case .end:
            guard let head = requestHead else { return }
            requestHead = nil
            respond(to: head).write(to: context, answering: head)
        }
    }

    private func respond(to head: HTTPRequestHead) -> WholeResponse {
        let path = head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? head.uri
        if path == "/.well-known/jwks.json", head.method == .GET || head.method == .HEAD {
            let published = PublishedJWKS(assertion(), ifNoneMatch: head.headers[canonicalForm: "if-none-match"].map(String.init))
            return WholeResponse(status: published.status, headers: published.headers, body: Array(published.body.utf8))
        }
        let (status, contentType, body) = respondUncached(to: head)
        return WholeResponse(status: status, headers: ["Content-Type": contentType, "Cache-Control": "no-store"], body: body)
    }

    private func respondUncached(to head: HTTPRequestHead) -> (HTTPResponseStatus, String, [UInt8]) {
        guard head.method == .GET || head.method == .HEAD else {
            return (.methodNotAllowed, "text/plain", Array("method not allowed\n".utf8))
        }
        let path = head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? head.uri
        switch path {
        case "/healthz":
            return (.ok, "text/plain", Array("ok\n".utf8))
        case "/readyz":
            let status = keyStatus()
            let store = revocations.status
            let ready = Self.isReady(status, store: store)
            let body = Self.readiness(status, store: store, location: revocations.store.location, ready: ready)
            return (ready ? .ok : .serviceUnavailable, "application/json", Array(body.utf8))
        case "/metrics":
            let status = keyStatus()
            let store = revocations.status
            let body = metrics.exposition(
                keyStatus: status, dpopReplayEntries: dpopReplay.count, ready: Self.isReady(status, store: store),
                revocationStoreUp: store.connected, unsavedRevocations: store.unsaved.count, now: Date().timeIntervalSince1970)
            return (.ok, "text/plain; version=0.0.4", body)
        default:
            return (.notFound, "text/plain", Array("not found\n".utf8))
        }
    }

    /// Every provider's keys are usable and the revocation store has been read once (until then this replica
    /// could admit tokens signed out before it started). `/readyz` and the ext_authz health check say this.
    static func isReady(_ status: [ProviderKeyStatus], store: RevocationService.StoreState) -> Bool {
        status.allSatisfy(\.usable) && store.loadedOnce
    }

    /// `{"ready":false,"unavailable":["corp"],"providers":[{"name":…,"keys":…,"last_fetch":…,"last_error":…}],
    /// "revocation_store":{"location":…,"connected":…,"loaded":…,"unsaved":…,"last_error":…}}`
    static func readiness(_ status: [ProviderKeyStatus], store: RevocationService.StoreState, location: String, ready: Bool) -> String {
        let unavailable = status.filter { !$0.usable }.map { $0.provider.jsonQuoted }.joined(separator: ",")
        let providers = status.map { provider in
            let lastFetch = provider.lastFetch.map { FailureEvent.timestamp($0).jsonQuoted } ?? "null"
            let lastError = provider.lastError.map { $0.jsonQuoted } ?? "null"
            return "{\"name\":\(provider.provider.jsonQuoted),\"usable\":\(provider.usable),\"keys\":\(provider.keyCount),"
                + "\"last_fetch\":\(lastFetch),\"last_error\":\(lastError)}"
        }.joined(separator: ",")
        let storeJSON = "{\"location\":\(location.jsonQuoted),\"connected\":\(store.connected),\"loaded\":\(store.loadedOnce),"
            + "\"unsaved\":\(store.unsaved.count),\"last_error\":\(store.lastError.map { $0.jsonQuoted } ?? "null")}"
        return "{\"ready\":\(ready),\"unavailable\":[\(unavailable)],\"providers\":[\(providers)],\"revocation_store\":\(storeJSON)}"
    }
}
