import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import GatehouseSyntax
import GatehouseTokens
import GatehouseTelemetry
import GatehouseAuth
import GatehouseExchange
import GatehouseVocabulary

/// The answer to `POST /.gatehouse/backchannel-logout/<provider>` (OpenID Connect Back-Channel Logout 1.0 §2.5-2.8,
/// docs/reference.md §7.3), whichever protocol the provider speaks: the form body's `logout_token` judged
/// (`LogoutTokenJudge`), its revocation applied here at once and written to the store (shared by the replicas), its `jti`
/// claimed once. 200 when applied; 400 `invalid_request` / `invalid_token` when refused; 503 while keys or the store
/// cannot be had (the provider retries; a retry revokes nothing new).
struct BackchannelLogoutResponder {
    let services: ProxyServices

    func respond(provider name: String, body: [UInt8], contentType: String?, on eventLoop: any EventLoop) -> EventLoopFuture<LogoutOutcome> {
        let judge = LogoutTokenJudge(verifier: services.gatekeeper.verifier)
        guard let index = judge.provider(named: name) else {  // the configuration opened it: answered all the same
            return eventLoop.makeSucceededFuture(LogoutOutcome(response: LocalResponse.json(.notFound, "{\"error\":\"not_found\"}")))
        }
        guard services.logoutBudget.take(provider: name) else {
            services.metrics.backchannelLogout(provider: name, result: "rate_limited")
            var response = Self.error(.tooManyRequests, "temporarily_unavailable", "too many logout requests; retry later")
            response.headers.add(name: "Retry-After", value: "1")
            return eventLoop.makeSucceededFuture(LogoutOutcome(response: response))
        }
        let token: String
        switch Self.logoutToken(body: body, contentType: contentType) {
        case .failure(let invalid):
            services.metrics.backchannelLogout(provider: name, result: "invalid_request")
            return eventLoop.makeSucceededFuture(LogoutOutcome(response: Self.error(.badRequest, "invalid_request", invalid.detail)))
        case .success(let found):
            token = found
        }
        let now = RevocationService.now()
        let judged: EventLoopFuture<Result<LogoutToken, AuthFailure>> = switch judge.judge(token[...], provider: index, now: now, on: eventLoop) {
        case .now(let result): eventLoop.makeSucceededFuture(result)
        case .later(let future): future
        }
        return judged.flatMap { result in
            switch result {
            case .failure(let failure): eventLoop.makeSucceededFuture(refused(failure, provider: name, token: token))
            case .success(let logout): apply(logout, token: token, on: eventLoop)
            }
        }
    }

    /// The revocation first (applied here at once, then stored), then the `jti`: a replay re-applies the same revocation
    /// (nothing new) and is refused; a 503 leaves the `jti` unclaimed, so the provider's retry is taken.
    private func apply(_ logout: LogoutToken, token: String, on eventLoop: any EventLoop) -> EventLoopFuture<LogoutOutcome> {
        let revocations = services.revocations
        let now = RevocationService.now()
        if revocations.logoutReplays.contains(logout.replayKey, now: now) {
            return eventLoop.makeSucceededFuture(refused(replayed(logout), provider: logout.provider, token: token))
        }
        guard let revocation = logout.revocation(now: now) else {  // the judge requires sid or sub
            return eventLoop.makeSucceededFuture(refused(AuthFailure(.invalidClaims, "neither sid nor sub"), provider: logout.provider, token: token))
        }
        let stored = TraceScope.span("gatehouse.revocation.store", around: revocations.revoke(revocation, on: eventLoop))
        return stored.flatMap {
            revocations.claimLogout(logout, on: eventLoop).map { fresh in
                guard fresh else { return refused(replayed(logout), provider: logout.provider, token: token) }
                services.metrics.backchannelLogout(provider: logout.provider, result: "applied")
                services.logger.notice("back-channel logout applied", metadata: [
                    "gatehouse.provider": "\(logout.provider)", "gatehouse.scope": "\(logout.sid != nil ? "session" : "subject")",
                ])
                var response = LocalResponse.json(.ok, "{\"logged_out\":true}")
                response.headers.add(name: "Cache-Control", value: "no-store")
                return LogoutOutcome(response: response)
            }
        }.flatMapErrorThrowing { error in
            services.metrics.backchannelLogout(provider: logout.provider, result: "store_unavailable")
            services.logger.error("back-channel logout applied on this replica only: the revocation store is unavailable", metadata: [
                "gatehouse.provider": "\(logout.provider)", "gatehouse.error": "\(error)",
            ])
            var response = Self.error(.serviceUnavailable, "temporarily_unavailable", "applied on this server only: the revocation store is unavailable")
            response.headers.add(name: "Retry-After", value: String(ExchangeSettings.retryAfterSeconds))
            response.headers.add(name: "Cache-Control", value: "no-store")
            return LogoutOutcome(response: response)
        }
    }

