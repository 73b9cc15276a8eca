import Crypto
import Testing
import GatehouseConfig
import GatehouseSyntax

/// Which PEM keys sign assertions (docs/reference.md §15.1): P-256 and Ed25519 only, the curve checked, not assumed.
struct AssertionKeyPEMTests {
    /// `openssl ecparam -name secp256k1 -genkey -noout`, its PKCS #8 form and its public key: a 32-byte scalar that
    /// swift-crypto's P-256 reader takes (issue 43: check-config said "assertion ES256 kid …").
    static let secp256k1 = [
        ("EC PRIVATE KEY", "MHQCAQEEIMD4S4ogOKrpFSg9SSzepshfPSRJsGpfBnhr07g9YTP+oAcGBSuBBAAKoUQDQgAESwT3iEqOo4hPjhe7dqHBbDM8sscLwCkQd24hgKst5dHHezwFRgDXHbhJfJzB64UJ85A5RAg9pGeaU/yjMmsRpw=="),
        ("PRIVATE KEY", "MIGEAgEAMBAGByqGSM49AgEGBSuBBAAKBG0wawIBAQQgwPhLiiA4qukVKD1JLN6myF89JEmwal8GeGvTuD1hM/6hRANCAARLBPeISo6jiE+OF7t2ocFsMzyyxwvAKRB3biGAqy3l0cd7PAVGANcduEl8nMHrhQnzkDlECD2kZ5pT/KMyaxGn"),
        ("PUBLIC KEY", "MFYwEAYHKoZIzj0CAQYFK4EEAAoDQgAESwT3iEqOo4hPjhe7dqHBbDM8sscLwCkQd24hgKst5dHHezwFRgDXHbhJfJzB64UJ85A5RAg9pGeaU/yjMmsRpw=="),
    ]

    @Test func aSecp256k1KeyIsRefusedSayingWhatItIs() {
        for (label, body) in Self.secp256k1 {
            let pem = "-----BEGIN \(label)-----\n\(body)\n-----END \(label)-----\n"
            do {
                _ = try AssertionKey.parse(pem: pem, needs: .publicKey)
                Issue.record("\(label): a secp256k1 key was taken")
            } catch {
                #expect("\(error)".contains("secp256k1"), "\(label): \(error)")
            }
        }
    }

    /// The same scalar in SEC 1 forms that name no curve (the parameters left out, with and without the public key)
    /// or spell it out (explicit parameters): none is taken as a P-256 key.
    static let unnamedCurves = [
        "MGsCAQEEIMD4S4ogOKrpFSg9SSzepshfPSRJsGpfBnhr07g9YTP+oUQDQgAESwT3iEqOo4hPjhe7dqHBbDM8sscLwCkQd24hgKst5dHHezwFRgDXHbhJfJzB64UJ85A5RAg9pGeaU/yjMmsRpw==",
        "MCUCAQEEIMD4S4ogOKrpFSg9SSzepshfPSRJsGpfBnhr07g9YTP+",
        "MIIBUQIBAQQgwPhLiiA4qukVKD1JLN6myF89JEmwal8GeGvTuD1hM/6ggeMwgeACAQEwLAYHKoZIzj0BAQIhAP////////////////////////////////////7///wv"
            + "MEQEIAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAABCAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAABwRBBHm+Zn753LusVaBilc6HCwcCm/zbLc4o"
            + "2VnygVsW+BeYSDradyajxGVdpPv8DhEIqP0XtEimhVQZnEfQj/sQ1LgCIQD////////////////+uq7c5q9IoDu/0l6M0DZBQQIBAaFEA0IABEsE94hKjqOIT44X"
            + "u3ahwWwzPLLHC8ApEHduIYCrLeXRx3s8BUYA1x24SXycweuFCfOQOUQIPaRnmlP8ozJrEac=",
    ]

    @Test func anECKeyThatDoesNotNameP256IsRefused() {
        for body in Self.unnamedCurves {
            let pem = "-----BEGIN EC PRIVATE KEY-----\n\(body)\n-----END EC PRIVATE KEY-----\n"
            #expect(throws: (any Error).self, "\(body.prefix(16))") { try AssertionKey.parse(pem: pem, needs: .privateKey) }
        }
    }

    @Test func p256KeysInEveryFormAreTaken() throws {
        let key = P256.Signing.PrivateKey()
        for pem in [key.pemRepresentation, key.publicKey.pemRepresentation] {
            #expect(try AssertionKey.parse(pem: pem, needs: .publicKey).jwk["crv"] == .string("P-256"))
        }
        #expect(throws: (any Error).self) { try AssertionKey.parse(pem: P384.Signing.PrivateKey().pemRepresentation, needs: .privateKey) }
    }
}
