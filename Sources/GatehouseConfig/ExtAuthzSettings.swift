/// `[ext_authz]`: Gatehouse as the authorizer an Envoy gateway or mesh calls (docs/reference.md §14): one port
/// for gRPC (`envoy.service.auth.v3.Authorization/Check`, `grpc.health.v1.Health/Check`) and Envoy's HTTP protocol.
public struct ExtAuthzSettings: Sendable, Equatable {
    public var address: SocketAddressSetting
    /// What Envoy's `http_service.path_prefix` puts before the original path.
    public var httpPathPrefix = "/"
    public var tlsCertificatePath: String?
    public var tlsKeyPath: String?
    /// Only callers with a certificate from this CA (needs TLS).
    public var clientCAPath: String?
    /// Whether an allowed request keeps its token for the upstream (`Authorization`, the `token_header`); nil: as
    /// `[upstream] forward_token`. Applied on reload.
    public var forwardToken: Bool?

    public init(address: SocketAddressSetting) {
        self.address = address
    }
}
