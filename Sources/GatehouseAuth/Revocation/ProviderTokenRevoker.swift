package import AsyncHTTPClient
package import Foundation
package import NIOCore
import NIOHTTP1
import GatehouseSyntax
package import GatehouseConfig
package import GatehouseTokens

/// Revokes a refresh token at its provider (RFC 7009) when a sign-out carries one: Google's
/// `https://oauth2.googleapis.com/revoke`, Cognito's `<domain>/oauth2/revoke` (with the token's
/// `client_id`), an OIDC provider's discovery `revocation_endpoint`, or `revocation_endpoint`.
package struct ProviderTokenRevoker: Sendable {
    package enum Endpoint: Sendable, Equatable {
        /// `client_id` joins the form: Cognito requires it.
        case url(URL, sendsClientID: Bool)
        /// Read from `<issuer>/.well-known/openid-configuration` at sign-out time (rare; no caching needed).
        case discovery(issuer: String)
    }

    struct Unavailable: Error, CustomStringConvertible {
        var description: String
    }

    package let endpoints: [Int: Endpoint]
    package let client: HTTPClient
    package let timeout: Duration

    package init(endpoints: [Int: Endpoint], client: HTTPClient, timeout: Duration) {
        self.endpoints = endpoints
        self.client = client
        self.timeout = timeout
    }

    /// By provider index: the explicit `revocation_endpoint`, else the preset's, else discovery's.
    package static func endpoints(for providers: [ProviderSettings]) -> [Int: Endpoint] {
        var endpoints: [Int: Endpoint] = [:]
        for (index, provider) in providers.enumerated() {
            let sendsClientID = provider.type == .cognito
            if let url = provider.revocationEndpoint {
                endpoints[index] = .url(url, sendsClientID: sendsClientID)
                continue
            }
            switch provider.type {
            case .google: endpoints[index] = .url(GooglePreset.revocationEndpoint, sendsClientID: false)
            case .cognito: if let domain = provider.domain { endpoints[index] = .url(domain.appendingPathComponent("oauth2/revoke"), sendsClientID: true) }
            case .oidc: if let issuer = provider.issuer { endpoints[index] = .discovery(issuer: issuer) }
            case .apple, .firebase, .jwks, .introspection, .entra, .kubernetes: break
            }
        }
        return endpoints
    }

    /// Succeeds when the provider revoked the token or says it is no longer valid (a retry is
    /// idempotent); fails when it cannot be reached or refuses. Without an endpoint there is nothing to do.
    package func revoke(refreshToken: String, identity: VerifiedIdentity, on eventLoop: any EventLoop) -> EventLoopFuture<Void> {
        let deadline = NIODeadline.now() + TimeAmount(timeout)
        switch endpoints[identity.providerIndex] {
        case nil:
            return eventLoop.makeSucceededVoidFuture()
        case .url(let url, let sendsClientID):
            let clientID = sendsClientID ? (identity.claim("client_id")?.stringValue ?? identity.claim("aud")?.stringValue) : nil
            return post(url, refreshToken: refreshToken, clientID: clientID, deadline: deadline, on: eventLoop)
        case .discovery(let issuer):
            return discoverEndpoint(issuer: issuer, deadline: deadline, on: eventLoop).flatMap { url in
                guard let url else { return eventLoop.makeSucceededVoidFuture() }
                return post(url, refreshToken: refreshToken, clientID: nil, deadline: deadline, on: eventLoop)
            }
        }
    }

    private func post(_ url: URL, refreshToken: String, clientID: String?, deadline: NIODeadline, on eventLoop: any EventLoop) -> EventLoopFuture<Void> {
        var form = "token=" + FormEncoding.encode(refreshToken) + "&token_type_hint=refresh_token"
        if let clientID { form += "&client_id=" + FormEncoding.encode(clientID) }
        let request: HTTPClient.Request
        do {
            request = try HTTPClient.Request(
                url: url, method: .POST,
                headers: ["Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"], body: .string(form))
        } catch {
            return eventLoop.makeFailedFuture(Unavailable(description: "bad revocation endpoint \(url): \(error)"))
        }
        return execute(request, deadline: deadline, on: eventLoop).flatMapThrowing { response in
            if (200..<300).contains(response.status.code) { return }
            // RFC 7009 §2.2: an invalid or already revoked token is not an error for the caller.
            if response.status == .badRequest, let body = response.body,
                case .object(let document)? = try? StrictJSON.parse(Array(buffer: body)),
                let error = document["error"]?.stringValue, error == "invalid_token" || error == "invalid_grant"
            {
                return
            }
            throw Unavailable(description: "POST \(url): HTTP \(response.status.code)")
        }
    }

    private func discoverEndpoint(issuer: String, deadline: NIODeadline, on eventLoop: any EventLoop) -> EventLoopFuture<URL?> {
        let trimmed = issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer
        let request: HTTPClient.Request
        do {
            request = try HTTPClient.Request(url: trimmed + "/.well-known/openid-configuration", method: .GET, headers: ["Accept": "application/json"])
        } catch {
            return eventLoop.makeFailedFuture(Unavailable(description: "bad issuer \(issuer): \(error)"))
        }
        return execute(request, deadline: deadline, on: eventLoop).flatMapThrowing { response in
            guard response.status == .ok, let body = response.body,
                case .object(let document)? = try? StrictJSON.parse(Array(buffer: body))
            else {
                throw Unavailable(description: "discovery for \(issuer): HTTP \(response.status.code)")
            }
            return document["revocation_endpoint"]?.stringValue.flatMap { URL(string: $0) }
        }
    }

    private func execute(_ request: HTTPClient.Request, deadline: NIODeadline, on eventLoop: any EventLoop) -> EventLoopFuture<HTTPClient.Response> {
        client.execute(
            request: request, delegate: ResponseAccumulator(request: request, maxBodySize: 64 << 10),
            eventLoop: .delegate(on: eventLoop), deadline: deadline
        ).futureResult.flatMapErrorThrowing { error in
            throw Unavailable(description: "\(request.method) \(request.url): \(error)")
        }
    }
}
