public import Foundation
package import GatehouseSyntax
import GatehouseTokens
package import GatehouseVocabulary

/// Kubernetes service-account tokens (projected, audience-bound, rotated by the kubelet): keys from the API
/// server's `/openid/v1/jwks` over TLS checked against the cluster CA, fetched with the pod's own token
/// (re-read at each fetch: the kubelet rotates it). The namespace and service account are offered as
/// `kubernetes_namespace`, `kubernetes_service_account` (`namespace/name`, what route `service_accounts`
/// match) and `kubernetes_service_account_name`.
package enum KubernetesPreset {
    static let defaultIssuer = "https://kubernetes.default.svc.cluster.local"
    static let serviceAccountDirectory = "/var/run/secrets/kubernetes.io/serviceaccount"
    static let defaultCAFile = serviceAccountDirectory + "/ca.crt"
    static let defaultTokenFile = serviceAccountDirectory + "/token"
    /// `https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT`, as every pod has it.
    package static func apiServerFromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> URL? {
        guard let host = environment["KUBERNETES_SERVICE_HOST"], !host.isEmpty else { return nil }
        let port = environment["KUBERNETES_SERVICE_PORT"] ?? "443"
        return URL(string: "https://" + (host.contains(":") ? "[\(host)]" : host) + ":" + port)
    }

    /// The `kubernetes.io` claim's namespace and service account, offered as plain claims.
    package static func normalize(_ claims: [String: JSONValue]) throws(AuthFailure) -> [String: JSONValue] {
        guard let kubernetes = claims["kubernetes.io"]?.objectValue, let namespace = kubernetes["namespace"]?.stringValue,
              let name = kubernetes["serviceaccount"]?.objectValue?["name"]?.stringValue, !namespace.isEmpty, !name.isEmpty
        else { throw AuthFailure(.invalidClaims, "not a service-account token (no kubernetes.io namespace and serviceaccount name)") }
        var claims = claims
        claims["kubernetes_namespace"] = .string(namespace)
        claims["kubernetes_service_account_name"] = .string(name)
        claims["kubernetes_service_account"] = .string(namespace + "/" + name)
        return claims
    }
}

/// Where a Kubernetes provider's keys are, and with what it asks for them.
public struct KubernetesAPI: Sendable, Equatable {
    public var url: URL
    public var caFile: String
    public var tokenFile: String
}
