/// `[listen] client_cert_header_format`.
public enum ClientCertificateHeaderFormat: String, Sendable, Equatable {
    /// Envoy's `x-forwarded-client-cert`.
    case xfcc
    /// A URL-encoded PEM certificate (nginx `$ssl_client_escaped_cert`).
    case pem
}
