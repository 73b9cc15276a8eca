import Foundation
@testable import Gatehouse
import NIOCore
import Testing
import GatehouseSyntax
import GatehouseConfig

/// `type = "entra"`: Microsoft Entra ID multi-tenant apps. A token passes only when its `iss` is the issuer
/// template filled with its own `tid` and that tenant is allowed; v1.0 tokens only with `accept_v1`.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct EntraTests {
    static let tenant = "72f988bf-86f1-41af-91ab-2d7cd011db47"
    static let foreign = "9188040d-6c67-4c5b-b112-36a304b66dad"

    static func entra(tenants: [String], acceptV1: Bool = false) -> (inout Configuration, TestJWKSServer) -> Void {
        { configuration, jwks in
            var provider = ProviderSettings(name: "entra", type: .entra)
            provider.jwksURI = jwks.jwksURL
            provider.audiences = ["api://orders"]
            provider.tenants = tenants
            provider.acceptV1 = acceptV1
            configuration.providers = [provider]
            var admin = RouteSettings(match: .prefix("/admin"))
            admin.roles = ["Orders.Admin"]
            configuration.routes = [admin]
        }
    }

    static func token(iss: String, tid: String, extra: [String: JSONValue] = [:]) -> String {
        let now = Int64(Date().timeIntervalSince1970)
        var claims: [String: JSONValue] = [
            "iss": .string(iss), "tid": .string(tid), "oid": .string("00000000-0000-0000-66f3-3332eca7ea81"), "aud": .string("api://orders"),
            "sub": .string("entra-user"), "iat": .number(String(now - 5)), "exp": .number(String(now + 600)),
        ]
        claims.merge(extra) { _, new in new }
        return TestSigner.rsa.token(claims: claims)
    }

    static func v2(_ tenant: String) -> String { "https://login.microsoftonline.com/\(tenant)/v2.0" }
    static func v1(_ tenant: String) -> String { "https://sts.windows.net/\(tenant)/" }

    @Test func aTokenPassesOnlyWithItsOwnTenantsIssuerAndAnAllowedTenant() async throws {
        try await TestEnvironment.run(configure: Self.entra(tenants: [Self.tenant])) { (env: TestEnvironment) async throws in
            #expect(try await env.request("/v1/orders", token: Self.token(iss: Self.v2(Self.tenant), tid: Self.tenant)).status == 200)
            let received = try #require(env.upstream.last)
            #expect(received.value("x-auth-tenant-id") == Self.tenant)
            #expect(received.value("x-auth-object-id") == "00000000-0000-0000-66f3-3332eca7ea81")
            for (iss, tid, what) in [
                (Self.v2(Self.foreign), Self.foreign, "a foreign tenant"),
                (Self.v2(Self.tenant), Self.foreign, "an iss of the allowed tenant on a foreign tenant's token"),
                (Self.v2(Self.foreign), Self.tenant, "the allowed tid under a foreign tenant's iss"),
                (Self.v1(Self.tenant), Self.tenant, "a v1.0 token without accept_v1"),
                ("https://login.microsoftonline.com/\(Self.tenant)/extra/v2.0", Self.tenant, "a path inside the tenant part"),
            ] {
                let response = try await env.request("/v1/orders", token: Self.token(iss: iss, tid: tid))
                #expect(response.status == 401, "\(what)")
                #expect(response.json?["reason"] == .string("unknown_issuer"), "\(what)")
            }
            #expect(try await env.request("/v1/orders", token: Self.token(iss: Self.v2(Self.tenant), tid: Self.tenant, extra: ["tid": .null]))
                .json?["reason"] == .string("invalid_claims"), "no tid: nothing to match the issuer with")
            // App roles feed route requirements.
            #expect(try await env.request("/admin/x", token: Self.token(iss: Self.v2(Self.tenant), tid: Self.tenant, extra: [
                "roles": .array([.string("Orders.Reader")]),
            ])).json?["reason"] == .string("forbidden"))
            #expect(try await env.request("/admin/x", token: Self.token(iss: Self.v2(Self.tenant), tid: Self.tenant, extra: [
                "roles": .array([.string("Orders.Reader"), .string("Orders.Admin")]),
            ])).status == 200)
        }
    }

    @Test func anyTenantWithAWarningAndV1OnlyWhenAskedFor() async throws {
        try await TestEnvironment.run(configure: Self.entra(tenants: ["*"], acceptV1: true)) { (env: TestEnvironment) async throws in
            #expect(try await env.request("/v1/orders", token: Self.token(iss: Self.v2(Self.foreign), tid: Self.foreign)).status == 200)
            #expect(try await env.request("/v1/orders", token: Self.token(iss: Self.v1(Self.foreign), tid: Self.foreign)).status == 200)
            // Still its own tenant's issuer: a token cannot borrow another tenant's.
            #expect(try await env.request("/v1/orders", token: Self.token(iss: Self.v2(Self.tenant), tid: Self.foreign)).status == 401)
            #expect(env.operationalLog.contains { $0.contains("every tenant") }, "\(env.operationalLog)")
        }
    }
}
