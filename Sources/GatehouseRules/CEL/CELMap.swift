import NIOHTTP1
import GatehouseSyntax

/// A map: the token's JSON object, a request's header fields, or entries an expression built.
enum CELMap: Sendable {
    case json([String: JSONValue])
    /// Lower-case names to values; a field sent more than once is its values joined with "," (as Envoy describes
    /// it to a Check), so the same request reads the same on every way in.
    case headers(HTTPHeaders)
    case entries(CELMapEntries)

    var count: Int {
        switch self {
        case .json(let members): members.count
        case .headers: keys.count
        case .entries(let entries): entries.keys.count
        }
    }

    /// What reading the map costs (`CELCost`): its entries, or for header fields their number, which bounds the names
    /// without listing them (a rule's `in request.headers` makes no array).
    var costLength: Int {
        switch self {
        case .headers(let headers): headers.count
        default: count
        }
    }

    /// The value at `key`; nil when absent. Numeric keys compare by value (`1`, `1u` and `1.0` are one key).
    func value(at key: CELValue) -> CELValue? {
        switch self {
        case .json(let members):
            guard case .string(let name) = key else { return nil }
            return members[name].map(CELValue.init(json:))
        case .headers(let headers):
            guard case .string(let name) = key, name.utf8.allSatisfy({ !(UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }) else { return nil }
            let values = headers[name]
            return values.isEmpty ? nil : .string(values.joined(separator: ","))
        case .entries(let entries):
            return CELMapKey(key).flatMap { entries.index[$0] }.map { entries.values[$0] }
        }
    }

    /// The keys in a stable order: as built, or sorted for the token's object (JSON keeps no order Swift knows).
    var keys: [CELValue] {
        switch self {
        case .json(let members):
            return members.keys.sorted().map { .string($0) }
        case .headers(let headers):
            var seen: [String] = []
            for header in headers {
                let name = String(decoding: header.name.utf8.map(ASCIIByte.lowercased), as: UTF8.self)
                if !seen.contains(name) { seen.append(name) }
            }
            return seen.map { .string($0) }
        case .entries(let entries):
            return entries.keys
        }
    }
}

/// The entries of a map an expression built (`{"a": 1}`), in the order written.
struct CELMapEntries: Sendable {
    private(set) var keys: [CELValue] = []
    private(set) var values: [CELValue] = []
    fileprivate private(set) var index: [CELMapKey: Int] = [:]

    /// Adds an entry; false when the key is already there or cannot be a key (CEL's keys: int, uint, bool, string).
    mutating func insert(_ key: CELValue, _ value: CELValue) -> Bool {
        if case .double = key { return false }
        guard let mapKey = CELMapKey(key), index[mapKey] == nil else { return false }
        index[mapKey] = keys.count
        keys.append(key)
        values.append(value)
        return true
    }
}

/// A map key up to CEL's equality: an int and a uint of one value are one key, and an integral double finds it.
private enum CELMapKey: Hashable {
    case bool(Bool)
    case string(String)
    case signed(Int64)
    /// A uint above `Int64.max`.
    case large(UInt64)

    init?(_ value: CELValue) {
        switch value {
        case .bool(let flag): self = .bool(flag)
        case .string(let text): self = .string(text)
        case .int(let number): self = .signed(number)
        case .uint(let number): self = number <= UInt64(Int64.max) ? .signed(Int64(number)) : .large(number)
        case .double(let number):
            if let exact = Int64(exactly: number) {
                self = .signed(exact)
            } else if let exact = UInt64(exactly: number) {
                self = .large(exact)
            } else {
                return nil
            }
        default:
            return nil
        }
    }
}
