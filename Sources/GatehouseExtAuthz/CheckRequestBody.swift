import NIOCore

/// A request body on the `[ext_authz]` port, gathered whole up to `ExtAuthzContext.maxCheckRequestBytes`; past it,
/// dropped and marked, so the request is answered INVALID_ARGUMENT (gRPC) without holding more. Both HTTP doors of
/// the port gather with it.
struct CheckRequestBody {
    private(set) var bytes: ByteBuffer?
    private(set) var isTooLarge = false

    mutating func append(_ part: inout ByteBuffer) {
        guard !isTooLarge else { return }
        if (bytes?.readableBytes ?? 0) + part.readableBytes > ExtAuthzContext.maxCheckRequestBytes {
            isTooLarge = true
            bytes = nil
        } else if bytes == nil {
            bytes = part
        } else {
            bytes!.writeBuffer(&part)
        }
    }
}
