#if canImport(Glibc)
import Glibc
#endif
import Foundation
public import GatehouseConfig

/// What `serve` would fail on at start that the file alone does not say, checked by `check-config` without side
/// effects (no listener bound, no file created, no network): secrets (`env:NAME`, `*_file`) resolvable, TLS
/// certificates and keys readable and belonging together, CA bundles parseable, the files and directories
/// Gatehouse writes writable. So `ExecStartPre=gatehouse check-config` refuses what `serve` would (docs/reference.md §2).
public enum StartupPreflight {
    /// One problem, with the key path it comes from.
    public struct Problem: Sendable, CustomStringConvertible {
        public var keyPath: String
        public var message: String
        public var description: String { "\(keyPath): \(message)" }
    }

    public static func problems(_ configuration: Configuration) -> [Problem] {
        var found: [Problem] = []
        func attempt(_ keyPath: String, _ check: () throws -> Void) {
            do { try check() } catch { found.append(Problem(keyPath: keyPath, message: "\(error)")) }
        }
        let listen = configuration.listen
        if configuration.servesClientPort, listen.tlsCertificatePath != nil || listen.tlsKeyPath != nil {
            attempt("listen.tls_cert") { _ = try Gatehouse.serverTLS(listen) }
        }
        if let settings = configuration.extAuthz {
            attempt("ext_authz.tls_cert") { _ = try Gatehouse.extAuthzTLS(settings) }
        }
        if configuration.servesClientPort, configuration.upstream.url.scheme == "https" {
            attempt("upstream.ca_file") { _ = try Gatehouse.upstreamTLS(configuration.upstream) }
        }
        attempt("dpop.nonce_secret") { _ = try Gatehouse.dpopNonceSecret(configuration.dpop) }
        if let revocation = configuration.revocation {
            if revocation.store.hasPrefix("sqlite:") {
                writable(String(revocation.store.dropFirst("sqlite:".count)), "revocation.store", into: &found)
            } else {
                attempt("revocation.password") { _ = try revocation.password?.resolve() }
            }
        }
        for (index, provider) in configuration.providers.enumerated() {
            if let secret = provider.introspection.clientSecret {
                attempt("provider[\(index)].client_secret") { _ = try secret.resolve() }
            }
            for (key, path) in [("ca_file", provider.caFile), ("token_file", provider.tokenFile)] {
                if let path, !FileManager.default.isReadableFile(atPath: path) {
                    found.append(Problem(keyPath: "provider[\(index)].\(key)", message: "cannot read \(path)"))
                }
            }
        }
        let failureLog = configuration.failureLog
        if failureLog.pseudonymize, let path = failureLog.pseudonymizeKeyFile,
           (FileManager.default.contents(atPath: path)?.isEmpty ?? true) {
            found.append(Problem(keyPath: "failure_log.pseudonymize_key_file", message: "cannot read \(path) (or it is empty)"))
        }
        if failureLog.path != "-" { writable(failureLog.path, "failure_log.path", into: &found) }
        if let directory = configuration.jwks.cacheDirectory { writableDirectory(directory, "jwks.cache_dir", into: &found) }
        return found
    }

    /// A file Gatehouse appends to or creates: the file writable, or (absent) its directory.
    private static func writable(_ path: String, _ keyPath: String, into found: inout [Problem]) {
        if FileManager.default.fileExists(atPath: path) {
            if access(path, W_OK) != 0 { found.append(Problem(keyPath: keyPath, message: "\(path) is not writable by this user")) }
            return
        }
        let directory = (path as NSString).deletingLastPathComponent
        writableDirectory(directory.isEmpty ? "." : directory, keyPath, into: &found)
    }

    /// A directory Gatehouse writes in (or creates, as `cache_dir`: then its nearest existing parent must be writable).
    private static func writableDirectory(_ path: String, _ keyPath: String, into found: inout [Problem]) {
        var candidate = path
        var isDirectory: ObjCBool = false
        while !FileManager.default.fileExists(atPath: candidate, isDirectory: &isDirectory), candidate != "/", !candidate.isEmpty {
            candidate = (candidate as NSString).deletingLastPathComponent
        }
        if candidate.isEmpty { candidate = "." }
        guard FileManager.default.fileExists(atPath: candidate, isDirectory: &isDirectory), isDirectory.boolValue else {
            found.append(Problem(keyPath: keyPath, message: "\(candidate) is not a directory"))
            return
        }
        if access(candidate, W_OK | X_OK) != 0 {
            found.append(Problem(keyPath: keyPath, message: "cannot write in \(candidate) as this user"))
        }
    }
}
