/// An MCP message read without its tree (issue 56): the members rules read (`jsonrpc`, `method`, `params.name` or
/// `params.uri`) are made, `params.arguments` is kept as its bytes until a rule reads it, and everything else is
/// checked in place (`validateValue`). For the messages `MCPMessage.read` accepts; anything it is not sure of (a
/// refusal, or a document it reads differently) is left to the tree, which answers with the refusal's words.
extension MCPMessage {
    /// The message `buffer` holds, if it is one and the scan is sure; nil sends the caller to the tree.
    package static func scan(_ buffer: UnsafeBufferPointer<UInt8>) -> MCPMessage? {
        var parser = StrictJSONParser(input: buffer, maxDepth: maxDepth)
        return try? parser.scanMCPMessage()
    }
}

extension StrictJSONParser {
    /// What the scan keeps of `params` (an object).
    private struct ScannedParams {
        var name: String?
        var uri: String?
        var arguments: Range<Int>?
    }

    /// The message at `position`, or nil where the tree decides (not an object, not `"jsonrpc": "2.0"`, neither a
    /// request nor a response); throws where the document is not strict JSON.
    mutating func scanMCPMessage() throws(StrictJSONError) -> MCPMessage? {
        skipWhitespace()
        guard position < input.count, input[position] == UInt8(ascii: "{") else { return nil }
        position += 1
        skipWhitespace()
        guard position < input.count, input[position] != UInt8(ascii: "}") else { return nil }
        var names: [String?] = []
        names.reserveCapacity(16)
        names.append(nil)
        var isVersion2 = false, isResponse = false
        var method: String??
        var params: ScannedParams?
        while true {
            switch try memberName(&names) {
            case "jsonrpc":
                isVersion2 = try scanString(names: &names, enclosingDepth: 1) == "2.0"
            case "method":
                method = .some(try scanString(names: &names, enclosingDepth: 1))
            case "params" where input[position] == UInt8(ascii: "{"):
                params = try scanParams(names: &names)
            case "result", "error":
                isResponse = true
                try validateValue(enclosingDepth: 1, names: &names)
            default:
                try validateValue(enclosingDepth: 1, names: &names)
            }
            if try memberEnds() { break }
        }
        try closeObject(&names)
        skipWhitespace()
        guard position == input.count, isVersion2 else { return nil }
        guard let method else { return isResponse ? MCPMessage(method: "") : nil }
        guard let method else { return nil }  // `method` is not a string
        guard let params else { return MCPMessage(method: method) }
        switch method {
        case "tools/call":
            return MCPMessage(method: method, name: params.name ?? "", argumentsJSON: params.arguments.map { Array(input[$0]) })
        case "prompts/get":
            return MCPMessage(method: method, name: params.name ?? "")
        case "resources/read", "resources/subscribe", "resources/unsubscribe":
            return MCPMessage(method: method, name: params.uri ?? "")
        default:
            return MCPMessage(method: method)
        }
    }

    /// The next member's name (recorded in `names`, for the duplicate check), with `position` at its value.
    private mutating func memberName(_ names: inout [String?]) throws(StrictJSONError) -> String {
        let name = try parseMemberName().name
        names.append(name)
        guard position < input.count else { throw failure("unexpected end of input") }
        return name
    }

    /// After a member's value: true at the object's `}`, false at a `,` (and past the whitespace after it).
    private mutating func memberEnds() throws(StrictJSONError) -> Bool {
        skipWhitespace()
        guard position < input.count else { throw failure("unexpected end of input") }
        let byte = input[position]
        position += 1
        if byte == UInt8(ascii: "}") { return true }
        guard byte == UInt8(ascii: ",") else { throw failure("expected ',' or '}'") }
        skipWhitespace()
        return false
    }

    /// The string value at `position`, or nil (checked and passed) when the value is not a string.
    private mutating func scanString(names: inout [String?], enclosingDepth: Int) throws(StrictJSONError) -> String? {
        guard input[position] == UInt8(ascii: "\"") else {
            try validateValue(enclosingDepth: enclosingDepth, names: &names)
            return nil
        }
        return try parseString()
    }

    /// `params` (at its `{`): its `name` and `uri` if strings, where its `arguments` object is; the rest checked.
    private mutating func scanParams(names: inout [String?]) throws(StrictJSONError) -> ScannedParams {
        var scanned = ScannedParams()
        position += 1
        skipWhitespace()
        if position < input.count, input[position] == UInt8(ascii: "}") {
            position += 1
            return scanned
        }
        names.append(nil)
        while true {
            switch try memberName(&names) {
            case "name":
                scanned.name = try scanString(names: &names, enclosingDepth: 2)
            case "uri":
                scanned.uri = try scanString(names: &names, enclosingDepth: 2)
            case "arguments":
                let start = position
                try validateValue(enclosingDepth: 2, names: &names)
                scanned.arguments = input[start] == UInt8(ascii: "{") ? start..<position : nil
            default:
                try validateValue(enclosingDepth: 2, names: &names)
            }
            if try memberEnds() { break }
        }
        try closeObject(&names)
        return scanned
    }
}
