// libFuzzer target for the ext_authz CheckRequest reader (Fuzz/README.md): ProtobufReader, CheckRequest(decoding:),
// and what a Check builds of it before the core judges it (CheckDriver.headerBlock, HTTP2RequestHeadReader).
//
// Input: a CheckRequest's bytes (envoy.service.auth.v3), however broken. Refusals (ProtobufReader.Malformed) are
// expected. Besides "no crash, no hang", it checks:
// - an accepted request has a method and a path, at most CheckRequest.maxHeaders headers, names non-empty, without
//   an ASCII upper-case letter, and unique;
// - writing the accepted request again (as Envoy would, `headers` map) and reading it gives the same request;
// - the header block a Check judges is built and read without a crash, and holds the request's method and path;
// - the gRPC message framing round-trips the input.
@testable import Gatehouse
import FuzzSupport
import NIOCore
import GatehouseSyntax
import GatehouseHTTP
import GatehouseExtAuthz

public func fuzzCheckRequest(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    let framed = GRPCMessageFraming.frame(input, allocator: ByteBufferAllocator())
    require(GRPCMessageFraming.singleMessage(in: framed) == input, "the gRPC framing does not round-trip")
    let check: CheckRequest
    do {
        check = try CheckRequest(decoding: input[...])
    } catch {
        if printOutcome { print(error) }
        return 0
    }
    if printOutcome { print(check) }
    require(!check.method.isEmpty && !check.path.isEmpty, "accepted without a method or a path")
    require(check.headers.count <= CheckRequest.maxHeaders, "\(check.headers.count) headers accepted")
    require(Set(check.headers.map(\.name)).count == check.headers.count, "a header name twice")
    require(check.headers.allSatisfy { !$0.name.isEmpty && !$0.name.utf8.contains { $0 >= 0x41 && $0 <= 0x5A } }, "an empty or upper-case name")

    let again: CheckRequest
    do {
        again = try CheckRequest(decoding: encode(check)[...])
    } catch {
        fatalError("an accepted request, written again, is refused: \(error)\n\(check)")
    }
    var expected = check
    expected.hasValueNotUTF8 = false  // written again, every value is text
    require(again == expected, "written again, the request reads otherwise:\n\(check)\n\(again)")

    if let block = try? CheckDriver.headerBlock(of: check) {
        require(block.contains { $0.0 == ":method" } && block.contains { $0.0 == ":path" }, "a block without :method or :path")
        _ = HTTP2RequestHeadReader.read(fields: block, endStream: true, maxHeaderBytes: 16384)
    }
    return 0
}

/// The request as Envoy writes it: attributes (1) → source (1) {address (1) → socket_address (1) → address (2),
/// certificate (5)}, request (4) → http (2) {id 1, method 2, headers 3, path 4, host 5, scheme 6, protocol 10},
/// context_extensions (10, map entries in key order).
private func encode(_ check: CheckRequest) -> [UInt8] {
    var writer = ProtobufWriter(capacity: 256)
    writer.writeMessageField(1) { attributes in
        attributes.writeMessageField(1) { source in
            source.writeMessageField(1) { address in
                address.writeMessageField(1) { $0.writeStringFieldIfSet(2, check.sourceAddress) }
            }
            source.writeStringFieldIfSet(5, check.sourceCertificate)
        }
        attributes.writeMessageField(4) { request in
            request.writeMessageField(2) { http in
                http.writeStringFieldIfSet(1, check.id)
                http.writeStringFieldIfSet(2, check.method)
                for header in check.headers {
                    http.writeMessageField(3) { entry in
                        entry.writeStringFieldIfSet(1, header.name)
                        entry.writeStringFieldIfSet(2, header.value)
                    }
                }
                http.writeStringFieldIfSet(4, check.path)
                http.writeStringFieldIfSet(5, check.host)
                http.writeStringFieldIfSet(6, check.scheme)
                http.writeStringFieldIfSet(10, check.protocolName)
            }
        }
        for (key, value) in check.contextExtensions.sorted(by: { $0.key < $1.key }) {
            attributes.writeMessageField(10) { entry in
                entry.writeStringFieldIfSet(1, key)
                entry.writeStringFieldIfSet(2, value)
            }
        }
    }
    return writer.bytes
}
