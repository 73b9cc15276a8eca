import Foundation
import Testing
@testable import GatehouseSyntax
import GatehouseVocabulary
import GatehouseTokens
@testable import GatehouseConfig

/// docs/security.md rows J32-J36.
struct ClaimChecksTests {
    private let now: Int64 = 1_795_341_660 + 843

    private func timeFailure(_ claims: [String: JSONValue], leeway: Int64 = 60) -> AuthFailure? {
        do {
            try ClaimChecks.checkTimes(claims, now: now, leeway: leeway)
            return nil
        } catch {
            return error
        }
    }

    private func number(_ value: Int64) -> JSONValue { .number(String(value)) }

    @Test func acceptsATokenWithinItsLifetime() {
        #expect(timeFailure(["exp": number(now + 300), "nbf": number(now - 10), "iat": number(now - 10)]) == nil)
    }

    // J33-35
    @Test func missingExpIsExpired() {
        let failure = timeFailure(["iat": number(now)])
        #expect(failure?.reason == .expired)
        #expect(failure?.detail == "exp missing")
    }

    @Test func expiredTokenGetsReasonExpiredWithAReadableDetail() {
        let failure = timeFailure(["exp": .number("1795341660")], leeway: 0)
        #expect(failure?.reason == .expired)
        #expect(failure?.detail == "exp 2026-11-22T10:01:00Z is 843s in the past")
    }

    @Test func leewayAppliesToExpExactlyUpToItsEnd() {
        #expect(timeFailure(["exp": number(now - 59)], leeway: 60) == nil)
        #expect(timeFailure(["exp": number(now - 60)], leeway: 60)?.reason == .expired)
        #expect(timeFailure(["exp": number(now + 1)], leeway: 0) == nil)
        #expect(timeFailure(["exp": number(now)], leeway: 0)?.reason == .expired)
    }

    @Test(arguments: ["nbf", "iat"])
    func futureNotBeforeOrIssuedAtIsNotYetValid(_ claim: String) {
        let exp = number(now + 3600)
        #expect(timeFailure(["exp": exp, claim: number(now + 60)], leeway: 60) == nil)
        let failure = timeFailure(["exp": exp, claim: number(now + 61)], leeway: 60)
        #expect(failure?.reason == .notYetValid)
        #expect(failure?.detail.hasPrefix("\(claim) ") == true)
        #expect(failure?.detail.hasSuffix("is 61s in the future") == true)
        #expect(timeFailure(["exp": exp, claim: number(now + 1)], leeway: 0)?.reason == .notYetValid)
    }

    @Test func negativeLeewayCountsAsZero() {
        #expect(timeFailure(["exp": number(now + 1)], leeway: -100) == nil)
    }

    @Test func hugeLeewayDoesNotOverflow() {
        #expect(timeFailure(["exp": number(1), "nbf": number(ClaimChecks.maximumNumericDate)], leeway: .max) == nil)
    }

    // J32
    @Test(arguments: [
        JSONValue.string("1795345000"), .number("1795345000.0"), .number("1795345000.5"), .number("-1"), .number("1e300"),
        .number("1.795345e9"), .number("253402300800"), .number("99999999999999999999"), .null, .bool(true), .array([]), .object([:]),
    ])
    func timeClaimsOfTheWrongTypeOrRangeAreInvalid(_ value: JSONValue) {
        #expect(timeFailure(["exp": value])?.reason == .invalidClaims)
        #expect(timeFailure(["exp": number(now + 60), "nbf": value])?.reason == .invalidClaims)
        #expect(timeFailure(["exp": number(now + 60), "iat": value])?.reason == .invalidClaims)
    }

    @Test func boundaryNumericDatesAreAccepted() {
        #expect(timeFailure(["exp": number(ClaimChecks.maximumNumericDate), "iat": .number("0"), "nbf": .number("-0")]) == nil)
    }

    @Test func formatsDatesLikeFoundation() {
        #expect(NumericDate.formatted(0) == "1970-01-01T00:00:00Z")
        #expect(NumericDate.formatted(951_782_400) == "2000-02-29T00:00:00Z")
        #expect(NumericDate.formatted(ClaimChecks.maximumNumericDate) == "9999-12-31T23:59:59Z")
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let seconds = Int64.random(in: 0...ClaimChecks.maximumNumericDate, using: &generator)
            #expect(NumericDate.formatted(seconds) == formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds))))
        }
    }

    // J36
    @Test func audienceMayBeAStringOrAnArrayOfStrings() throws {
        #expect(try ClaimChecks.audiences(["aud": .string("api")]) == ["api"])
        #expect(try ClaimChecks.audiences(["aud": .array([.string("a"), .string("b")])]) == ["a", "b"])
    }

    @Test(arguments: [
        JSONValue.array([]), .array([.number("1")]), .array([.string("a"), .null]), .array([.array([.string("a")])]),
        .number("1"), .null, .bool(true), .object(["aud": .string("a")]),
    ])
    func emptyOrMalformedAudienceIsWrongAudienceNotACrash(_ value: JSONValue) {
        #expect(throws: AuthFailure.self) { try ClaimChecks.audiences(["aud": value]) }
        do {
            _ = try ClaimChecks.audiences(["aud": value])
        } catch {
            #expect(error.reason == .wrongAudience)
        }
    }

    @Test func missingAudienceIsWrongAudience() {
        do {
            _ = try ClaimChecks.audiences([:])
            Issue.record("accepted a token without aud")
        } catch {
            #expect(error.reason == .wrongAudience)
            #expect(error.detail == "aud missing")
        }
    }

    // J32: `sub` not a string is invalid_claims. (A non-string `iss` never gets here: no provider has it, so the
    // verifier answers unknown_issuer first; TokenAttackTests' J32 rows show that end to end.)
    @Test(arguments: [JSONValue.number("1"), .null, .bool(false), .array([.string("a")]), .object([:])])
    func nonStringSubjectIsInvalid(_ value: JSONValue) {
        for name in ["sub"] {
            for required in [true, false] {
                do {
                    _ = try ClaimChecks.string(name, in: [name: value], required: required)
                    Issue.record("accepted \(name) = \(value)")
                } catch {
                    #expect(error.reason == .invalidClaims)
                }
            }
        }
    }

    @Test func stringClaimsAreReturnedOrMissing() throws {
        #expect(try ClaimChecks.string("sub", in: ["sub": .string("u1")], required: true) == "u1")
        #expect(try ClaimChecks.string("sub", in: [:], required: false) == nil)
        #expect(throws: AuthFailure.self) { try ClaimChecks.string("sub", in: [:], required: true) }
    }
}
