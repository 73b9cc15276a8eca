import Foundation
package import NIOCore
import NIOHTTP1
import GatehouseTokens
package import GatehouseTelemetry
import GatehouseAuth
import GatehousePolicy
import GatehouseVocabulary
package import GatehouseExchange

/// A door driving the request core: what every driver does alike with the core's actions. It counts and logs what
/// the core recorded, asks the gatekeeper, signs out, and waits on either; the door's own actions (sending,
/// forwarding, reading) are its own.
package protocol ExchangeDriving: AnyObject {
    var core: ExchangeStateMachine { get set }
    /// The core still has the door's request: not forwarded, answered or given up since (nor the client gone).
    var coreHasRequest: Bool { get }
    /// The services of the configuration the driver's one request started with (a reload applies to the next
    /// request, which gets a driver of its own); the core was given their `exchange` settings.
    var services: ProxyServices { get }
    /// The door's event loop: the decisions and sign-outs the driver waits on complete on it.
    var coreEventLoop: any EventLoop { get }
    /// Performs an action of the core (the door's `perform`, which starts with `performRecords`).
    func performCoreAction(_ action: ExchangeStateMachine.Action)
    /// The request's trace (`[tracing]`), if any: what the core recorded and the decision's calls become its spans.
    var trace: RequestTrace? { get }
}

extension ExchangeDriving {
    /// Counts and logs what the core recorded during the event that returned the action being performed: the first
    /// thing a door's `perform` does, so nothing the core saw is lost whichever action follows.
    package func performRecords() {
        guard let records = core.takeRecords() else { return }
        services.record(records, on: coreEventLoop)
        trace?.observe(records, startedAt: core.inHand?.startedAt)
    }

    /// Performs the decision actions every door shares: asking the gatekeeper (most answers come at once) and a
    /// sign-out; what they come to goes back to the core, and its action to the door, on the door's event loop, unless
    /// the request is gone by then.
    package func performDecisionAction(_ action: ExchangeStateMachine.Action) {
        switch action {
        case .decide(let request, let recent, let generation):
            // The services the decision calls hang their spans under this request's (`TraceScope`).
            let now = services.wallClock.now()  // the decision's, and what an assertion in its answer is signed with
            let decision = TraceScope.with(trace) { services.decide(request, recent: recent, now: now, on: coreEventLoop) }
            report(decision, generation: generation, decidedAt: now, cache: request.presentsRecentToken ? "connection" : nil)
        case .signOut(let endpoint, let identity, let request, let body, let generation):
            let answer = TraceScope.with(trace) { services.signOut(endpoint, identity, request, body: body, on: coreEventLoop) }
            answer.assumeIsolated().whenSuccess { response in
                guard self.coreHasRequest else { return }
                self.performCoreAction(self.core.answered(response, generation: generation))
            }
        case .logOut(let provider, let request, let body, let generation):
            let outcome = TraceScope.with(trace) { services.backchannelLogout(provider: provider, request, body: body, on: coreEventLoop) }
            outcome.assumeIsolated().whenSuccess { outcome in
                guard self.coreHasRequest else { return }
                self.performCoreAction(self.core.loggedOut(outcome, generation: generation))
            }
        case .none, .ignored, .readBody, .send, .forward, .retry, .cut:
            break
        }
    }

    /// Hands the gatekeeper's verdict to the core: at once, or once a pending decision is made (`decidedAt` then the
    /// time it was made). `cache`: where the token's identity came from when not from the verifier's cache or a
    /// verification (the connection's last token), for the trace.
    private func report(_ decision: Gatekeeper.Decision, generation: Int, decidedAt: Date?, cache: String?) {
        let verdict: GateVerdict
        switch decision {
        case .now(let made):
            verdict = made
        case .later(let future):
            future.assumeIsolated().whenComplete { result in
                guard self.coreHasRequest else { return }
                switch result {
                case .success(let verdict):
                    // The wait may have been for something else (userinfo, a TokenReview) with the token from a cache.
                    self.report(.now(verdict), generation: generation, decidedAt: nil, cache: nil)
                case .failure: self.performCoreAction(self.core.decisionFailed(generation: generation, now: .now()))
                }
            }
            return
        }
        if let trace, case .admit(.verified(let identity)) = verdict {
            trace.verified(cache: cache ?? (identity.verifiedNow ? "miss" : "hit"), provider: identity.providerName)
        }
        let wallClock = Int64((decidedAt ?? services.wallClock.now()).timeIntervalSince1970)
        performCoreAction(core.decided(verdict, generation: generation, now: .now(), wallClock: wallClock))
    }
}

extension RequestTrace {
    /// What the core recorded, as the request's spans show it: the verification's span (from the request's head to
    /// its decision), a refusal's reason, the route's `auth`.
    func observe(_ records: ExchangeRecords, startedAt: NIODeadline?) {
        if let rejection = records.rejection { refused(rejection.failure) }
        if let (auth, _) = records.outcome { counted(routeAuth: auth) }
        if let nanoseconds = records.authNanoseconds, let startedAt { verification(from: startedAt, took: nanoseconds) }
    }
}