    private func replayed(_ logout: LogoutToken) -> AuthFailure {
        var failure = AuthFailure(.replayed, "jti was seen before: the logout token was already taken")
        failure.provider = logout.provider
        failure.subject = logout.subject
        return failure
    }

    /// 400 `invalid_token` (§2.8), or 503 while the provider's keys cannot be had; one failure-log line either way.
    private func refused(_ failure: AuthFailure, provider: String, token: String) -> LogoutOutcome {
        services.metrics.backchannelLogout(provider: provider, result: failure.reason.rawValue)
        var failure = failure
        var response: LocalResponse
        if failure.reason == .keysUnavailable {
            failure.answeredStatus = 503
            response = Self.error(.serviceUnavailable, "temporarily_unavailable", "the provider's keys cannot be had now")
            response.headers.add(name: "Retry-After", value: String(failure.retryAfterSeconds ?? ExchangeSettings.retryAfterSeconds))
        } else {
            failure.answeredStatus = 400
            response = Self.error(.badRequest, "invalid_token", "the logout token was refused: \(failure.reason.rawValue)")
        }
        response.headers.add(name: "Cache-Control", value: "no-store")
        return LogoutOutcome(response: response, refusal: failure, token: token[...])
    }

    struct InvalidRequest: Error {
        var detail: String
    }

    /// §2.5: `application/x-www-form-urlencoded` with one `logout_token`.
    static func logoutToken(body: [UInt8], contentType: String?) -> Result<String, InvalidRequest> {
        guard let contentType, MediaType.hasEssence(contentType, "application/x-www-form-urlencoded") else {
            return .failure(InvalidRequest(detail: "send application/x-www-form-urlencoded with logout_token"))
        }
        guard body.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return .failure(InvalidRequest(detail: "form body is not URL-encoded ASCII")) }
        let token: String?
        do {
            token = try FormEncoding.value(named: "logout_token", in: body)
        } catch {
            return .failure(InvalidRequest(detail: "logout_token is not valid percent-encoded UTF-8"))
        }
        guard let token, !token.isEmpty else { return .failure(InvalidRequest(detail: "logout_token missing")) }
        return .success(token)
    }

    private static func error(_ status: HTTPResponseStatus, _ code: String, _ description: String) -> LocalResponse {
        LocalResponse.json(status, "{\"error\":\(code.jsonQuoted),\"error_description\":\(description.jsonQuoted)}")
    }
}

/// Back-channel logouts taken per provider per second (`rate` each, up to a second's worth at once): a flood of forged
/// tokens costs a signature check each, and is answered 429 beyond it.
final class LogoutBudget: Sendable {
    static let rate = 200
    private let budgets = NIOLockedValueBox<[String: CallBudget]>([:])

    init() {}

    func take(provider: String, now: NIODeadline = .now()) -> Bool {
        budgets.withLockedValue { budgets in
            var budget = budgets[provider] ?? CallBudget(rate: Self.rate, now: now)
            defer { budgets[provider] = budget }
            return budget.take(perSecond: Self.rate, now: now)
        }
    }
}
