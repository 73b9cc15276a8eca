import NIOHTTP1
package import GatehouseExchange

/// What the request core decided of a Check, before it is put in a protocol's form (`CheckResponse+Encoding`
/// for gRPC, `ExtAuthzResponder.answerHTTPProtocol` for Envoy's HTTP protocol).
package enum CheckVerdict: Sendable {
    /// The request may go on, with these changes to it.
    case allow(CheckAllowance)
    /// The answer the doors would have sent the client: status, headers, body.
    case deny(LocalResponse)
}

/// The changes an allowed request gets on its way upstream: the doors' identity headers (set, overwriting
/// any the client sent), the client's fields the doors would not forward (identity spellings, the token when
/// `forward_token = false`, the DPoP proof, an untrusted client-certificate header), and the verified
/// identity for Envoy's RBAC and access logs (`dynamic_metadata`, namespace `gatehouse`).
package struct CheckAllowance: Sendable {
    var headersToSet: [(String, String)] = []
    var headersToRemove: [String] = []
    /// Every other spelling of every identity name, `-` and `_` either way (`IdentityHeaderNames.otherSpellings`),
    /// removed on Envoy's HTTP protocol, which shows Gatehouse only the headers its `allowed_headers` lists; over gRPC
    /// Gatehouse sees the client's every header and removes what it sent (`headersToRemove`).
    var spellingsToRemove: [String] = []
    package var metadata: [(String, MetadataValue)] = []

    package enum MetadataValue: Sendable {
        case string(String)
        case list([String])
    }
}
