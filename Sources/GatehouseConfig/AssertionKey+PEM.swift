import Crypto
import Foundation

/// Reading an assertion key from a PEM file: `PRIVATE KEY` (PKCS #8) or `EC PRIVATE KEY` (SEC 1) for the
/// signing key; those or `PUBLIC KEY` for a key only published. Any other key is refused, saying what it is.
extension AssertionKey {
    package enum Half { case privateKey, publicKey }

    /// - Parameter needs: `.privateKey` for `signing_key_file`; `.publicKey` for `published_key_files`
    ///   (a private key file is accepted there too: only its public half is published).
    package static func load(file path: String, needs: Half) throws -> AssertionKey {
        guard FileManager.default.isReadableFile(atPath: path), let data = FileManager.default.contents(atPath: path) else {
            throw AssertionKeyError(FileManager.default.fileExists(atPath: path) ? "cannot read \(path)" : "no such file: \(path)")
        }
        guard let text = String(data: data, encoding: .utf8) else { throw AssertionKeyError("\(path) is not a PEM file") }
        let key = try parse(pem: text, needs: needs)
        return needs == .publicKey ? key.publicOnly : key
    }

    package static func parse(pem text: String, needs: Half) throws -> AssertionKey {
        let blocks = PEMBlock.all(in: text)
        guard let block = blocks.first(where: { $0.label != "EC PARAMETERS" }) else {
            throw AssertionKeyError("no PEM key (expected -----BEGIN PRIVATE KEY-----)")
        }
        switch block.label {
        case "PRIVATE KEY", "EC PRIVATE KEY":
            // swift-crypto reads any 32-byte EC scalar as a P-256 key (a secp256k1 key too): the curve is checked here.
            if names(p256Curve, in: block.der), let key = try? P256.Signing.PrivateKey(pemRepresentation: block.pem) {
                return AssertionKey(.p256(key.publicKey, key))
            }
            if block.label == "PRIVATE KEY", let raw = ed25519PrivateKey(pkcs8: block.der),
               let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: raw) {
                return AssertionKey(.ed25519(key.publicKey, key))
            }
            if block.label == "EC PRIVATE KEY", !names([0x06, 0x05, 0x2B, 0x81, 0x04], in: block.der), !names([0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE], in: block.der) {
                throw AssertionKeyError("an EC private key that names no curve: write it with its curve named (openssl ec -param_enc named_curve)")
            }
            throw AssertionKeyError(unsupported(block.der))
        case "PUBLIC KEY":
            guard needs == .publicKey else {
                throw AssertionKeyError("a public key: the signing key must be a private key (-----BEGIN PRIVATE KEY-----)")
            }
            if names(p256Curve, in: block.der), let key = try? P256.Signing.PublicKey(pemRepresentation: block.pem) {
                return AssertionKey(.p256(key, nil))
            }
            if let raw = ed25519PublicKey(spki: block.der), let key = try? Curve25519.Signing.PublicKey(rawRepresentation: raw) {
                return AssertionKey(.ed25519(key, nil))
            }
            throw AssertionKeyError(unsupported(block.der))
        case "ENCRYPTED PRIVATE KEY":
            throw AssertionKeyError("an encrypted private key: give the key unencrypted (a Kubernetes Secret, a file only Gatehouse reads)")
        case "RSA PRIVATE KEY", "RSA PUBLIC KEY":
            throw AssertionKeyError(unsupported(rsa: true))
        default:
            throw AssertionKeyError("a PEM \"\(block.label)\", not a key")
        }
    }

    /// The seed of a PKCS #8 Ed25519 key (RFC 8410 §7): version, the algorithm `1.3.101.112`, then the
    /// 32-byte key as an OCTET STRING inside an OCTET STRING; a v2 key's public part after it is ignored.
    private static func ed25519PrivateKey(pkcs8 der: [UInt8]) -> [UInt8]? {
        let algorithm: [UInt8] = [0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20]
        guard der.count >= 16 + 32, der[0] == 0x30, der[1] < 0x80, der[2] == 0x02, der[3] == 0x01, der[4] <= 1,
              Array(der[5..<16]) == algorithm else { return nil }
        return Array(der[16..<48])
    }

    /// The key of an Ed25519 `SubjectPublicKeyInfo` (RFC 8410 §4): exactly 44 bytes.
    private static func ed25519PublicKey(spki der: [UInt8]) -> [UInt8]? {
        let prefix: [UInt8] = [0x30, 0x2A, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x03, 0x21, 0x00]
        guard der.count == 44, Array(der[0..<12]) == prefix else { return nil }
        return Array(der[12...])
    }

    /// The DER of the named curve P-256 (`prime256v1`, 1.2.840.10045.3.1.7), which a PKCS #8, SEC 1 or SPKI
    /// P-256 key names.
    private static let p256Curve: [UInt8] = [0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]

    private static func names(_ oid: [UInt8], in der: [UInt8]) -> Bool {
        der.count >= oid.count && (0...(der.count - oid.count)).contains { Array(der[$0..<$0 + oid.count]) == oid }
    }

    /// What the key is, by the algorithm identifiers in it, for the message that refuses it.
    private static func unsupported(_ der: [UInt8]) -> String {
        func has(_ oid: [UInt8]) -> Bool { names(oid, in: der) }
        if has([0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01]) { return unsupported(rsa: true) }
        if has([0x2B, 0x81, 0x04, 0x00, 0x0A]) { return unsupported(what: "an EC secp256k1 key (ES256K, not ES256)") }
        if has([0x2B, 0x81, 0x04, 0x00, 0x22]) { return unsupported(what: "an EC P-384 key") }
        if has([0x2B, 0x81, 0x04, 0x00, 0x23]) { return unsupported(what: "an EC P-521 key") }
        if has([0x2B, 0x65, 0x71]) { return unsupported(what: "an Ed448 key") }
        if has([0x2B, 0x65, 0x6E]) || has([0x2B, 0x65, 0x6F]) { return unsupported(what: "an X25519/X448 key (key agreement, not signing)") }
        if has([0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01]) { return unsupported(what: "an EC key on another curve than P-256") }
        return unsupported(what: "not a key Gatehouse can read")
    }

    private static func unsupported(rsa: Bool = false, what: String = "an RSA key") -> String {
        "\(what): assertions are signed with EC P-256 (ES256) or Ed25519 (EdDSA) keys"
            + " (openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256, or -algorithm ed25519)"
    }
}

/// One `-----BEGIN label----- … -----END label-----` block of a PEM file.
struct PEMBlock {
    let label: String
    let der: [UInt8]
    /// The block's text, as swift-crypto's PEM initialisers take it.
    let pem: String

    static func all(in text: String) -> [PEMBlock] {
        var blocks: [PEMBlock] = []
        var label: String?
        var lines: [Substring] = []
        for rawLine in text.split(whereSeparator: \.isNewline) {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if label == nil, line.hasPrefix("-----BEGIN "), line.hasSuffix("-----") {
                label = String(line.dropFirst(11).dropLast(5))
                lines = []
            } else if let current = label, line == "-----END \(current)-----" {
                if let der = Data(base64Encoded: lines.joined()) {
                    let pem = "-----BEGIN \(current)-----\n" + lines.joined(separator: "\n") + "\n-----END \(current)-----\n"
                    blocks.append(PEMBlock(label: current, der: Array(der), pem: pem))
                }
                label = nil
            } else if label != nil {
                lines.append(Substring(line))
            }
        }
        return blocks
    }
}
