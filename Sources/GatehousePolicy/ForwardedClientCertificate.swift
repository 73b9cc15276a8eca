import Crypto
import Foundation
package import NIOHTTP1
import GatehouseSyntax
package import GatehouseConfig

/// The client certificate a proxy in front terminated mTLS for, as it forwards it in a header: Envoy's
/// `x-forwarded-client-cert` (`Hash=<hex SHA-256 of the DER>` or `Cert="<URL-encoded PEM>"`), or nginx's
/// `$ssl_client_escaped_cert` (URL-encoded PEM). Believed only from the configured proxy addresses; from
/// anyone else the header is ignored and not forwarded (`UpstreamRequestHead`).
package struct ForwardedClientCertificate: Sendable {
    package let headerName: String
    package let format: ClientCertificateHeaderFormat
    package let trustedProxies: [AddressRange]

    package init(headerName: String, format: ClientCertificateHeaderFormat, trustedProxies: [AddressRange]) {
        self.headerName = headerName
        self.format = format
        self.trustedProxies = trustedProxies
    }

    /// The listener's `client_certificate_header`, believed from its `trusted_proxies`; nil when none is configured.
    package init?(_ listen: ListenSettings) {
        guard let headerName = listen.clientCertificateHeader else { return nil }
        self.init(
            headerName: headerName, format: listen.clientCertificateHeaderFormat, trustedProxies: listen.trustedProxies)
    }

    package func trusts(_ ip: String) -> Bool {
        trustedProxies.contains { $0.contains(ip) }
    }

    /// Compared lower-cased with `_` read as `-`, like identity headers: an upstream that reads
    /// `X_Forwarded_Client_Cert` as the header must not get a client's copy under that spelling.
    package func isHeader(_ name: String) -> Bool {
        name.utf8.count == headerName.utf8.count
            && ASCIIByte.hasFoldedHeaderNamePrefix(name, headerName.utf8.map(ASCIIByte.foldedHeaderNameByte))
    }

    /// The `x5t#S256` of the forwarded certificate; nil when the client is not a trusted proxy, or the
    /// header is absent, repeated or unreadable.
    package func thumbprint(in headers: HTTPHeaders, clientIP: String) -> String? {
        guard trusts(clientIP) else { return nil }
        let values = headers[headerName]
        guard values.count == 1, let value = values.first else { return nil }
        switch format {
        case .pem:
            return Self.thumbprint(ofPEM: value.removingPercentEncoding ?? "")
        case .xfcc:
            // The element the nearest proxy added is the last; its pairs are `Key=value` or `Key="value"`.
            guard let element = Self.split(value, on: ",").last else { return nil }
            var pairs: [String: String] = [:]
            for pair in Self.split(element, on: ";") {
                guard let equals = pair.firstIndex(of: "=") else { continue }
                var item = String(pair[pair.index(after: equals)...])
                if item.count >= 2, item.hasPrefix("\""), item.hasSuffix("\"") { item = String(item.dropFirst().dropLast()) }
                pairs[pair[..<equals].trimmingCharacters(in: .whitespaces).lowercased()] = item
            }
            if let hash = pairs["hash"] {
                guard let digest = Self.hexBytes(hash), digest.count == 32 else { return nil }
                return Base64URL.encode(digest)
            }
            return pairs["cert"].flatMap { Self.thumbprint(ofPEM: $0.removingPercentEncoding ?? "") }
        }
    }

    /// The first certificate of a PEM text.
    package static func thumbprint(ofPEM pem: String) -> String? {
        guard let begin = pem.range(of: "-----BEGIN CERTIFICATE-----"),
              let end = pem.range(of: "-----END CERTIFICATE-----", range: begin.upperBound..<pem.endIndex)
        else { return nil }
        let body = pem[begin.upperBound..<end.lowerBound].filter { !$0.isWhitespace }
        guard let der = Data(base64Encoded: String(body)), !der.isEmpty else { return nil }
        return Base64URL.encode(SHA256.hash(data: der))
    }

    /// Splits on `separator` outside double quotes.
    private static func split(_ text: some StringProtocol, on separator: Character) -> [Substring] {
        var parts: [Substring] = []
        var quoted = false
        var start = text.startIndex
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            if character == "\"" { quoted.toggle() } else if character == separator, !quoted {
                parts.append(Substring(text[start..<index]))
                start = text.index(after: index)
            }
            index = text.index(after: index)
        }
        parts.append(Substring(text[start...]))
        return parts
    }

    private static func hexBytes(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let high = ASCIIByte.hexValue(digits[index]), let low = ASCIIByte.hexValue(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }
}
