import Testing
import GatehouseVocabulary

/// `AuthFailure` holds its diagnostics out of line (copy-on-write, issue 57): it must still behave as a value. A copy
/// changed leaves the original as it was, whichever of the two changes, and equality is by what they say.
struct AuthFailureValueTests {
    @Test func aChangedCopyLeavesTheOriginalAsItWas() {
        var original = AuthFailure(.badSignature, "signature does not verify")
        original.issuer = "https://issuer.example"
        var copy = original
        copy.detail = "changed"
        copy.keyID = "k2"
        copy.requiredScopes.append("orders:read")
        #expect(original.detail == "signature does not verify" && original.keyID == nil && original.requiredScopes.isEmpty)
        #expect(original.issuer == "https://issuer.example" && copy.issuer == "https://issuer.example")
        #expect(copy.detail == "changed" && copy.keyID == "k2" && copy.requiredScopes == ["orders:read"])

        let kept = copy
        copy.retryAfterSeconds = 30  // the copy that changes is the one still holding shared fields
        #expect(kept.retryAfterSeconds == nil && copy.retryAfterSeconds == 30)
    }

    @Test func equalityIsByWhatTheFailuresSay() {
        var one = AuthFailure(.expired, "token expired")
        var other = AuthFailure(.expired, "token expired")
        #expect(one == other)
        one.subject = "alice"
        #expect(one != other)
        other.subject = "alice"
        #expect(one == other)
        other.reason = .revoked
        #expect(one != other)
        let same = one
        #expect(same == one)
    }
}
