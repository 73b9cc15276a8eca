import GatehouseSyntax

/// Turns a request target into the one canonical path used both for the route decision and for the
/// forward (docs/reference.md §5, docs/security.md P15, P16, P18), or rejects it when no single reading exists.
///
/// Rules, in the order they apply:
/// - origin-form only: the target must start with `/` (absolute-form, authority-form and `*` are rejected);
/// - the path ends at the first `?`; the query is kept verbatim and never used for routing;
/// - a `#`, a `\`, a control, a space, a non-ASCII byte or any of `"` `<` `>` `^` `` ` `` `{` `|` `}`
///   anywhere in the target is rejected (`[` and `]` are accepted as data);
/// - in the path, escapes of unreserved characters (ALPHA / DIGIT / `-` `.` `_` `~`) are decoded and every
///   other escape is kept with upper-case hex; `%2F` is data, never a separator; `%00`, `%5C` and broken
///   escapes (`%`, `%4`, `%zz`) are rejected;
/// - runs of `/` are merged, dot segments are removed (RFC 3986 §5.2.4, after decoding, so `%2e%2e` counts),
///   `..` never climbs above the root, and a trailing slash is kept;
/// - a segment that is `.` or `..` followed by `;` parameters (`..;`, `..;x`, `.;`, also written `..%3B`) is
///   rejected, because Tomcat and Jetty read it as a dot segment after we have routed it as data; so is a
///   segment that `%2F` splits into a dot piece (`..%2Fadmin`), which an upstream that decodes `%2F` before
///   resolving dot segments would climb with.
///
/// The query's escapes are not checked: it is the upstream's business and plays no part in the decision.
public enum PathNormalizer {
    /// The canonical form of `target`, or nil when the request must be answered 400.
    ///
    /// An already-canonical target (the common case) costs one scan and no allocation beyond the result.
    public static func normalize(_ target: String) -> NormalizedTarget? {
        let contiguous: ScanResult?? = target.utf8.withContiguousStorageIfAvailable(scanAndRewrite)
        let scanned = contiguous ?? Array(target.utf8).withUnsafeBufferPointer(scanAndRewrite)
        guard let scanned else { return nil }
        let pathEnd = scanned.pathEnd

        let utf8 = target.utf8
        // Every byte before the query is ASCII (checked), so byte offsets are character boundaries.
        let pathEndIndex = utf8.index(utf8.startIndex, offsetBy: pathEnd)
        let query: Substring? = pathEndIndex == utf8.endIndex ? nil : target[utf8.index(after: pathEndIndex)...]
        if let rewritten = scanned.rewrittenPath {
            return NormalizedTarget(path: rewritten, query: query)
        }
        let path = query == nil ? target : String(target[..<pathEndIndex])
        return NormalizedTarget(path: path, query: query)
    }

    /// Where the path ends, and the canonical path when the original one is not already canonical.
    private struct ScanResult {
        var pathEnd: Int
        var rewrittenPath: String?
    }

    private static func scanAndRewrite(_ bytes: UnsafeBufferPointer<UInt8>) -> ScanResult? {
        guard let (pathEnd, needsRewrite) = scan(bytes) else { return nil }
        guard needsRewrite else { return ScanResult(pathEnd: pathEnd, rewrittenPath: nil) }
        guard let rewritten = rewrite(bytes, pathEnd: pathEnd) else { return nil }
        return ScanResult(pathEnd: pathEnd, rewrittenPath: rewritten)
    }

    /// Validates every byte of the target and finds where the path ends; `needsRewrite` is false only when
    /// the path is certainly canonical already (no escape, no empty segment, no segment that may be a dot one).
    private static func scan(_ bytes: UnsafeBufferPointer<UInt8>) -> (pathEnd: Int, needsRewrite: Bool)? {
        guard bytes.first == ASCIIByte.slash else { return nil }
        var needsRewrite = false
        var previous: UInt8 = 0
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == ASCIIByte.question { break }
            guard ASCIIByte.isPathByte(byte) else { return nil }
            if byte == ASCIIByte.percent {
                needsRewrite = true
            } else if previous == ASCIIByte.slash, byte == ASCIIByte.slash || (byte == ASCIIByte.dot && mayBeDotSegment(bytes, at: index)) {
                needsRewrite = true
            }
            previous = byte
            index += 1
        }
        let pathEnd = index
        index += 1
        while index < bytes.count {
            guard ASCIIByte.isQueryByte(bytes[index]) else { return nil }
            index += 1
        }
        return (pathEnd, needsRewrite)
    }

    /// Whether the segment starting at `start` (a `.`) may be `.`, `..` or one of those with parameters.
    private static func mayBeDotSegment(_ bytes: UnsafeBufferPointer<UInt8>, at start: Int) -> Bool {
        func endsSegment(_ index: Int) -> Bool {
            guard index < bytes.count else { return true }
            let byte = bytes[index]
            return byte == ASCIIByte.slash || byte == ASCIIByte.question || byte == ASCIIByte.semicolon
        }
        if endsSegment(start + 1) { return true }
        return bytes[start + 1] == ASCIIByte.dot && endsSegment(start + 2)
    }

    /// The slow path: decodes, merges and resolves into a fresh string. The result is never longer than the
    /// input path (decoding shrinks, removal shrinks, and a trailing slash only replaces a removed `/.`).
    private static func rewrite(_ bytes: UnsafeBufferPointer<UInt8>, pathEnd: Int) -> String? {
        var rejected = false
        let path = String(unsafeUninitializedCapacity: pathEnd) { out in
            var writer = SegmentWriter(out: out)
            var read = 0
            while read < pathEnd {
                read += 1  // the '/' that starts this segment
                writer.beginSegment()
                while read < pathEnd, bytes[read] != ASCIIByte.slash {
                    let byte = bytes[read]
                    if byte == ASCIIByte.percent {
                        guard read + 2 < pathEnd, writer.appendEscape(high: bytes[read + 1], low: bytes[read + 2]) else {
                            rejected = true
                            return 0
                        }
                        read += 3
                    } else {
                        writer.append(byte)
                        read += 1
                    }
                }
                guard writer.endSegment(isLast: read >= pathEnd) else {
                    rejected = true
                    return 0
                }
            }
            return writer.finish()
        }
        return rejected ? nil : path
    }
}

