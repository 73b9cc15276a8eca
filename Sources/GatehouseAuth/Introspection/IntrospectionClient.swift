package import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import GatehouseSyntax
package import GatehouseConfig

/// The calls to an introspection provider: its endpoint from RFC 8414 metadata when not configured
/// (`/.well-known/oauth-authorization-server` inserted before the issuer's path, as RFC 8414 §3.1 says,
/// then OpenID discovery), and the RFC 7662 POST with client authentication. Redirects are never
/// followed (the control-plane client disallows them); answers are read up to a limit.
package struct IntrospectionClient: Sendable {
    package let client: HTTPClient
    package let settings: IntrospectionSettings
    package let issuer: String?
    package let clientSecret: String?
    package let timeout: Duration

    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    /// The status and body of the issuer's answer about `token`.
    func introspect(_ token: Substring, endpoint: URL, on eventLoop: any EventLoop) -> EventLoopFuture<(UInt, [UInt8])> {
        var form = [("token", String(token)), ("token_type_hint", "access_token")]
        var headers: HTTPHeaders = ["Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"]
        switch settings.clientAuth {
        case .basic:
            // RFC 6749 §2.3.1: both parts form-encoded before they are joined and base64-encoded.
            let credentials = Self.formEncoded(settings.clientID) + ":" + Self.formEncoded(clientSecret ?? "")
            headers.add(name: "Authorization", value: "Basic " + Data(credentials.utf8).base64EncodedString())
        case .post:
            form.append(("client_id", settings.clientID))
            if let clientSecret { form.append(("client_secret", clientSecret)) }
        }
        let body = form.map { Self.formEncoded($0.0) + "=" + Self.formEncoded($0.1) }.joined(separator: "&")
        return send(endpoint, method: .POST, headers: headers, body: body, on: eventLoop)
    }

    /// `introspection_endpoint` from the issuer's metadata.
    func discoverEndpoint(on eventLoop: any EventLoop) -> EventLoopFuture<URL> {
        guard let issuer, let url = URL(string: issuer), let host = url.host, let scheme = url.scheme else {
            return eventLoop.makeFailedFuture(Failure(description: "no introspection_endpoint and no issuer to discover it from"))
        }
        let path = url.path == "/" ? "" : url.path
        let origin = scheme + "://" + (host.contains(":") ? "[\(host)]" : host) + (url.port.map { ":\($0)" } ?? "")
        let trimmed = issuer.hasSuffix("/") ? String(issuer.dropLast()) : issuer
        let candidates = [origin + "/.well-known/oauth-authorization-server" + path, trimmed + "/.well-known/openid-configuration"]
        return metadataEndpoint(candidates[...], on: eventLoop)
    }

    private func metadataEndpoint(_ candidates: ArraySlice<String>, on eventLoop: any EventLoop) -> EventLoopFuture<URL> {
        guard let first = candidates.first, let url = URL(string: first) else {
            return eventLoop.makeFailedFuture(Failure(description: "the issuer's metadata names no introspection_endpoint"))
        }
        return send(url, method: .GET, headers: ["Accept": "application/json"], body: nil, on: eventLoop).flatMap { status, body in
            guard status == 200, case .object(let document)? = try? StrictJSON.parse(body), document["issuer"]?.stringValue == issuer,
                  let endpoint = document["introspection_endpoint"]?.stringValue.flatMap(URL.init(string:)),
                  endpoint.scheme == "https" || endpoint.scheme == "http"
            else { return metadataEndpoint(candidates.dropFirst(), on: eventLoop) }
            return eventLoop.makeSucceededFuture(endpoint)
        }.flatMapError { _ in metadataEndpoint(candidates.dropFirst(), on: eventLoop) }
    }

    private func send(
        _ url: URL, method: HTTPMethod, headers: HTTPHeaders, body: String?, on eventLoop: any EventLoop
    ) -> EventLoopFuture<(UInt, [UInt8])> {
        let request: HTTPClient.Request
        do {
            request = try HTTPClient.Request(url: url, method: method, headers: headers, body: body.map { .string($0) })
        } catch {
            return eventLoop.makeFailedFuture(Failure(description: "bad URL \(url): \(error)"))
        }
        let accumulator = ResponseAccumulator(request: request, maxBodySize: IntrospectionAnswer.maxBodyBytes)
        return client.execute(
            request: request, delegate: accumulator, eventLoop: .delegate(on: eventLoop), deadline: .now() + TimeAmount(timeout)
        ).futureResult.map { response in
            (response.status.code, Array(buffer: response.body ?? ByteBuffer()))
        }.flatMapErrorThrowing { error in
            throw Failure(description: "\(method.rawValue) \(url): \(error)")
        }
    }

    /// application/x-www-form-urlencoded: everything but unreserved characters percent-encoded.
    static func formEncoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            if ASCIIByte.isUnreserved(byte) {
                out.append(Character(UnicodeScalar(byte)))
            } else {
                out += "%" + String(UnicodeScalar(ASCIIByte.upperHexDigit(byte >> 4))) + String(UnicodeScalar(ASCIIByte.upperHexDigit(byte & 0xF)))
            }
        }
        return out
    }
}
