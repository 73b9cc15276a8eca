import Testing
@testable import GatehouseExchange
import GatehouseConfig

/// The other spellings of the identity names, which Envoy's HTTP ext_authz protocol is told to remove (docs/security.md E03).
struct IdentityHeaderNamesTests {
    @Test func everyUnderscoreSpellingIsListed() {
        #expect(Set(IdentityHeaderNames.spellings(of: "x-auth-subject")) == ["x-auth-subject", "x_auth-subject", "x-auth_subject", "x_auth_subject"])
        #expect(IdentityHeaderNames.spellings(of: "x-auth-email-verified").count == 8)
        #expect(IdentityHeaderNames.spellings(of: "nohyphen") == ["nohyphen"])
        #expect(Set(IdentityHeaderNames.spellings(of: "x_user")) == ["x-user", "x_user"])
        let names = IdentityHeaderNames(mappings: [HeaderMapping(name: "X_User", claimPath: "sub")], otherNames: ["X-Gatehouse-Assertion"])
        // The names Gatehouse sets are never listed (Envoy removes after it sets); every other spelling is.
        for set in ["x_user", "x-auth-provider", "x-gatehouse-assertion"] { #expect(!names.otherSpellings.contains(set), "\(set)") }
        for spelling in ["x-user", "x_auth_provider", "x-auth_cnf_x5t-s256", "x_gatehouse_assertion", "x_gatehouse-assertion"] {
            #expect(names.otherSpellings.contains(spelling), "\(spelling)")
        }
        // A name with more separators than the limit: its all-`-` and all-`_` spellings.
        #expect(IdentityHeaderNames.spellings(of: "a-b-c-d-e-f-g-h-i-j") == ["a-b-c-d-e-f-g-h-i-j", "a_b_c_d_e_f_g_h_i_j"])
    }
}
