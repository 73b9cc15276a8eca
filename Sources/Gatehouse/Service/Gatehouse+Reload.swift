import Foundation
import Logging
import NIOCore
import NIOConcurrencyHelpers
import ServiceLifecycle
import UnixSignals
public import GatehouseConfig
import GatehouseTelemetry
import GatehouseAuth
import GatehouseProxy

/// SIGHUP: the failure log reopened, the configuration re-read and applied to new requests.
extension Gatehouse {
    /// SIGHUP: reopen the failure-log file (logrotate moved it) and re-read the configuration file; under systemd,
    /// `RELOADING=1` before and `READY=1` after (a refused file leaves the running configuration: ready again).
    func reopenFailureLogOnHangup(notifier: SystemdNotifier) async {
        for await _ in await UnixSignalsSequence(trapping: .sighup).cancelOnGracefulShutdown() {
            notifier.send(SystemdNotifier.reloadingMessage())
            let refused = await hangUp()
            notifier.send(refused.isEmpty ? "READY=1\nSTATUS=serving" : "READY=1\nSTATUS=serving; the last reload was refused")
        }
    }

    /// What SIGHUP does: reopen the failure-log file, then re-read the configuration file; a file
    /// that does not validate is refused whole (every error logged) and the running configuration stays.
    /// Returns the errors of a refused file (empty when it was applied).
    @discardableResult
    func hangUp() async -> [ConfigurationIssue] {
        do {
            try failureLog.reopen()
        } catch {
            logger.error("SIGHUP: cannot reopen the failure log", metadata: ["gatehouse.error": "\(error)"])
        }
        guard let configurationPath else { return [] }
        do {
            let needRestart = await reload(try Configuration.load(fromFile: configurationPath))
            metrics.configurationLoaded(at: Date().timeIntervalSince1970)
            logger.notice("SIGHUP: configuration reloaded", metadata: [
                "gatehouse.needs_restart": "\(needRestart.isEmpty ? "nothing" : needRestart.joined(separator: ", "))",
            ])
            return []
        } catch {
            metrics.configurationRefused()
            logger.error("SIGHUP: new configuration refused; the running one stays", metadata: [
                "gatehouse.errors": "\(error.issues.map(\.description).joined(separator: "; "))",
            ])
            return error.issues
        }
    }

    /// Applies a validated configuration to new requests: routes, identity headers, verification
    /// settings, providers and `[jwks]`, upstream timeout and token forwarding. Requests in flight
    /// finish on the old one. Providers whose settings did not change keep their keys, refresh
    /// schedule and cooldowns; new or changed ones get their keys fetched (bounded by `fetch_timeout`)
    /// before the swap, so their first requests do not meet a 503. Returns the sections that changed
    /// but need a restart (listeners, upstream address, logs, revocation store): they keep their running values.
    @discardableResult
    public func reload(_ new: Configuration) async -> [String] {
        let old = configuration
        var needRestart: [String] = []
        if new.listen != old.listen { needRestart.append("[listen]") }
        if new.admin != old.admin { needRestart.append("[admin]") }
        var port = new.extAuthz
        port?.forwardToken = old.extAuthz?.forwardToken  // applied below
        if port != old.extAuthz { needRestart.append("[ext_authz]") }
        if new.upstream.url != old.upstream.url || new.upstream.connectTimeout != old.upstream.connectTimeout
            || new.upstream.protocolVersion != old.upstream.protocolVersion || new.upstream.caFile != old.upstream.caFile
        {
            needRestart.append("[upstream] url/connect_timeout/protocol/ca_file")
        }
        if new.failureLog != old.failureLog { needRestart.append("[failure_log]") }
        if new.log != old.log { needRestart.append("[log]") }
        if new.revocation != old.revocation { needRestart.append("[revocation]") }
        if new.tracing != old.tracing { needRestart.append("[tracing]") }
        if new.dpop.nonceSecret != old.dpop.nonceSecret || new.dpop.replayCacheSize != old.dpop.replayCacheSize {
            needRestart.append("[dpop] nonce_secret/replay_cache_size")
        }
        var applied = new
        applied.listen = old.listen
        applied.admin = old.admin
        applied.extAuthz = old.extAuthz
        if new.extAuthz != nil { applied.extAuthz?.forwardToken = new.extAuthz?.forwardToken }
        applied.upstream.url = old.upstream.url
        applied.upstream.connectTimeout = old.upstream.connectTimeout
        applied.upstream.protocolVersion = old.upstream.protocolVersion
        applied.upstream.caFile = old.upstream.caFile
        applied.failureLog = old.failureLog
        applied.log = old.log
        applied.revocation = old.revocation
        applied.tracing = old.tracing
        applied.dpop.nonceSecret = old.dpop.nonceSecret
        applied.dpop.replayCacheSize = old.dpop.replayCacheSize
        if applied.providers != old.providers || applied.jwks != old.jwks || applied.resources != old.resources {
            await replaceKeyStore(for: applied, replacing: old)
        }
        activeConfiguration.withLockedValue { $0 = applied }
        servicesHandle.withLockedValue { $0 }?.replace(makeServices(applied))
        reloadCertificates(old.listen)
        if !needRestart.isEmpty {
            logger.warning("reload: these changes need a restart", metadata: ["gatehouse.sections": "\(needRestart.joined(separator: ", "))"])
        }
        return needRestart
    }

    /// A new key store for `new`'s providers: unchanged providers (same name, same settings) are
    /// carried over; the others are fetched once before the store goes into service.
    func replaceKeyStore(for new: Configuration, replacing old: Configuration) async {
        let current = keyStore
        var carriedOver: [Int: (store: KeyStore, index: Int)] = [:]
        for (index, provider) in new.providers.enumerated() {
            if let oldIndex = old.providers.firstIndex(of: provider) { carriedOver[index] = (current, oldIndex) }
        }
        let replacement = Self.makeKeyStore(new, client: httpClient, metrics: metrics, logger: logger, carriedOver: carriedOver)
        // Introspection providers have no keys to fetch.
        let fresh = new.providers.indices.filter { carriedOver[$0] == nil && new.providers[$0].type != .introspection }
        await withTaskGroup(of: Void.self) { group in
            for index in fresh {
                group.addTask { await replacement.refresh(provider: index, on: self.group.next()).waitUnlessCancelled() }
            }
        }
        replacement.adopt(carriedOver)  // again: what the old store learnt during the fetches above
        keyStores.withLockedValue { $0 = replacement }
        current.retire()
        newKeyStore.yield(replacement)
        logger.notice("reload: providers updated", metadata: [
            "gatehouse.providers_kept": "\(carriedOver.keys.sorted().map { new.providers[$0].name }.joined(separator: ","))",
            "gatehouse.providers_fetched": "\(fresh.map { new.providers[$0].name }.joined(separator: ","))",
        ])
    }
}
