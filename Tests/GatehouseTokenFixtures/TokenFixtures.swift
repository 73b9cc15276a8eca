import Crypto
public import _CryptoExtras
import GatehouseSyntax
public import GatehouseTokens
public import GatehouseVocabulary

/// Builders for tokens and JWKs used across the test files.
public enum TokenFixtures {
    public static func segment(_ json: String) -> String {
        Base64URL.encode(Array(json.utf8))
    }

    /// `<b64(header)>.<b64(payload)>.<b64(signature)>` from JSON texts and raw signature bytes.
    public static func token(header: String, payload: String = #"{"iss":"https://issuer.example","sub":"u1"}"#,
                      signature: [UInt8] = Array(repeating: 7, count: 64)) -> String {
        "\(segment(header)).\(segment(payload)).\(Base64URL.encode(signature))"
    }

    public static func parse(_ token: String, maxBytes: Int = 8192) throws(AuthFailure) -> CompactJWS {
        try CompactJWS.parse(Substring(token), maxBytes: maxBytes)
    }

    /// The failure `CompactJWS.parse` throws, or `nil` if it accepted the token.
    public static func failure(_ token: String, maxBytes: Int = 8192) -> AuthFailure? {
        do {
            _ = try parse(token, maxBytes: maxBytes)
            return nil
        } catch {
            return error
        }
    }

    public static func b64(_ bytes: some Sequence<UInt8>) -> String {
        Base64URL.encode(bytes)
    }

    public static func rsaJWK(_ key: _RSA.Signing.PublicKey, kid: String?, extra: String = "") throws -> String {
        let primitives = try key.getKeyPrimitives()
        return #"{"kty":"RSA","n":"\#(b64(primitives.modulus))","e":"\#(b64(primitives.publicExponent))""#
            + (kid.map { #","kid":"\#($0)""# } ?? "") + extra + "}"
    }

    public static func ecJWK(raw: [UInt8], crv: String, kid: String?, extra: String = "") -> String {
        let half = raw.count / 2
        return #"{"kty":"EC","crv":"\#(crv)","x":"\#(b64(raw[..<half]))","y":"\#(b64(raw[half...]))""#
            + (kid.map { #","kid":"\#($0)""# } ?? "") + extra + "}"
    }

    public static func okpJWK(raw: [UInt8], kid: String?, extra: String = "") -> String {
        #"{"kty":"OKP","crv":"Ed25519","x":"\#(b64(raw))""# + (kid.map { #","kid":"\#($0)""# } ?? "") + extra + "}"
    }

    public static func keySet(_ keys: [String]) -> [UInt8] {
        Array(#"{"keys":[\#(keys.joined(separator: ","))]}"#.utf8)
    }

    public static let allAlgorithms = Set(JWSAlgorithm.allCases)

    /// One 2048-bit RSA key shared by the tests that need one (generating them is slow in debug builds).
    public static let rsaKey: _RSA.Signing.PrivateKey? = try? _RSA.Signing.PrivateKey(keySize: .bits2048)
    public static let otherRSAKey: _RSA.Signing.PrivateKey? = try? _RSA.Signing.PrivateKey(keySize: .bits2048)
}
