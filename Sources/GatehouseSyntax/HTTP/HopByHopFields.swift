/// The hop-by-hop fields (RFC 9110 §7.6.1) Gatehouse never forwards nor relays, in one list for every path: a
/// request to the upstream (`HeaderHygiene`), an HTTP/1.1 upstream's response (`UpstreamResponseHeadParser`), an
/// HTTP/2 upstream's (`ResponseFields`), an ext_authz HTTP answer and Gatehouse's own heads (`HTTPHeadWriter`).
/// `Connection`, `Keep-Alive`, `TE`, `Trailer`, `Transfer-Encoding`, `Upgrade`, a bare `Proxy` (httpoxy: CGI
/// upstreams turn it into `HTTP_PROXY`) and every `Proxy-*`; names compare lower-cased with `_` read as `-`, as
/// identity headers do. What a `Connection` field names is hop-by-hop too: the callers that read one add those.
public enum HopByHopFields {
    @usableFromInline static let names: [[UInt8]] = ["connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade", "proxy"]
        .map { Array($0.utf8) }
    @usableFromInline static let proxyPrefix: [UInt8] = Array("proxy-".utf8)

    /// Whether a name, as written, is one.
    @inlinable public static func contains<Name: Collection<UInt8>>(_ name: Name) -> Bool {
        let count = name.count
        if count >= proxyPrefix.count, name.prefix(proxyPrefix.count).elementsEqual(proxyPrefix, by: folds) { return true }
        return names.contains { $0.count == count && name.elementsEqual($0, by: folds) }
    }

    @usableFromInline static func folds(_ byte: UInt8, to lowercase: UInt8) -> Bool {
        ASCIIByte.foldedHeaderNameByte(byte) == lowercase
    }
}
