/// A request target reduced to its one canonical form: what routes are matched against is exactly
/// what is forwarded upstream (docs/reference.md §5, docs/security.md P15/P16).
public struct NormalizedTarget: Sendable, Equatable {
    /// The canonical origin-form path: starts with `/`, no dot segments, no empty segments (a trailing
    /// slash is kept), unreserved characters decoded, every other escape as upper-case `%XX`.
    public let path: String
    /// The query exactly as the client sent it, without the leading `?`; nil when there was no `?`.
    /// Never used for routing.
    public let query: Substring?

    public init(path: String, query: Substring?) {
        self.path = path
        self.query = query
    }

    /// The target to send upstream: the canonical path, then `?` and the untouched query if any.
    public var requestURI: String {
        guard let query else { return path }
        return path + "?" + query
    }
}
