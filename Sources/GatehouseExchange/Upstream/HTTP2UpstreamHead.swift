package import GatehouseHTTP

/// An HTTP/2 upstream's request head in the three parts nghttp2 is given, in order (`NGHTTP2Session.submitRequest`):
/// the pseudo-header and client fields; the identity's fields, kept by the connection for the token's next request
/// and given again as they are (shared, not copied: a copy of the list retains and releases each of its strings);
/// and the fields made anew for each request (the assertion, signed again).
package struct HTTP2UpstreamHead {
    package var fields: [NGHTTP2Session.OutboundField] = []
    package var identityFields: [NGHTTP2Session.OutboundField] = []
    package var signedFields: [NGHTTP2Session.OutboundField] = []
    /// `identityFields` were written for this request (not given): the connection keeps them for the next.
    package var identityFieldsWritten = false

    /// Every field, in order.
    package var allFields: [NGHTTP2Session.OutboundField] { fields + identityFields + signedFields }
}
