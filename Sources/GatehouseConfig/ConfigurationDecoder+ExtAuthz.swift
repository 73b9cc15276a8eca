// [ext_authz]: the port an Envoy gateway or mesh calls for its authorization decisions.
extension ConfigurationDecoder {
    static func extAuthzSettings(_ table: TOMLReader) -> ExtAuthzSettings? {
        let address = table.parsed("address", ConfigSyntax.socketAddress)
        if !table.contains("address") { table.report("address", "required (host:port of the ext_authz port, e.g. \"127.0.0.1:9191\")") }
        var settings = address.map(ExtAuthzSettings.init)
        if let prefix = table.nonEmptyString("http_path_prefix") {
            if prefix.hasPrefix("/"), !prefix.contains("?"), !prefix.contains("#"), !prefix.contains(" ") {
                settings?.httpPathPrefix = prefix
            } else {
                table.report("http_path_prefix", "must be a path starting with / (what Envoy's http_service path_prefix says)")
            }
        }
        settings?.tlsCertificatePath = table.nonEmptyString("tls_cert")
        settings?.tlsKeyPath = table.nonEmptyString("tls_key")
        switch (table.contains("tls_cert"), table.contains("tls_key")) {
        case (true, false): table.report("tls_key", "required when tls_cert is set (give both or neither)")
        case (false, true): table.report("tls_cert", "required when tls_key is set (give both or neither)")
        default: break
        }
        settings?.clientCAPath = table.nonEmptyString("client_ca")
        if table.contains("client_ca"), !table.contains("tls_cert") {
            table.report("client_ca", "needs tls_cert and tls_key (client certificates come with TLS)")
        }
        settings?.forwardToken = table.bool("forward_token")
        table.finish()
        return settings
    }
}
