import Foundation
import NIOCore

/// The token a connection presented last, what it verified as, and the identity fields written
/// for it: a client repeating its token on the connection (the common case: one user per
/// connection) skips the shared cache's hashing and locking and the claims' encoding. Kept only
/// for the configuration it was made under (a reload starts afresh) and used only through the
/// verifier's checks (expiry, key still published), revocation and the route's requirements.
struct RecentToken {
    private let token: [UInt8]
    let identity: VerifiedIdentity
    let identityFields: ByteBuffer
    private let services: ObjectIdentifier

    init(token: Substring, identity: VerifiedIdentity, identityFields: ByteBuffer, services: ProxyServices) {
        self.token = token.utf8Bytes
        self.identity = identity
        self.identityFields = identityFields
        self.services = ObjectIdentifier(services)
    }

    /// Whether `token` is byte for byte the one remembered, under the same configuration.
    func matches(_ token: Substring, services: ProxyServices) -> Bool {
        guard self.services == ObjectIdentifier(services), token.utf8.count == self.token.count, !self.token.isEmpty else { return false }
        return token.utf8.withContiguousStorageIfAvailable { bytes in
            self.token.withUnsafeBufferPointer { memcmp($0.baseAddress!, bytes.baseAddress!, bytes.count) == 0 }
        } ?? token.utf8.elementsEqual(self.token)
    }
}
