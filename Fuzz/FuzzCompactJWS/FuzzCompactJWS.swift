// libFuzzer target for CompactJWS.parse (Fuzz/README.md).
//
// Input: the token's bytes, read as UTF-8 (invalid sequences become U+FFFD). An input starting with
// byte 0x01 is built instead: the rest is split at its first two 0x00 bytes into header JSON, payload
// JSON and signature bytes, each base64url-encoded and joined with dots, so the fuzzer reaches the
// header and claims checks without having to find canonical base64url itself.
// Refusals (AuthFailure) are expected. Besides "no crash, no hang", it checks:
// - the same token parsed from a Substring in the middle of a longer string (as a header value is)
//   gives the same token or the same failure;
// - a parsed token's signing input is the text before the second dot, its encoded payload the text
//   between the dots, its signature the canonical decoding of the text after them;
// - a token one byte over `maxBytes` is refused as malformed.
@testable import Gatehouse
import FuzzSupport
import GatehouseSyntax
import GatehouseConfig
import GatehouseTokens
import GatehouseExtAuthz
import GatehouseVocabulary

/// One input (libFuzzer's entry point calls it, Fuzz/Entry/FuzzCompactJWS; FuzzReplayTests replays the seeds through it).
public func fuzzCompactJWS(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeBufferPointer(start: data, count: size)
    let token: String
    if size > 0, input[0] == 0x01 {
        let parts = input.dropFirst().split(separator: 0, maxSplits: 2, omittingEmptySubsequences: false)
        token = parts.map { Base64URL.encode($0) }.joined(separator: ".")
    } else {
        token = String(decoding: input, as: UTF8.self)
    }
    let maxBytes = 16384

    let direct = Result { () throws(AuthFailure) in try CompactJWS.parse(Substring(token), maxBytes: maxBytes) }
    let header = "Bearer " + token + " trailing"
    let start = header.utf8.index(header.startIndex, offsetBy: 7)
    let end = header.utf8.index(start, offsetBy: token.utf8.count)
    let embedded = Result { () throws(AuthFailure) in try CompactJWS.parse(header[start..<end], maxBytes: maxBytes) }

    if printOutcome { print(token, (try? direct.get()).map { "\(Summary($0))" } ?? "\(direct)") }
    switch (direct, embedded) {
    case (.failure(let first), .failure(let second)):
        require(first == second, "failures differ for a token in a longer string: \(first) vs \(second)")
    case (.success(let first), .success(let second)):
        require(Summary(first) == Summary(second), "tokens differ for a token in a longer string")
        check(first, token: token)
    default:
        fatalError("a token in a longer string parsed differently: \(direct) vs \(embedded)")
    }

    let utf8Count = token.utf8.count
    if utf8Count > 0 {
        do {
            _ = try CompactJWS.parse(Substring(token), maxBytes: utf8Count - 1)
            fatalError("a \(utf8Count)-byte token accepted with maxBytes \(utf8Count - 1)")
        } catch {
            require(error.reason == .malformedToken, "an over-long token refused as \(error.reason)")
        }
    }
    return 0
}

/// What two parses of one token must agree on.
struct Summary: Equatable {
    var algorithm: JWSAlgorithm
    var keyID: String?
    var header: [String: JSONValue]
    var claims: [String: JSONValue]
    var signingInput: [UInt8]
    var signature: [UInt8]
    var encodedPayload: String

    init(_ jws: CompactJWS) {
        algorithm = jws.algorithm
        keyID = jws.keyID
        header = jws.header
        claims = jws.claims
        signingInput = Array(jws.signingInput)
        signature = jws.signature
        encodedPayload = String(decoding: jws.encodedPayload, as: UTF8.self)
    }
}

private func check(_ jws: CompactJWS, token: String) {
    let bytes = Array(token.utf8)
    let dots = bytes.indices.filter { bytes[$0] == UInt8(ascii: ".") }
    require(dots.count == 2, "a token with \(dots.count) dots accepted")
    require(Array(jws.signingInput) == Array(bytes[..<dots[1]]), "signing input is not the text before the second dot")
    require(Array(jws.encodedPayload) == Array(bytes[(dots[0] + 1)..<dots[1]]), "encoded payload is not the middle segment")
    let signatureText = Array(bytes[(dots[1] + 1)...])
    require(Array(Base64URL.encode(jws.signature).utf8) == signatureText, "signature segment is not the canonical encoding of the signature")
    require(!jws.signature.isEmpty, "an empty signature accepted")
    if let expected = jws.algorithm.signatureByteCount {
        require(jws.signature.count == expected, "\(jws.algorithm) signature of \(jws.signature.count) bytes accepted")
    }
    require(jws.header["alg"] == .string(jws.algorithm.rawValue), "algorithm is not the header's alg")
    if let keyID = jws.keyID { require(!keyID.isEmpty && jws.header["kid"] == .string(keyID), "keyID is not the header's kid") }
    for refused in ["crit", "b64"] { require(jws.header[refused] == nil, "a header with \(refused) accepted") }
}
