import GatehouseVocabulary
// `algorithms` of a provider: a subset of the asymmetric JWS algorithms, never none or HMAC.
extension ConfigurationDecoder {
    static func algorithms(_ table: TOMLReader) -> [String]? {
        guard let names = table.strings("algorithms") else { return nil }
        guard !names.isEmpty else {
            table.report("algorithms", "must list at least one algorithm (omit the key to allow every asymmetric algorithm)")
            return nil
        }
        var algorithms: [String] = []
        for name in names {
            if let problem = algorithmProblem(name) {
                table.report("algorithms", problem)
            } else if !algorithms.contains(name) {
                algorithms.append(name)
            }
        }
        return algorithms
    }

    private static func algorithmProblem(_ name: String) -> String? {
        if JWSAlgorithm(rawValue: name) != nil { return nil }
        let quoted = ConfigKeyPath.quoted(name)
        if name.lowercased() == "none" {
            return "\(quoted) is never accepted: an unsigned token proves nothing"
        }
        if name.uppercased().hasPrefix("HS") {
            return "\(quoted) is never accepted: HMAC needs a shared secret, and anything a sidecar could verify it with "
                + "is something an attacker may also know; use an asymmetric algorithm"
        }
        if let match = JWSAlgorithm.allCases.first(where: { $0.rawValue.lowercased() == name.lowercased() }) {
            return "unknown algorithm \(quoted): algorithm names are case-sensitive, did you mean \"\(match.rawValue)\"?"
        }
        return "unknown algorithm \(quoted), expected one of \(JWSAlgorithm.allCases.map(\.rawValue).joined(separator: ", "))"
    }
}
