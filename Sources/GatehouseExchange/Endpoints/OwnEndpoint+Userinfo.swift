import GatehouseSyntax
import GatehouseTokens

extension OwnEndpoint {
    /// `/.gatehouse/userinfo`: `{"provider","sub","email","name","picture","claims":{…}}`
    static func userinfoJSON(_ identity: VerifiedIdentity) -> String {
        let claims = identity.claims
        return JSONValue.object([
            "provider": .string(identity.providerName),
            "sub": claims["sub"] ?? .null,
            "email": claims["email"] ?? .null,
            "name": claims["name"] ?? .null,
            "picture": claims["picture"] ?? .null,
            "claims": .object(claims),
        ]).compactJSON
    }
}
