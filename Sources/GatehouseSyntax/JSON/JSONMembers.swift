/// A JSON object's members looked up by name: a dictionary made by `StrictJSON`, or a `LazyJSONObject` that makes the
/// value asked for only. What the claim checks read, whichever a token's claims are held in.
public protocol JSONMembers {
    subscript(name: String) -> JSONValue? { get }
}

extension Dictionary: JSONMembers where Key == String, Value == JSONValue {}

extension LazyJSONObject: JSONMembers {}
