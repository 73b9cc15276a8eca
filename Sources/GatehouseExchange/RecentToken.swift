import Foundation
package import NIOCore
package import GatehouseHTTP
package import GatehouseTokens

/// The identity fields an upstream head was written with: an HTTP/1.1 head's bytes, or an HTTP/2 header list's
/// entries. Written again as they were for the next request of the same token (`ConnectionTokenMemory`).
package enum WrittenIdentityFields {
    case bytes(ByteBuffer)
    case list([NGHTTP2Session.OutboundField])
}

/// The token a connection presented last, what it verified as, and the identity fields written
/// for it: a client repeating its token on the connection (the common case: one user per
/// connection) skips the shared cache's hashing and locking and the claims' encoding. Kept only
/// for the configuration it was made under (a reload starts afresh) and used only through the
/// verifier's checks (expiry, key still published), revocation and the route's requirements.
/// A class: each request of the connection hands it to the core, one reference instead of a copy of each member.
package final class RecentToken {
    private let token: [UInt8]
    package let identity: VerifiedIdentity
    /// The identity fields as written to the upstream (an HTTP/1.1 head's bytes, an HTTP/2 header list's entries).
    package let identityFields: WrittenIdentityFields?
    /// The configuration it was made under (`ExchangeSettings`, one per configuration).
    private let configuration: ObjectIdentifier

    init(token: Substring, identity: VerifiedIdentity, identityFields: WrittenIdentityFields?, settings: ExchangeSettings) {
        // The verifier's copy when it is this token's (a verification keeps the cache key's bytes): no copy of our own.
        self.token = Self.isSame(identity.token, token) ? identity.token : token.utf8Bytes
        self.identity = identity
        self.identityFields = identityFields
        self.configuration = ObjectIdentifier(settings)
    }

    private static func isSame(_ bytes: [UInt8], _ token: Substring) -> Bool {
        guard !bytes.isEmpty, bytes.count == token.utf8.count else { return false }
        return token.utf8.withContiguousStorageIfAvailable { token in
            bytes.withUnsafeBufferPointer { memcmp($0.baseAddress!, token.baseAddress!, token.count) == 0 }  // safe: both non-empty
        } ?? token.utf8.elementsEqual(bytes)
    }

    /// The identity to hand the verifier (`Gatekeeper.decide(recent:)`) when `token` is the one remembered.
    package static func identity(of recent: RecentToken?, for token: Substring?, settings: ExchangeSettings) -> VerifiedIdentity? {
        guard let recent, let token, recent.matches(token, settings: settings) else { return nil }
        return recent.identity
    }

    /// Whether `token` is byte for byte the one remembered, under the same configuration.
    package func matches(_ token: Substring, settings: ExchangeSettings) -> Bool {
        configuration == ObjectIdentifier(settings) && Self.isSame(self.token, token)
    }
}

/// A connection's last verified token, shared by the streams of one HTTP/2 connection (they run on its
/// event loop, one at a time): the fast path of `RecentToken` on the HTTP/2 door too.
package final class ConnectionTokenMemory {
    package private(set) var recent: RecentToken?

    package init() {}

    /// Remembers the token of a request verified as `identity`, with the identity fields written for
    /// it, if any. Not with userinfo enrichment, whose fields may change from one request to the next.
    package func remember(_ request: ExchangeRequest, identity: VerifiedIdentity, identityFields: WrittenIdentityFields?) {
        guard request.settings.remembersTokens, let token = request.presentedToken else { return }
        // An HTTP/1.1 head's fields are copied into the last token's buffer, free once that token is let go: the slice
        // of the head they came as would keep the head's storage from being used again (`ReusedBuffer`), two
        // allocations per new token. An HTTP/2 list's entries are the list's own.
        var kept: ByteBuffer?
        if case .bytes(let buffer)? = recent?.identityFields { kept = buffer }
        recent = nil
        let fields: WrittenIdentityFields? = switch identityFields {
        case .bytes(let slice)?: .bytes(Self.copy(slice, into: kept.take()))
        case let other: other
        }
        recent = RecentToken(token: token, identity: identity, identityFields: fields, settings: request.settings)
    }

    /// `slice`'s bytes in `kept` (emptied first; handed over, so that its storage is the only reference and is written
    /// in place), or in a new buffer when there is none.
    private static func copy(_ slice: ByteBuffer, into kept: consuming ByteBuffer?) -> ByteBuffer {
        var buffer = kept ?? ByteBufferAllocator().buffer(capacity: slice.readableBytes)
        buffer.clear(minimumCapacity: slice.readableBytes)
        buffer.writeImmutableBuffer(slice)
        return buffer
    }

    /// The identity fields to write again for this request: it presents the remembered token.
    package func identityFields(for request: ExchangeRequest) -> WrittenIdentityFields? {
        guard request.presentsRecentToken, request.settings.remembersTokens else { return nil }
        return recent?.identityFields
    }
}
