package import GatehouseSyntax

/// The wire form of `CheckRequest`, read by field number (envoy/service/auth/v3/external_auth.proto,
/// attribute_context.proto; envoy/config/core/v3/address.proto, base.proto).
extension CheckRequest {
    /// Field values and names of more than this are refused whole (a CheckRequest is a request head).
    package static let maxHeaders = 1024

    package init(decoding bytes: ArraySlice<UInt8>) throws(ProtobufReader.Malformed) {
        self.init()
        var reader = ProtobufReader(bytes)
        while let (number, type) = try reader.nextField() {
            guard number == 1 else {  // attributes
                try reader.skip(type)
                continue
            }
            try ProtobufReader.expect(type, .lengthDelimited, field: "attributes")
            var attributes = try reader.readMessage()
            try readAttributes(&attributes)
        }
        guard !method.isEmpty, !path.isEmpty else { throw ProtobufReader.Malformed("no attributes.request.http method and path") }
    }

    /// AttributeContext: source (1), request (4), context_extensions (10, a map).
    private mutating func readAttributes(_ reader: inout ProtobufReader) throws(ProtobufReader.Malformed) {
        while let (number, type) = try reader.nextField() {
            switch number {
            case 1:
                try ProtobufReader.expect(type, .lengthDelimited, field: "source")
                var peer = try reader.readMessage()
                try readSource(&peer)
            case 4:
                try ProtobufReader.expect(type, .lengthDelimited, field: "request")
                var request = try reader.readMessage()
                while let (field, fieldType) = try request.nextField() {
                    guard field == 2 else {  // http
                        try request.skip(fieldType)
                        continue
                    }
                    try ProtobufReader.expect(fieldType, .lengthDelimited, field: "request.http")
                    var http = try request.readMessage()
                    try readHTTP(&http)
                }
            case 10:
                try ProtobufReader.expect(type, .lengthDelimited, field: "context_extensions")
                var entry = try reader.readMessage()
                let (key, value) = try Self.readStringPair(&entry)
                // A map holds a key once; a repeated key is a later entry winning, as protobuf parsers read a map.
                contextExtensions[key] = value
                guard contextExtensions.count <= Self.maxHeaders else { throw ProtobufReader.Malformed("over \(Self.maxHeaders) context extensions") }
            default:
                try reader.skip(type)
            }
        }
    }

    /// AttributeContext.Peer: address (1) → Address.socket_address (1) → SocketAddress.address (2); certificate (5).
    private mutating func readSource(_ reader: inout ProtobufReader) throws(ProtobufReader.Malformed) {
        while let (number, type) = try reader.nextField() {
            switch number {
            case 1:
                try ProtobufReader.expect(type, .lengthDelimited, field: "source.address")
                var address = try reader.readMessage()
                while let (field, fieldType) = try address.nextField() {
                    guard field == 1 else {
                        try address.skip(fieldType)
                        continue
                    }
                    try ProtobufReader.expect(fieldType, .lengthDelimited, field: "socket_address")
                    var socket = try address.readMessage()
                    while let (socketField, socketType) = try socket.nextField() {
                        guard socketField == 2 else {
                            try socket.skip(socketType)
                            continue
                        }
                        try ProtobufReader.expect(socketType, .lengthDelimited, field: "socket_address.address")
                        sourceAddress = try socket.readString()
                    }
                }
            case 5:
                try ProtobufReader.expect(type, .lengthDelimited, field: "source.certificate")
                sourceCertificate = try reader.readString()
            default:
                try reader.skip(type)
            }
        }
    }

