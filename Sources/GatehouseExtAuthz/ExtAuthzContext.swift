package import GatehouseProxy
/// What every Check on the `[ext_authz]` port is answered with: the services of the moment (a reload applies to
/// the next Check), the doors' header limit, where Envoy's HTTP protocol puts the original path, readiness for
/// the health check, and the Check metrics.
package struct ExtAuthzContext: Sendable {
    package let handle: ServicesHandle
    package let maxHeaderBytes: Int
    /// `[ext_authz] http_path_prefix`, without a trailing slash ("" for "/").
    package let httpPathPrefix: String
    /// What `/readyz` would say (200: true).
    package let isReady: @Sendable () -> Bool
    package let metrics: ExtAuthzMetrics

    package init(
        handle: ServicesHandle, maxHeaderBytes: Int, httpPathPrefix: String,
        isReady: @escaping @Sendable () -> Bool, metrics: ExtAuthzMetrics
    ) {
        self.handle = handle
        self.maxHeaderBytes = maxHeaderBytes
        self.httpPathPrefix = httpPathPrefix
        self.isReady = isReady
        self.metrics = metrics
    }

    /// A CheckRequest larger than this is refused unread (INVALID_ARGUMENT). Envoy's is a request head (a few KiB;
    /// Gatehouse reads no body); the bound is what one stream may hold, 100 streams a connection.
    static let maxCheckRequestBytes = 256 << 10
}
