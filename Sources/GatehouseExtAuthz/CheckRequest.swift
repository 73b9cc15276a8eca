/// What Gatehouse reads of an Envoy ext_authz `CheckRequest` (envoy.service.auth.v3): the original request
/// as Envoy describes it (`attributes.request.http`), who sent it (`attributes.source`). Decoded strictly
/// (`CheckRequest+Decoding`); every other field is skipped.
package struct CheckRequest: Sendable, Equatable {
    /// `http.id`: Envoy's request id (also in `headers` as `x-request-id` when it forwards one).
    package var id = ""
    package var method = ""
    /// The path with its query, as `:path` said.
    package var path = ""
    package var host = ""
    package var scheme = ""
    /// `HTTP/1.1`, `HTTP/2`, …
    package var protocolName = ""
    /// The client's fields, names in lower case, pseudo-headers (`:method`, `:path`, `:authority`, `:scheme`)
    /// included; Envoy joins a repeated field's values with ",". In the order they came.
    package var headers: [Header] = []
    /// A field value that was not UTF-8 (`header_map`'s `raw_value`): the request is refused like on the doors.
    package var hasValueNotUTF8 = false
    /// `source.address.socket_address.address`: the client.
    package var sourceAddress = ""
    /// `source.certificate`: the client's certificate, URL-encoded PEM (`include_peer_certificate: true`).
    package var sourceCertificate = ""
    /// `context_extensions`: pairs Envoy sets per route or virtual host, which `[[route]] context` matches.
    package var contextExtensions: [String: String] = [:]

    package struct Header: Sendable, Equatable {
        package var name: String
        package var value: String
    }
}