    /// AttributeContext.HttpRequest: id (1), method (2), headers (3, a map), path (4), host (5), scheme (6),
    /// protocol (10), header_map (13, with raw values).
    private mutating func readHTTP(_ reader: inout ProtobufReader) throws(ProtobufReader.Malformed) {
        var mapHeaders: [Header] = []
        var rawHeaders: [Header]?
        while let (number, type) = try reader.nextField() {
            switch number {
            case 1, 2, 4, 5, 6, 10:
                try ProtobufReader.expect(type, .lengthDelimited, field: "request.http field \(number)")
                let text = try reader.readString()
                switch number {
                case 1: id = text
                case 2: method = text
                case 4: path = text
                case 5: host = text
                case 6: scheme = text
                default: protocolName = text
                }
            case 3:
                try ProtobufReader.expect(type, .lengthDelimited, field: "request.http.headers")
                var entry = try reader.readMessage()
                mapHeaders.append(try Self.readEntry(&entry, valueField: 2, rawValueField: nil).header)
                guard mapHeaders.count <= Self.maxHeaders else { throw ProtobufReader.Malformed("over \(Self.maxHeaders) headers") }
            case 13:
                try ProtobufReader.expect(type, .lengthDelimited, field: "request.http.header_map")
                var map = try reader.readMessage()
                var headers: [Header] = []
                while let (field, fieldType) = try map.nextField() {
                    guard field == 1 else {
                        try map.skip(fieldType)
                        continue
                    }
                    try ProtobufReader.expect(fieldType, .lengthDelimited, field: "header_map.headers")
                    var value = try map.readMessage()
                    let read = try Self.readEntry(&value, valueField: 2, rawValueField: 3)
                    hasValueNotUTF8 = hasValueNotUTF8 || read.notUTF8
                    headers.append(read.header)
                    guard headers.count <= Self.maxHeaders else { throw ProtobufReader.Malformed("over \(Self.maxHeaders) headers") }
                }
                rawHeaders = headers
            default:
                try reader.skip(type)
            }
        }
        headers = rawHeaders ?? mapHeaders
        // A map has one entry per key (Envoy joins repeated fields): a key twice is no CheckRequest Envoy sends,
        // and which of them would be meant is anybody's guess. (A typical request has a dozen: compared pairwise,
        // a set only past 32.)
        if headers.contains(where: { $0.name.isEmpty }) { throw ProtobufReader.Malformed("a header without a name") }
        if headers.count <= 32 {
            for (index, header) in headers.enumerated() where headers[..<index].contains(where: { $0.name == header.name }) {
                throw ProtobufReader.Malformed("header \(header.name) twice")
            }
        } else {
            var names = Set<String>()
            for header in headers where !names.insert(header.name).inserted { throw ProtobufReader.Malformed("header \(header.name) twice") }
        }
    }

    /// A `map<string, string>` entry: key 1, value 2, as written.
    private static func readStringPair(_ reader: inout ProtobufReader) throws(ProtobufReader.Malformed) -> (String, String) {
        var key = "", value = ""
        while let (number, type) = try reader.nextField() {
            switch number {
            case 1, 2:
                try ProtobufReader.expect(type, .lengthDelimited, field: "map entry field \(number)")
                if number == 1 { key = try reader.readString() } else { value = try reader.readString() }
            default:
                try reader.skip(type)
            }
        }
        return (key, value)
    }

    /// A map entry (key 1, value 2) or a HeaderValue (key 1, value 2, raw_value 3).
    private static func readEntry(
        _ reader: inout ProtobufReader, valueField: Int, rawValueField: Int?
    ) throws(ProtobufReader.Malformed) -> (header: Header, notUTF8: Bool) {
        var header = Header(name: "", value: "")
        var notUTF8 = false
        while let (number, type) = try reader.nextField() {
            if number == 1 {
                try ProtobufReader.expect(type, .lengthDelimited, field: "header key")
                header.name = HTTP2FieldName.lowercased(try reader.readString())
            } else if number == valueField {
                try ProtobufReader.expect(type, .lengthDelimited, field: "header value")
                header.value = try reader.readString()
            } else if number == rawValueField {
                try ProtobufReader.expect(type, .lengthDelimited, field: "header raw_value")
                let raw = try reader.readLengthDelimited()
                if let text = StringBytes.string(validatingUTF8: raw) {
                    if !raw.isEmpty { header.value = text }
                } else {
                    notUTF8 = true
                }
            } else {
                try reader.skip(type)
            }
        }
        return (header, notUTF8)
    }
}
