public import AsyncHTTPClient
import Foundation
import NIOConcurrencyHelpers
public import NIOCore
import NIOHTTP1
import NIOSSL
import GatehouseSyntax
public import GatehouseTokens

/// Fetches a provider's JWKS (through OIDC discovery where configured) over the control-plane
/// HTTP client. Redirects are never followed: the client is built with `.disallow`.
public struct JWKSFetcher: Sendable {
    /// What one successful fetch brought.
    public struct Fetched: Sendable {
        public var keySet: JWKSet
        /// From `Cache-Control: max-age` or `Expires`, unclamped; nil when the response has neither.
        public var freshFor: Duration?
        /// How long a cache on the way had held the document (`Age`, RFC 9111 §5.1): zero without one,
        /// nil when the header cannot be read.
        public var age: Duration?
        public var body: [UInt8]
        /// OIDC discovery's `backchannel_logout_supported` (nil: the keys were not found through discovery).
        public var announcesBackchannelLogout: Bool? = nil
    }

    public struct FetchError: Error, Sendable, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    /// Largest JWKS or discovery document accepted (real ones are a few KiB).
    static let maxDocumentBytes = 1 << 20

    package let client: HTTPClient
    package let timeout: Duration

    public init(client: HTTPClient, timeout: Duration) {
        self.client = client
        self.timeout = timeout
    }

    /// Fetches and parses the key set for `provider`, completing on `eventLoop`.
    public func fetch(_ provider: Provider, on eventLoop: any EventLoop) -> EventLoopFuture<Fetched> {
        let deadline = NIODeadline.now() + TimeAmount(timeout)
        let jwksURL: EventLoopFuture<URL>
        let announced = NIOLockedValueBox<Bool?>(nil)
        switch provider.keySource {
        case .jwksURL(let url):
            jwksURL = eventLoop.makeSucceededFuture(url)
        case .discovery(let issuer):
            jwksURL = discoverJWKSURL(issuer: issuer, deadline: deadline, on: eventLoop).map { discovered in
                announced.withLockedValue { $0 = discovered.announcesBackchannelLogout }
                return discovered.jwksURL
            }
        case .introspection:
            return eventLoop.makeFailedFuture(FetchError("provider \(provider.name) has no keys (its tokens are introspected)"))
        case .kubernetes(let api):
            jwksURL = eventLoop.makeSucceededFuture(api.url.appendingPathComponent("openid/v1/jwks"))
        }
        let algorithms = provider.algorithms
        let access: (headers: [(String, String)], tls: TLSConfiguration?)
        do {
            access = try Self.access(provider.keySource)
        } catch {
            return eventLoop.makeFailedFuture(error)
        }
        return jwksURL.flatMap { url in
            self.get(url, deadline: deadline, on: eventLoop, headers: access.headers, tls: access.tls)
        }.flatMapThrowing { response in
            let body = Array(buffer: response.body ?? ByteBuffer())
            do {
                let keySet = try JWKSet.parse(body, allowedAlgorithms: algorithms)
                return Fetched(
                    keySet: keySet, freshFor: CacheLifetime.freshness(of: response.headers, now: Date()), age: CacheLifetime.age(of: response.headers),
                    body: body, announcesBackchannelLogout: announced.withLockedValue { $0 })
            } catch {
                throw FetchError("unusable JWKS: \(error)")
            }
        }
    }

    private func discoverJWKSURL(
        issuer: String, deadline: NIODeadline, on eventLoop: any EventLoop
    ) -> EventLoopFuture<(jwksURL: URL, announcesBackchannelLogout: Bool)> {
        let trimmed = issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer
        guard let url = URL(string: trimmed + "/.well-known/openid-configuration") else {
            return eventLoop.makeFailedFuture(FetchError("issuer \(issuer) is not a URL"))
        }
        return get(url, deadline: deadline, on: eventLoop).flatMapThrowing { response in
            let body = Array(buffer: response.body ?? ByteBuffer())
            guard case .object(let document)? = try? StrictJSON.parse(body) else {
                throw FetchError("discovery document at \(url) is not a JSON object")
            }
            guard document["issuer"]?.stringValue == issuer else {
                throw FetchError("discovery issuer \(document["issuer"]?.stringValue ?? "(none)") does not equal \(issuer)")
            }
            guard let jwks = document["jwks_uri"]?.stringValue, let jwksURL = URL(string: jwks),
                jwksURL.scheme == "https" || jwksURL.scheme == "http"
            else {
                throw FetchError("discovery document at \(url) has no usable jwks_uri")
            }
            return (jwksURL, document["backchannel_logout_supported"] == .bool(true))
        }
    }

    /// A Kubernetes API server is asked over TLS checked against the cluster CA, with the token file read now
    /// (the kubelet rotates it); every other key source plainly.
    private static func access(_ source: Provider.KeySource) throws(FetchError) -> (headers: [(String, String)], tls: TLSConfiguration?) {
        guard case .kubernetes(let api) = source else { return ([], nil) }
        return try kubernetesAccess(api)
    }

    /// The API server's TLS (its CA) and the pod's token, read now.
    static func kubernetesAccess(_ api: KubernetesAPI) throws(FetchError) -> (headers: [(String, String)], tls: TLSConfiguration?) {
        guard let data = FileManager.default.contents(atPath: api.tokenFile),
              let token = String(data: data, encoding: .utf8)?.trimmingCharacters(in: .whitespacesAndNewlines), !token.isEmpty
        else { throw FetchError("cannot read the service-account token file \(api.tokenFile)") }
        var tls = TLSConfiguration.makeClientConfiguration()
        do {
            tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(api.caFile))
        } catch {
            throw FetchError("cannot read the cluster CA file \(api.caFile): \(error)")
        }
        return ([("Authorization", "Bearer " + token)], tls)
    }

    private func get(
        _ url: URL, deadline: NIODeadline, on eventLoop: any EventLoop, headers extra: [(String, String)] = [], tls: TLSConfiguration? = nil
    ) -> EventLoopFuture<HTTPClient.Response> {
        let request: HTTPClient.Request
        do {
            var headers: HTTPHeaders = ["Accept": "application/json"]
            headers.add(contentsOf: extra)
            request = try HTTPClient.Request(url: url, method: .GET, headers: headers, body: nil, tlsConfiguration: tls)
        } catch {
            return eventLoop.makeFailedFuture(FetchError("bad URL \(url): \(error)"))
        }
        let accumulator = ResponseAccumulator(request: request, maxBodySize: Self.maxDocumentBytes)
        return client.execute(request: request, delegate: accumulator, eventLoop: .delegate(on: eventLoop), deadline: deadline)
            .futureResult
            .flatMapErrorThrowing { error in throw FetchError("GET \(url): \(error)") }
            .flatMapThrowing { response in
                guard (200..<300).contains(response.status.code) else {
                    throw FetchError("GET \(url): HTTP \(response.status.code)")
                }
                return response
            }
    }
}
