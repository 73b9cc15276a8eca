import Foundation
package import Logging
package import GatehouseConfig

extension RevocationSettings {
    /// The store `store = …` names, with its password resolved (`password`, `password_file`, `env:NAME`).
    package func makeStore(logger: Logger) throws -> any RevocationStore {
        if store == "memory" { return MemoryRevocationStore() }
        if store.hasPrefix("sqlite:") { return SQLiteRevocationStore(path: String(store.dropFirst("sqlite:".count)), logger: logger) }
        guard let url = URL(string: store) else { throw RevocationStoreError(description: "[revocation] store is not a URL") }
        do {
            return try PostgresRevocationStore(url: url, password: try password?.resolve(), logger: logger)
        } catch let error as SecretSetting.ResolveError {
            throw RevocationStoreError(description: "[revocation] password: \(error)")
        }
    }
}
