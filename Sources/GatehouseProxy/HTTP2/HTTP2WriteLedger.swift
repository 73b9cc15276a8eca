package import NIOCore
package import GatehouseHTTP

/// The body credits an nghttp2 connection wrote to its channel and has not yet seen on the socket. A flush closes a
/// batch with one empty write carrying one promise (NIO completes writes in order: once it is done, so is every
/// write before it), so a stream's DATA costs no promise or closure of its own (issue 57).
package final class HTTP2WriteLedger {
    private var credits = CircularBuffer<HTTP2WriteCredit>(initialCapacity: 8)
    /// Credits written since the last flush: the batch the next flush closes.
    private var unbatched = 0
    /// The empty buffer each batch's promise rides on, made once.
    package let marker = ByteBuffer()

    package init() {}

    package func written(_ credit: HTTP2WriteCredit) {
        credits.append(credit)
        unbatched += 1
    }

    /// At a flush: the size of the batch it closes, nil when no credit was written since the last.
    package func closeBatch() -> Int? {
        guard unbatched > 0 else { return nil }
        defer { unbatched = 0 }
        return unbatched
    }

    /// The oldest batch, of `count` credits, is on the socket (or failed with the channel): each credit goes to `settle`.
    package func settle(_ count: Int, _ settle: (HTTP2WriteCredit) -> Void) {
        for _ in 0..<min(count, credits.count) {
            settle(credits.removeFirst())
        }
    }
}
