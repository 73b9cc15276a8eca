/// The hop-by-hop fields (RFC 9110 §7.6.1) Gatehouse never forwards nor relays, in one list for every path: a
/// request to the upstream (`HeaderHygiene`), an HTTP/1.1 upstream's response (`UpstreamResponseHeadParser`), an
/// HTTP/2 upstream's (`ResponseFields`), an ext_authz HTTP answer and Gatehouse's own heads (`HTTPHeadWriter`).
/// `Connection`, `Keep-Alive`, `TE`, `Trailer`, `Transfer-Encoding`, `Upgrade`, a bare `Proxy` (httpoxy: CGI
/// upstreams turn it into `HTTP_PROXY`) and every `Proxy-*`; names compare lower-cased with `_` read as `-`, as
/// identity headers do. What a `Connection` field names is hop-by-hop too: the callers that read one add those.
public enum HopByHopFields {
    /// Whether a name, as written, is one: by its length first, so most names are compared with nothing.
    @inlinable public static func contains<Name: Collection<UInt8>>(_ name: Name) -> Bool {
        switch name.count {
        case 2: return isNamed(name, "te")
        case 5: return isNamed(name, "proxy")
        case 7: return isNamed(name, "trailer") || isNamed(name, "upgrade") || hasProxyPrefix(name)
        case 10: return isNamed(name, "connection") || isNamed(name, "keep-alive") || hasProxyPrefix(name)
        case 17: return isNamed(name, "transfer-encoding") || hasProxyPrefix(name)
        case ..<6: return false
        default: return hasProxyPrefix(name)
        }
    }

    /// `Proxy-*` (at least six bytes).
    @inlinable static func hasProxyPrefix<Name: Collection<UInt8>>(_ name: Name) -> Bool {
        let prefix: StaticString = "proxy-"
        return prefix.withUTF8Buffer { name.prefix($0.count).elementsEqual($0, by: folds) }
    }

    /// `name` (of `lowercase`'s length) is `lowercase`, its letters in any case, `_` read as `-`.
    @inlinable static func isNamed<Name: Collection<UInt8>>(_ name: Name, _ lowercase: StaticString) -> Bool {
        lowercase.withUTF8Buffer { name.elementsEqual($0, by: folds) }
    }

    @usableFromInline static func folds(_ byte: UInt8, to lowercase: UInt8) -> Bool {
        ASCIIByte.foldedHeaderNameByte(byte) == lowercase
    }
}
