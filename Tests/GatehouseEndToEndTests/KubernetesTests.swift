import Foundation
@testable import Gatehouse
import NIOCore
import Testing
import GatehouseSyntax
import GatehouseConfig
@testable import GatehouseAuth

/// `type = "kubernetes"`: service-account tokens verified with the API server's keys, fetched over TLS
/// checked against the cluster CA and authenticated with the pod's token file, re-read at each fetch (the
/// kubelet rotates it); namespace and service account reach the upstream and route requirements.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct KubernetesTests {
    static func serviceAccountToken(_ namespace: String, _ name: String, signer: TestSigner = .rsa, extra: [String: JSONValue] = [:]) -> String {
        let now = Int64(Date().timeIntervalSince1970)
        var claims: [String: JSONValue] = [
            "iss": .string(KubernetesPreset.defaultIssuer), "aud": .array([.string("orders")]),
            "sub": .string("system:serviceaccount:\(namespace):\(name)"), "iat": .number(String(now - 5)), "exp": .number(String(now + 600)),
            "kubernetes.io": .object([
                "namespace": .string(namespace), "serviceaccount": .object(["name": .string(name), "uid": .string("0a1b")]),
                "pod": .object(["name": .string("\(name)-7d9f"), "uid": .string("9c8d")]),
            ]),
        ]
        claims.merge(extra) { _, new in new }
        return signer.token(claims: claims)
    }

    @Test func serviceAccountTokensAreVerifiedWithTheClustersKeysAndTheRotatingPodToken() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-k8s-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let certificate = try TLSListenerTests.makeCertificate(in: directory)
        let tokenFile = directory + "/token"
        try "pod-token-1\n".write(toFile: tokenFile, atomically: true, encoding: .utf8)
        let api = try await TestKubernetesAPIServer(
            certificate: certificate.certificate, key: certificate.key,
            script: .init(jwks: TestSigner.jwks([.rsa]), expectedToken: "pod-token-1"))
        try await TestEnvironment.run(configure: { configuration, _ in
            var provider = ProviderSettings(name: "cluster", type: .kubernetes)
            provider.apiServer = api.url
            provider.caFile = certificate.certificate
            provider.tokenFile = tokenFile
            provider.audiences = ["orders"]
            configuration.providers = [provider]
            configuration.jwks.unknownKidCooldown = .zero
            var payments = RouteSettings(match: .prefix("/payments"))
            payments.serviceAccounts = ["payments/*"]
            var billing = RouteSettings(match: .prefix("/billing"))
            billing.serviceAccounts = ["billing/invoicer"]
            configuration.routes = [payments, billing]
        }) { (env: TestEnvironment) async throws in
            let token = Self.serviceAccountToken("payments", "api")
            #expect(try await env.request("/payments/charge", token: token).status == 200)
            let received = try #require(env.upstream.last)
            #expect(received.value("x-auth-k8s-namespace") == "payments")
            #expect(received.value("x-auth-k8s-service-account") == "api")
            #expect(received.value("x-auth-subject") == "system:serviceaccount:payments:api")
            #expect(try await env.request("/billing/x", token: token).json?["reason"] == .string("forbidden"))
            #expect(try await env.request("/billing/x", token: Self.serviceAccountToken("billing", "invoicer")).status == 200)
            #expect(try await env.request("/x", token: Self.serviceAccountToken("payments", "api", extra: ["kubernetes.io": .null]))
                .json?["reason"] == .string("invalid_claims"))
            #expect(try await env.request("/x", token: Self.serviceAccountToken("payments", "api", extra: ["aud": .string("other")]))
                .json?["reason"] == .string("wrong_audience"))

            // The kubelet rotates the pod's token and the cluster rotates its key: the refetch uses the new token.
            try "pod-token-2\n".write(toFile: tokenFile, atomically: true, encoding: .utf8)
            api.update {
                $0.expectedToken = "pod-token-2"
                $0.jwks = TestSigner.jwks([.rsa, .otherRSA])
            }
            #expect(try await env.request("/x", token: Self.serviceAccountToken("payments", "api", signer: .otherRSA)).status == 200)
            #expect(api.authorizations == ["Bearer pod-token-1", "Bearer pod-token-2"], "\(api.authorizations)")
        }
        await api.close()
    }

    /// An API server whose certificate does not chain to `ca_file` never gives keys: 503, not a skipped check.
    @Test func anAPIServerOutsideTheClusterCAIsNotBelieved() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-k8s-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory + "/other", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let certificate = try TLSListenerTests.makeCertificate(in: directory)
        let otherCA = try TLSListenerTests.makeCertificate(in: directory + "/other")
        try "pod-token\n".write(toFile: directory + "/token", atomically: true, encoding: .utf8)
        let api = try await TestKubernetesAPIServer(
            certificate: certificate.certificate, key: certificate.key, script: .init(jwks: TestSigner.jwks([.rsa]), expectedToken: "pod-token"))
        try await TestEnvironment.run(waitForKeys: false, configure: { configuration, _ in
            var provider = ProviderSettings(name: "cluster", type: .kubernetes)
            provider.apiServer = api.url
            provider.caFile = otherCA.certificate
            provider.tokenFile = directory + "/token"
            provider.audiences = ["orders"]
            configuration.providers = [provider]
        }) { (env: TestEnvironment) async throws in
            #expect(await Contract.eventually { env.gatehouse.keyStore.lastFetchFailed(provider: 0) })
            let response = try await env.request("/x", token: Self.serviceAccountToken("payments", "api"))
            #expect(response.status == 503 && response.json?["reason"] == .string("keys_unavailable"))
            #expect(api.authorizations.isEmpty, "the pod's token was never sent to a server the CA does not vouch for")
        }
        await api.close()
    }

    /// `token_review = true`: the API server is asked whether it still authenticates the token (once per token
    /// and cache lifetime); the token of a deleted pod is refused before its `exp`.
    @Test func withTokenReviewTheTokenOfADeletedPodIsRefused() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-k8s-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let certificate = try TLSListenerTests.makeCertificate(in: directory)
        try "pod-token\n".write(toFile: directory + "/token", atomically: true, encoding: .utf8)
        let api = try await TestKubernetesAPIServer(
            certificate: certificate.certificate, key: certificate.key, script: .init(jwks: TestSigner.jwks([.rsa]), expectedToken: "pod-token"))
        try await TestEnvironment.run(configure: { configuration, _ in
            var provider = ProviderSettings(name: "cluster", type: .kubernetes)
            provider.apiServer = api.url
            provider.caFile = certificate.certificate
            provider.tokenFile = directory + "/token"
            provider.audiences = ["orders"]
            provider.tokenReview = true
            configuration.providers = [provider]
        }) { (env: TestEnvironment) async throws in
            let live = Self.serviceAccountToken("payments", "api")
            #expect(try await env.request("/x", token: live).status == 200)
            #expect(try await env.request("/x", token: live).status == 200)
            #expect(api.reviews == 1, "the second request was answered from the cache")
            let gone = Self.serviceAccountToken("payments", "api", extra: ["jti": .string("deleted-pod")])
            api.update { $0.deleted.insert(gone) }
            let refused = try await env.request("/x", token: gone)
            #expect(refused.status == 401 && refused.json?["reason"] == .string("token_inactive"), "\(refused)")
            #expect(env.failureLog.last?["detail"]?.stringValue?.contains("deleted pod") == true)
            #expect(api.reviews == 2)
        }
        await api.close()
    }
}

