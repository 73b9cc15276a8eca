/// The cost model of rules, after the Kubernetes API server's: steps counted, not time, so the core stays without a
/// clock. Every node evaluated is one unit, every element a comprehension visits one more, and reading strings costs
/// a unit per 64 bytes (a regular expression: per 64 scalar-instruction pairs).
///
/// At load an expression's worst case is estimated with every collection and string of the token or the request
/// as long as the request head allows (`collectionBound`), and refused when it could pass `limit`: one pass over a
/// claim list loads; a pass over it inside a pass over it does not. An element of such a collection counts as
/// `elementSize` long: together its elements hold no more bytes than the whole, so the strings and lists inside them
/// cost, summed over a pass, what the whole does. At run time the same units are counted exactly and evaluation
/// stops, denying, at `limit`.
struct CELCost: Sendable {
    /// The most units one evaluation may spend (the Kubernetes API server's per-call limit).
    static let defaultLimit = 1_000_000

    let limit: Int
    /// The longest a list, map or string from the token or the request can be: a token's claims fit in the request
    /// head, base64url takes 4 bytes for 3, and every element takes at least 2 (`1,`).
    let collectionBound: Double
    /// The same for an MCP message's `arguments` (`mcp`): a resource's `max_message_bytes`, 2 bytes an element.
    let messageBound: Double
    /// An element's amortized length (see above).
    let elementSize: Double = 16

    /// The smaller of the two wholes: a value at least this long is a whole (or as long as one), whose parts may be as long.
    var wholeBound: Double { min(collectionBound, messageBound) }

    init(maxHeaderBytes: Int, maxMessageBytes: Int = 1 << 20, limit: Int = CELCost.defaultLimit) {
        self.limit = limit
        collectionBound = Double(max(1, maxHeaderBytes * 3 / 8))
        messageBound = Double(max(1, maxMessageBytes / 2))
    }

    /// What reading `bytes` of string costs.
    static func reading(_ bytes: Double) -> Double { 1 + bytes / 64 }

    static func reading(_ bytes: Int) -> Int { 1 + bytes / 64 }
}