/// Writes canonical segments into the output buffer, each as `/` + content.
private struct SegmentWriter {
    let out: UnsafeMutableBufferPointer<UInt8>
    var count = 0
    var segmentStart = 0
    var segmentHasEncodedSlash = false

    init(out: UnsafeMutableBufferPointer<UInt8>) {
        self.out = out
    }

    mutating func beginSegment() {
        segmentStart = count
        segmentHasEncodedSlash = false
        append(ASCIIByte.slash)
    }

    mutating func append(_ byte: UInt8) {
        out[count] = byte
        count += 1
    }

    /// Decodes an unreserved character, keeps any other escape in upper case; false for a broken escape,
    /// `%00` or `%5C`.
    mutating func appendEscape(high: UInt8, low: UInt8) -> Bool {
        guard let highValue = ASCIIByte.hexValue(high), let lowValue = ASCIIByte.hexValue(low) else { return false }
        let decoded = highValue << 4 | lowValue
        if decoded == 0 || decoded == ASCIIByte.backslash { return false }
        if ASCIIByte.isUnreserved(decoded) {
            append(decoded)
            return true
        }
        append(ASCIIByte.percent)
        append(ASCIIByte.upperHexDigit(highValue))
        append(ASCIIByte.upperHexDigit(lowValue))
        if decoded == ASCIIByte.slash { segmentHasEncodedSlash = true }
        return true
    }

    /// Applies RFC 3986 §5.2.4 to the segment just written; false when the segment is ambiguous.
    mutating func endSegment(isLast: Bool) -> Bool {
        let content = UnsafeBufferPointer(rebasing: out[(segmentStart + 1)..<count])
        switch DotSegment.classify(content) {
        case .empty:
            // An empty segment before another one is a `//` run: merge it. At the end it is the trailing slash.
            if !isLast { count = segmentStart }
        case .current:
            count = segmentStart
            if isLast { append(ASCIIByte.slash) }
        case .parent:
            count = segmentStart
            while count > 0 {
                count -= 1
                if out[count] == ASCIIByte.slash { break }
            }
            if isLast { append(ASCIIByte.slash) }
        case .withParameters:
            return false
        case .other:
            if segmentHasEncodedSlash, DotSegment.hasDotPieceAroundEncodedSlash(content) { return false }
        }
        return true
    }

    mutating func finish() -> Int {
        if count == 0 { append(ASCIIByte.slash) }
        return count
    }
}

/// How a decoded, canonical segment reads as far as dot segments are concerned.
private enum DotSegment {
    case empty, current, parent, withParameters, other

    static func classify(_ content: UnsafeBufferPointer<UInt8>) -> DotSegment {
        guard let first = content.first else { return .empty }
        guard first == ASCIIByte.dot else { return .other }
        if content.count == 1 { return .current }
        if startsWithParameters(content, at: 1) { return .withParameters }
        guard content[1] == ASCIIByte.dot else { return .other }
        if content.count == 2 { return .parent }
        return startsWithParameters(content, at: 2) ? .withParameters : .other
    }

    /// `;` or its escape `%3B` at `index` (escapes are upper-case by now).
    private static func startsWithParameters(_ content: UnsafeBufferPointer<UInt8>, at index: Int) -> Bool {
        if content[index] == ASCIIByte.semicolon { return true }
        return index + 2 < content.count && content[index] == ASCIIByte.percent && content[index + 1] == UInt8(ascii: "3")
            && content[index + 2] == UInt8(ascii: "B")
    }

    /// Whether splitting the segment at `%2F` would yield a `.` or `..` piece (with or without parameters).
    static func hasDotPieceAroundEncodedSlash(_ content: UnsafeBufferPointer<UInt8>) -> Bool {
        var pieceStart = 0
        var index = 0
        while index <= content.count {
            let atEncodedSlash = index + 2 < content.count && content[index] == ASCIIByte.percent
                && content[index + 1] == UInt8(ascii: "2") && content[index + 2] == UInt8(ascii: "F")
            if index == content.count || atEncodedSlash {
                let piece = UnsafeBufferPointer(rebasing: content[pieceStart..<index])
                switch classify(piece) {
                case .current, .parent, .withParameters: return true
                case .empty, .other: break
                }
                index += atEncodedSlash ? 3 : 1
                pieceStart = index
            } else {
                index += 1
            }
        }
        return false
    }
}
