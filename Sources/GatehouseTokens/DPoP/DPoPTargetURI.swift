import GatehouseSyntax

/// The `htu` comparison of RFC 9449 §4.3 (check 9): an HTTP(S) URI, its query and fragment ignored
/// (on both sides: clients such as requests-oauth2client sign the URL with its query), brought to one form by RFC 3986 §6.2.2's syntax-based normalization (scheme and host case, the
/// scheme's default port, percent-encoding case, unreserved characters decoded, dot segments removed),
/// so that the proof's claim and the request's own URI are compared as the same text.
package enum DPoPTargetURI {
    /// nil when the text is not an absolute `http` or `https` URI with a host (and no user info).
    package static func normalized(_ text: some StringProtocol) -> String? {
        let bytes = Array(text.utf8)
        guard let schemeEnd = bytes.firstIndex(of: UInt8(ascii: ":")),
              schemeEnd + 2 < bytes.count, bytes[schemeEnd + 1] == ASCIIByte.slash, bytes[schemeEnd + 2] == ASCIIByte.slash
        else { return nil }
        let scheme = String(decoding: bytes[..<schemeEnd].map(ASCIIByte.lowercased), as: UTF8.self)
        let defaultPort: String
        switch scheme {
        case "http": defaultPort = "80"
        case "https": defaultPort = "443"
        default: return nil
        }
        let authorityStart = schemeEnd + 3
        var pathStart = authorityStart
        while pathStart < bytes.count, ![ASCIIByte.slash, UInt8(ascii: "?"), UInt8(ascii: "#")].contains(bytes[pathStart]) {
            pathStart += 1
        }
        guard let authority = normalizedAuthority(bytes[authorityStart..<pathStart], defaultPort: defaultPort) else { return nil }
        var pathEnd = pathStart
        while pathEnd < bytes.count, bytes[pathEnd] != UInt8(ascii: "?"), bytes[pathEnd] != UInt8(ascii: "#") { pathEnd += 1 }
        guard let path = normalizedPath(bytes[pathStart..<pathEnd]) else { return nil }
        return scheme + "://" + authority + path
    }

    /// The URI a request was sent to, as `htu` must name it: `origin` (scheme and authority) and the request
    /// target's path. An absolute-form target (`GET http://host/path`) is taken as the whole URI.
    package static func requestURI(origin: String, target: String) -> String? {
        if target.utf8.first == ASCIIByte.slash { return normalized(origin + target) }
        return normalized(target)
    }

    private static func normalizedAuthority(_ bytes: ArraySlice<UInt8>, defaultPort: String) -> String? {
        guard !bytes.isEmpty, !bytes.contains(UInt8(ascii: "@")) else { return nil }
        var host = bytes[...]
        var port: ArraySlice<UInt8> = []
        // The port follows the last colon, unless that colon is inside an IPv6 literal.
        if let colon = bytes.lastIndex(of: UInt8(ascii: ":")), !(bytes.first == UInt8(ascii: "[") && bytes.last == UInt8(ascii: "]")) {
            host = bytes[..<colon]
            port = bytes[(colon + 1)...]
            guard port.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
            while port.count > 1, port.first == UInt8(ascii: "0") { port = port.dropFirst() }
        }
        guard !host.isEmpty else { return nil }
        let hostText = String(decoding: host.map(ASCIIByte.lowercased), as: UTF8.self)
        let portText = String(decoding: port, as: UTF8.self)
        return portText.isEmpty || portText == defaultPort ? hostText : hostText + ":" + portText
    }

    /// Percent-encodings upper-cased (unreserved ones decoded), then dot segments removed; empty is `/`.
    private static func normalizedPath(_ bytes: ArraySlice<UInt8>) -> String? {
        var decoded: [UInt8] = []
        decoded.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            guard byte > 0x20, byte < 0x7F else { return nil }
            guard byte == ASCIIByte.percent else {
                decoded.append(byte)
                index += 1
                continue
            }
            guard let value = ASCIIByte.percentDecoded(bytes, at: index) else { return nil }
            if ASCIIByte.isUnreserved(value) {
                decoded.append(value)
            } else {
                decoded.append(contentsOf: [ASCIIByte.percent, ASCIIByte.upperHexDigit(value >> 4), ASCIIByte.upperHexDigit(value & 0x0F)])
            }
            index += 3
        }
        let path = removingDotSegments(String(decoding: decoded, as: UTF8.self))
        return path.isEmpty ? "/" : path
    }

    /// RFC 3986 §5.2.4, on the segments of an absolute path.
    private static func removingDotSegments(_ path: String) -> String {
        guard path.contains(".") else { return path }
        var output: [Substring] = []
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        for (position, segment) in segments.enumerated() {
            let isLast = position == segments.count - 1
            switch segment {
            case ".":
                if isLast { output.append("") }
            case "..":
                if !output.isEmpty { output.removeLast() }
                if isLast { output.append("") }
            default:
                output.append(segment)
            }
        }
        return "/" + output.joined(separator: "/")
    }
}
