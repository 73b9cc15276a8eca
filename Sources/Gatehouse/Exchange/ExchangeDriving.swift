import NIOCore

/// A front door driving the request core: what it shares beyond the core itself, the waiting on
/// a pending decision or sign-out (both doors hand the outcome back the same way).
protocol ExchangeDriving: AnyObject {
    var core: ExchangeStateMachine { get set }
    /// The core still has the door's request: not forwarded, answered or given up since (nor the client gone).
    var coreHasRequest: Bool { get }
    /// Performs what the core answered to a pending future's outcome.
    func performCoreAction(_ action: ExchangeStateMachine.Action)
}

extension ExchangeDriving {
    /// Reports what the future of an `awaitDecision` or `awaitAnswer` action brings to the core,
    /// on the connection's event loop, unless the request is gone by then.
    func awaitOutcome(of action: ExchangeStateMachine.Action) {
        switch action {
        case .awaitDecision(let future, let generation):
            future.assumeIsolated().whenComplete { result in
                guard self.coreHasRequest else { return }
                switch result {
                case .success(let decision): self.performCoreAction(self.core.decided(decision, generation: generation))
                case .failure: self.performCoreAction(self.core.decisionFailed(generation: generation))
                }
            }
        case .awaitAnswer(let future, let generation):
            future.assumeIsolated().whenSuccess { response in
                guard self.coreHasRequest else { return }
                self.performCoreAction(self.core.answered(response, generation: generation))
            }
        case .none, .readBody, .send, .forward, .retry:
            break
        }
    }
}
