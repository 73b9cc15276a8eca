import NIOHTTP1
import GatehousePolicy

extension OwnEndpoint {
    /// The request `/.gatehouse/check` judges: the one the fronting proxy describes with
    /// `X-Forwarded-Method` + `X-Forwarded-Uri` (or `X-Original-Method` / `X-Original-URI`),
    /// GET `/` by default; nil when that URI has no single normalized reading.
    static func describedRequest(_ head: HTTPRequestHead) -> (head: HTTPRequestHead, target: NormalizedTarget)? {
        let method = head.headers.first(name: "x-forwarded-method") ?? head.headers.first(name: "x-original-method") ?? "GET"
        let uri = head.headers.first(name: "x-forwarded-uri") ?? head.headers.first(name: "x-original-uri") ?? "/"
        guard let target = PathNormalizer.normalize(uri) else { return nil }
        return (HTTPRequestHead(version: head.version, method: HTTPMethod(rawValue: method), uri: uri, headers: head.headers), target)
    }
}
