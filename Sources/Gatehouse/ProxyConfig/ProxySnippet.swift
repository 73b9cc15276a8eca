/// A proxy in front of Gatehouse whose configuration names Gatehouse's identity headers (docs/reference.md §2, `proxy-headers`).
public enum ProxyKind: String, CaseIterable, Sendable {
    case nginx, traefik, envoy, istio
    case envoyGateway = "envoy-gateway"
    case gatewayAPI = "gateway-api"
}

/// One block of a proxy's configuration that `gatehouse proxy-headers` writes: between a `BEGIN` and an `END`
/// comment line, so a file can hold it among lines of its own and a check can find it again.
public struct ProxySnippet: Sendable, Equatable {
    public var proxy: ProxyKind
    /// Which block of that proxy's configuration (`identity`, `unavailable`, …).
    public var block: String
    public var lines: [String]

    public var beginMarker: String { "# BEGIN gatehouse proxy-headers \(proxy.rawValue) \(block)" }
    public var endMarker: String { "# END gatehouse proxy-headers \(proxy.rawValue) \(block)" }

    /// The block as printed: markers included, each line indented by `indent` spaces.
    public func text(indent: Int = 0) -> String {
        let pad = String(repeating: " ", count: indent)
        return ([beginMarker] + lines + [endMarker]).map { $0.isEmpty ? $0 : pad + $0 }.joined(separator: "\n")
    }

    /// Whether `file` holds this block, compared line by line once each line's indentation and leading `#`
    /// comment marks are set aside (a block may sit commented out in a YAML file, as an alternative).
    public func isContained(in file: String) -> Bool {
        found(in: file) == lines.map(Self.normalized)
    }

    /// The lines `file` has between this block's markers, normalized; nil without both markers.
    public func found(in file: String) -> [String]? {
        let fileLines = file.split(separator: "\n", omittingEmptySubsequences: false).map { Self.normalized(String($0)) }
        guard let begin = fileLines.firstIndex(of: Self.normalized(beginMarker)),
              let end = fileLines[begin...].firstIndex(of: Self.normalized(endMarker))
        else { return nil }
        return Array(fileLines[(begin + 1)..<end])
    }

    static func normalized(_ line: String) -> String {
        String(line.drop { $0 == " " || $0 == "\t" || $0 == "#" }).trimmingTrailingSpaces
    }
}

extension String {
    fileprivate var trimmingTrailingSpaces: String {
        var text = self
        while text.last == " " || text.last == "\t" { text.removeLast() }
        return text
    }
}
