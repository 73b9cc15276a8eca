import Synchronization
package import GatehouseSyntax

/// The parsed headers of recent tokens, by their exact header segment. One issuer's key signs every
/// token with the same header (`{"alg":"RS256","kid":"…","typ":"JWT"}`), so a token never seen before
/// usually has a header seen a moment ago: its base64url and JSON are then not decoded again.
///
/// A fixed number of slots, chosen by the segment's hash; a new header takes its slot's place. Only
/// segments that parsed are kept, and a hit is the same bytes, so it is the same header: what the
/// memo holds changes how fast a header is read, never what it reads as. Anyone can send headers,
/// so it is bounded whatever they send: `slotCount` headers of at most a token's size.
package final class JWSHeaderMemo: Sendable {
    package static let slotCount = 64

    private struct Entry: Sendable {
        let segment: [UInt8]
        let header: [String: JSONValue]
    }

    private let slots = Mutex<[Entry?]>(Array(repeating: nil, count: JWSHeaderMemo.slotCount))

    package init() {}

    /// The header parsed from exactly these bytes before, if its slot still holds it.
    package func header(for segment: UnsafeBufferPointer<UInt8>) -> [String: JSONValue]? {
        let index = Self.slot(of: segment)
        return slots.withLock { slots in
            guard let entry = slots[index], entry.segment.elementsEqual(segment) else { return nil }
            return entry.header
        }
    }

    /// Keeps `header`, parsed from `segment`, in the segment's slot.
    package func remember(_ header: [String: JSONValue], for segment: UnsafeBufferPointer<UInt8>) {
        let entry = Entry(segment: Array(segment), header: header)
        let index = Self.slot(of: segment)
        slots.withLock { $0[index] = entry }
    }

    private static func slot(of segment: UnsafeBufferPointer<UInt8>) -> Int {
        var hasher = Hasher()
        hasher.combine(bytes: UnsafeRawBufferPointer(segment))
        return Int(UInt(bitPattern: hasher.finalize()) % UInt(slotCount))
    }
}
