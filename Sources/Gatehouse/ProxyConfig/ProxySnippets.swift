import Foundation
import NIOHTTP1
import GatehouseSyntax
import GatehouseTokens
import GatehouseExchange
import GatehouseExtAuthz
import GatehouseVocabulary

/// The blocks of a proxy's configuration that name Gatehouse's identity headers, for the names of one configuration
/// (`IdentityHeaderCatalog`): what `gatehouse proxy-headers` prints and what the examples under deploy/ hold.
public enum ProxySnippets {
    public struct Unsupported: Error, CustomStringConvertible {
        public var description: String
    }

    public static func snippets(for proxy: ProxyKind, names: [String]) throws(Unsupported) -> [ProxySnippet] {
        switch proxy {
        case .nginx: try nginx(names)
        case .traefik: [traefik(names)]
        case .envoy: envoy(names)
        case .istio: [istio(names)]
        case .envoyGateway: [ProxySnippet(proxy: proxy, block: "http", lines: ["headersToBackend:"] + names.map { "  - " + $0.lowercased() })]
        case .gatewayAPI: [ProxySnippet(proxy: proxy, block: "http", lines: ["allowedResponseHeaders:"] + names.map { "  - " + $0.lowercased() })]
        }
    }

    /// Names `x-auth-*` does not cover: listed one by one where a proxy matches by prefix.
    static func outsidePrefix(_ names: [String]) -> [String] {
        names.map { $0.lowercased() }.filter { !$0.hasPrefix("x-auth-") }
    }

    // MARK: - nginx (auth_request)

    /// `location`: inside `location /`, every name set from Gatehouse's answer (an empty value: nginx sends no such
    /// header, and the client's copy never goes on), and what the answer's status, reason, `Retry-After` and request
    /// id were. `unavailable`: the named location that gives the client Gatehouse's 503 back (auth_request turns every
    /// status but 2xx, 401 and 403 into 500; its variables outlive that), rebuilt from those.
    static func nginx(_ names: [String]) throws(Unsupported) -> [ProxySnippet] {
        var identity = [
            "auth_request_set $gatehouse_status $upstream_status;",
            "auth_request_set $gatehouse_reason $upstream_http_x_gatehouse_reason;",
            "auth_request_set $gatehouse_retry_after $upstream_http_retry_after;",
            "auth_request_set $gatehouse_request_id $upstream_http_x_request_id;",
            "error_page 500 = @gatehouse_unavailable;",
        ]
        for name in names {
            let isLetterOrDigit = { (byte: UInt8) in (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) }
            guard name.utf8.allSatisfy({ isLetterOrDigit($0) || $0 == ASCIIByte.hyphen }) else {
                throw Unsupported(description: "nginx cannot name the header \(name) in a variable: use letters, digits and '-' only")
            }
            let variable = "$gatehouse_" + name.lowercased().replacingHyphens
            identity.append("auth_request_set \(variable) $upstream_http_\(name.lowercased().replacingHyphens);")
            identity.append("proxy_set_header \(name) \(variable);")
        }
        let unavailableReasons = FailureReason.allCases.filter { AuthFailure($0, "").status == .serviceUnavailable }
        var unavailable = [
            "location @gatehouse_unavailable {",
            "    if ($gatehouse_status != 503) { return 500; }",
            "    set $gatehouse_message \"Please try again.\";",
        ]
        for reason in unavailableReasons {
            unavailable.append("    if ($gatehouse_reason = \(reason.rawValue)) { set $gatehouse_message \"\(reason.message)\"; }")
        }
        unavailable += [
            "    add_header Retry-After $gatehouse_retry_after always;",
            "    add_header X-Request-Id $gatehouse_request_id always;",
            "    add_header Cache-Control no-store always;",
            "    default_type application/json;",
            "    return 503 '{\"error\":\"temporarily_unavailable\",\"reason\":\"$gatehouse_reason\",\"message\":\"$gatehouse_message\","
                + "\"request_id\":\"$gatehouse_request_id\"}';",
            "}",
        ]
        return [
            ProxySnippet(proxy: .nginx, block: "location", lines: identity),
            ProxySnippet(proxy: .nginx, block: "unavailable", lines: unavailable),
        ]
    }

    // MARK: - Traefik (ForwardAuth)

    /// Traefik deletes each listed name from the client's request, then copies Gatehouse's value if it sent one; the
    /// regular expression does the same for every `X-Auth-*` name and every `_` spelling (Traefik keeps those as sent).
    static func traefik(_ names: [String]) -> ProxySnippet {
        let others = outsidePrefix(names).map { name in
            name.split(separator: "-", omittingEmptySubsequences: false).map { part in
                part.map { character in character.isLetter || character.isNumber ? String(character) : "\\" + String(character) }.joined()
            }.joined(separator: "[-_]")
        }
        let regex = "(?i)^(" + (["x[-_]auth[-_].*"] + others).joined(separator: "|") + ")$"
        return ProxySnippet(proxy: .traefik, block: "forward-auth", lines: ["authResponseHeaders:"] + names.map { "  - " + $0 }
            + ["authResponseHeadersRegex: \"\(regex.replacingOccurrences(of: "\\", with: "\\\\"))\""])
    }

    // MARK: - Envoy (ext_authz)

    /// `removal`: the header_mutation entries that drop the client's copies before the check; `allow`: what Envoy's
    /// HTTP protocol copies from Gatehouse's 200 onto the request.
    static func envoy(_ names: [String]) -> [ProxySnippet] {
        let others = outsidePrefix(names)
        var removal = ["- remove_on_match:", "    key_matcher: {prefix: \"x-auth-\", ignore_case: true}"]
        for name in others { removal += ["- remove_on_match:", "    key_matcher: {exact: \"\(name)\", ignore_case: true}"] }
        let patterns = ["    - {prefix: \"x-auth-\", ignore_case: true}"] + others.map { "    - {exact: \"\($0)\", ignore_case: true}" }
        return [
            ProxySnippet(proxy: .envoy, block: "removal", lines: removal),
            ProxySnippet(proxy: .envoy, block: "allow", lines: ["allowed_upstream_headers:", "  patterns:"] + patterns),
        ]
    }

    // MARK: - Istio (envoyExtAuthzHttp)

    static func istio(_ names: [String]) -> ProxySnippet {
        let listed = (["\"x-auth-*\""] + outsidePrefix(names).map { "\"\($0)\"" }).joined(separator: ", ")
        return ProxySnippet(proxy: .istio, block: "allow", lines: ["headersToUpstreamOnAllow: [\(listed)]"])
    }
}

extension String {
    fileprivate var replacingHyphens: String { replacingOccurrences(of: "-", with: "_") }
}
