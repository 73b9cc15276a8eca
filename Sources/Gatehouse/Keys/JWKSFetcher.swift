public import AsyncHTTPClient
import Foundation
public import NIOCore
import NIOHTTP1

/// Fetches a provider's JWKS (through OIDC discovery where configured) over the control-plane
/// HTTP client. Redirects are never followed: the client is built with `.disallow`.
public struct JWKSFetcher: Sendable {
    /// What one successful fetch brought.
    public struct Fetched: Sendable {
        public var keySet: JWKSet
        /// From `Cache-Control: max-age` or `Expires`, unclamped; nil when the response has neither.
        public var freshFor: Duration?
        public var body: [UInt8]
    }

    public struct FetchError: Error, Sendable, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    /// Largest JWKS or discovery document accepted (real ones are a few KiB).
    static let maxDocumentBytes = 1 << 20

    let client: HTTPClient
    let timeout: Duration

    public init(client: HTTPClient, timeout: Duration) {
        self.client = client
        self.timeout = timeout
    }

    /// Fetches and parses the key set for `provider`, completing on `eventLoop`.
    public func fetch(_ provider: Provider, on eventLoop: any EventLoop) -> EventLoopFuture<Fetched> {
        let deadline = NIODeadline.now() + TimeAmount(timeout)
        let jwksURL: EventLoopFuture<URL>
        switch provider.keySource {
        case .jwksURL(let url):
            jwksURL = eventLoop.makeSucceededFuture(url)
        case .discovery(let issuer):
            jwksURL = discoverJWKSURL(issuer: issuer, deadline: deadline, on: eventLoop)
        case .introspection:
            return eventLoop.makeFailedFuture(FetchError("provider \(provider.name) has no keys (its tokens are introspected)"))
        }
        let algorithms = provider.algorithms
        return jwksURL.flatMap { url in
            self.get(url, deadline: deadline, on: eventLoop)
        }.flatMapThrowing { response in
            let body = Array(buffer: response.body ?? ByteBuffer())
            do {
                let keySet = try JWKSet.parse(body, allowedAlgorithms: algorithms)
                return Fetched(keySet: keySet, freshFor: CacheLifetime.freshness(of: response.headers), body: body)
            } catch {
                throw FetchError("unusable JWKS: \(error)")
            }
        }
    }

    private func discoverJWKSURL(issuer: String, deadline: NIODeadline, on eventLoop: any EventLoop) -> EventLoopFuture<URL> {
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
            return jwksURL
        }
    }

    private func get(_ url: URL, deadline: NIODeadline, on eventLoop: any EventLoop) -> EventLoopFuture<HTTPClient.Response> {
        let request: HTTPClient.Request
        do {
            request = try HTTPClient.Request(url: url, method: .GET, headers: ["Accept": "application/json"])
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

extension TimeAmount {
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds.multipliedReportingOverflow(by: 1_000_000_000).partialValue + attoseconds / 1_000_000_000)
    }
}
