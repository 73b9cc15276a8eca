import Testing
@testable import GatehouseExchange

/// The sign-out endpoint's body (docs/reference.md, revocation): an optional refresh token, form- or JSON-encoded.
struct SignOutRequestTests {
    @Test func signOutBodiesCarryAnOptionalRefreshToken() throws {
        #expect(try SignOutRequest(body: [], contentType: nil).refreshToken == nil)
        #expect(try SignOutRequest(body: Array("refresh_token=a%2Bb+c&x=1".utf8), contentType: "application/x-www-form-urlencoded")
            .refreshToken == "a+b c")
        #expect(try SignOutRequest(body: Array(#"{"refresh_token":"r1"}"#.utf8), contentType: "application/json; charset=utf-8")
            .refreshToken == "r1")
        #expect(try SignOutRequest(body: Array("{}".utf8), contentType: "application/json").refreshToken == nil)
        #expect(throws: SignOutRequest.Invalid.self) { try SignOutRequest(body: Array("{".utf8), contentType: "application/json") }
        #expect(throws: SignOutRequest.Invalid.self) {
            try SignOutRequest(body: Array(#"{"refresh_token":5}"#.utf8), contentType: "application/json")
        }
        #expect(throws: SignOutRequest.Invalid.self) { try SignOutRequest(body: Array("x".utf8), contentType: "text/plain") }
        #expect(throws: SignOutRequest.Invalid.self) {
            try SignOutRequest(body: Array("refresh_token=%zz".utf8), contentType: "application/x-www-form-urlencoded")
        }
    }
}
