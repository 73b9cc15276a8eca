import NIOCore

/// A front door driving the request core: what it shares beyond the core itself, the waiting on
/// a pending decision or sign-out (both doors hand the outcome back the same way).
protocol ExchangeDriving: AnyObject {
    var core: ExchangeStateMachine { get set }
    var context: ChannelHandlerContext? { get }
    /// The core still has the door's request: not forwarded, answered or given up since.
    var coreHasRequest: Bool { get }
    func perform(_ action: ExchangeStateMachine.Action, context: ChannelHandlerContext)
}

extension ExchangeDriving {
    /// Reports what the future of an `awaitDecision` or `awaitAnswer` action brings to the core,
    /// on the connection's event loop, unless the request is gone by then.
    func awaitOutcome(of action: ExchangeStateMachine.Action) {
        switch action {
        case .awaitDecision(let future, let generation):
            future.assumeIsolated().whenComplete { result in
                guard self.coreHasRequest, let context = self.context else { return }
                switch result {
                case .success(let decision): self.perform(self.core.decided(decision, generation: generation), context: context)
                case .failure: self.perform(self.core.decisionFailed(generation: generation), context: context)
                }
            }
        case .awaitAnswer(let future, let generation):
            future.assumeIsolated().whenSuccess { response in
                guard self.coreHasRequest, let context = self.context else { return }
                self.perform(self.core.answered(response, generation: generation), context: context)
            }
        case .none, .readBody, .send, .forward:
            break
        }
    }
}
