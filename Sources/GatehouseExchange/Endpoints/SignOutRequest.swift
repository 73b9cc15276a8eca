import GatehouseSyntax

/// What a sign-out's body may carry: the refresh token to revoke at the provider too.
/// Form (`refresh_token=…`) or JSON (`{"refresh_token":"…"}`); an empty body is a plain sign-out.
package struct SignOutRequest: Equatable {
    package var refreshToken: String?

    /// Larger bodies are answered 413: a sign-out carries one token.
    package static let maxBodyBytes = 16 << 10

    package struct Invalid: Error {
        package var detail: String
    }

    package init(refreshToken: String?) {
        self.refreshToken = refreshToken
    }

    package init(body: [UInt8], contentType: String?) throws(Invalid) {
        let contentType = contentType ?? ""
        guard !body.isEmpty else { self.init(refreshToken: nil); return }
        if MediaType.hasEssence(contentType, "application/json") {
            guard case .object(let object)? = try? StrictJSON.parse(body) else { throw Invalid(detail: "body is not a JSON object") }
            switch object["refresh_token"] {
            case nil, .null?: self.init(refreshToken: nil)
            case .string(let token)?: self.init(refreshToken: token.isEmpty ? nil : token)
            default: throw Invalid(detail: "refresh_token must be a string")
            }
        } else if MediaType.hasEssence(contentType, "application/x-www-form-urlencoded") {
            guard body.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { throw Invalid(detail: "form body is not URL-encoded ASCII") }
            let token: String?
            do {
                token = try FormEncoding.value(named: "refresh_token", in: body)
            } catch {
                throw Invalid(detail: "refresh_token is not valid percent-encoded UTF-8")
            }
            self.init(refreshToken: token?.isEmpty == false ? token : nil)
        } else {
            throw Invalid(detail: "send application/x-www-form-urlencoded or application/json")
        }
    }
}
