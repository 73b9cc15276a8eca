import NIOHTTP1
import GatehouseSyntax
import GatehouseExchange

/// The `CheckResponse` (envoy.service.auth.v3) of a verdict, in the wire format: `status` (google.rpc.Status),
/// then `denied_response` or `ok_response`, then `dynamic_metadata` (google.protobuf.Struct).
enum CheckResponseEncoding {
    /// google.rpc.Code values.
    enum Code: UInt64 {
        case ok = 0, invalidArgument = 3, permissionDenied = 7, unavailable = 14, unauthenticated = 16
    }

    /// envoy.config.core.v3.HeaderValueOption.HeaderAppendAction.
    private static let appendIfExistsOrAdd: UInt64 = 0
    private static let overwriteIfExistsOrAdd: UInt64 = 2

    static func encode(_ verdict: CheckVerdict) -> [UInt8] {
        var writer = ProtobufWriter(capacity: 512)
        switch verdict {
        case .allow(let allowance):
            writer.writeMessageField(1) { _ in }  // status: OK (code 0)
            writer.writeMessageField(3) { ok in  // ok_response
                for (name, value) in allowance.headersToSet { writeHeaderOption(2, name, value, overwrite: true, into: &ok) }
                for name in allowance.headersToRemove { ok.writeStringField(5, name) }
            }
            if !allowance.metadata.isEmpty {
                writer.writeMessageField(4) { metadata in writeStruct(allowance.metadata, into: &metadata) }
            }
        case .deny(let response):
            writer.writeMessageField(1) { status in
                status.writeVarintFieldIfSet(1, code(for: response.status).rawValue)
                status.writeStringFieldIfSet(2, response.grpcMessage ?? response.status.reasonPhrase)
            }
            writer.writeMessageField(2) { denied in  // denied_response
                denied.writeMessageField(1) { $0.writeVarintFieldIfSet(1, UInt64(response.status.code)) }  // HttpStatus
                var seen: Set<String> = []
                for (name, value) in response.headers {
                    // A name's first value replaces what Envoy would put there; a second (two challenges) is added.
                    writeHeaderOption(2, name, value, overwrite: seen.insert(HTTP2FieldName.lowercased(name)).inserted, into: &denied)
                }
                denied.writeStringFieldIfSet(3, response.body)
            }
        }
        return writer.bytes
    }

    /// The gRPC status a denial is reported with (Envoy only asks whether it is OK; the HTTP status says the rest).
    static func code(for status: HTTPResponseStatus) -> Code {
        switch status {
        case .unauthorized: .unauthenticated
        case .serviceUnavailable: .unavailable
        case .badRequest, .requestHeaderFieldsTooLarge: .invalidArgument
        default: .permissionDenied
        }
    }

    private static func writeHeaderOption(_ field: Int, _ name: String, _ value: String, overwrite: Bool, into writer: inout ProtobufWriter) {
        writer.writeMessageField(field) { option in
            option.writeMessageField(1) { header in
                header.writeStringFieldIfSet(1, name)
                header.writeStringFieldIfSet(2, value)
            }
            option.writeVarintFieldIfSet(3, overwrite ? overwriteIfExistsOrAdd : appendIfExistsOrAdd)
        }
    }

    /// Struct { fields (1): map<string, Value> } with `gatehouse` → Struct of the values (Envoy's dynamic
    /// metadata is keyed by filter namespace).
    private static func writeStruct(_ values: [(String, CheckAllowance.MetadataValue)], into writer: inout ProtobufWriter) {
        writer.writeMessageField(1) { entry in
            entry.writeStringFieldIfSet(1, "gatehouse")
            entry.writeMessageField(2) { value in
                value.writeMessageField(5) { inner in  // struct_value
                    for (key, item) in values {
                        inner.writeMessageField(1) { field in
                            field.writeStringFieldIfSet(1, key)
                            field.writeMessageField(2) { writeValue(item, into: &$0) }
                        }
                    }
                }
            }
        }
    }

    /// google.protobuf.Value: string_value (3) or list_value (6) of string values.
    private static func writeValue(_ value: CheckAllowance.MetadataValue, into writer: inout ProtobufWriter) {
        switch value {
        case .string(let text):
            writer.writeStringField(3, text)
        case .list(let items):
            writer.writeMessageField(6) { list in
                for item in items { list.writeMessageField(1) { $0.writeStringField(3, item) } }
            }
        }
    }
}
