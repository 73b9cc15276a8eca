/// A `[[route]] mcp_methods` / `mcp_tools` pattern: `*` matches any run of characters (none included), every other
/// character itself, compared byte for byte (`delete_*` matches `delete_repo`, not `Delete_repo`).
public struct GlobPattern: Sendable, Equatable {
    public let source: String
    /// The literal pieces between the stars.
    private let pieces: [[UInt8]]

    public init(_ source: String) {
        self.source = source
        pieces = source.utf8.split(separator: UInt8(ascii: "*"), omittingEmptySubsequences: false).map(Array.init)
    }

    /// Whether `text` matches, read in place (no copy of its bytes).
    public func matches(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { matches($0) }
    }

    private func matches(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard pieces.count > 1 else { return bytes.elementsEqual(pieces[0]) }
        // The first piece anchors at the start, the last at the end, the ones between are found leftmost (leftmost is enough: what a later piece needs stays after it).
        let first = pieces[0], last = pieces[pieces.count - 1]
        guard bytes.count >= first.count + last.count, bytes.starts(with: first), bytes.suffix(last.count).elementsEqual(last) else { return false }
        var position = first.count
        let end = bytes.count - last.count
        for piece in pieces.dropFirst().dropLast() where !piece.isEmpty {
            guard let found = Self.find(piece, in: bytes, from: position, before: end) else { return false }
            position = found + piece.count
        }
        return true
    }

    private static func find(_ piece: [UInt8], in bytes: UnsafeBufferPointer<UInt8>, from start: Int, before end: Int) -> Int? {
        guard end - start >= piece.count else { return nil }
        var index = start
        while index + piece.count <= end {
            if UnsafeBufferPointer(rebasing: bytes[index..<(index + piece.count)]).elementsEqual(piece) { return index }
            index += 1
        }
        return nil
    }
}
