import Foundation
@testable import Gatehouse
import GatehouseConfig

extension ProviderSettings {
    /// A provider whose keys can never be had (its JWKS URL is the discard port, where nothing listens): its tokens
    /// get 503 `keys_unavailable`. Tokens name it by `iss` = `FrontDoorTableTests.downIssuer`.
    static func keyless(name: String = "down") -> ProviderSettings {
        var down = ProviderSettings(name: name, type: .jwks)
        down.issuer = FrontDoorTableTests.downIssuer
        down.jwksURI = URL(string: "http://127.0.0.1:9/keys")!
        down.audiences = [Claims.audience]
        return down
    }
}
