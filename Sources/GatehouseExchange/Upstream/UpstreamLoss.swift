/// How an upstream leg was lost before a byte of answer: what decides whether its request may be sent
/// again (`ExchangeStateMachine.upstreamLost`).
package enum UpstreamLoss: Equatable {
    /// The upstream says it did not process the request: a REFUSED_STREAM, a stream above a GOAWAY's last id.
    case refused
    /// A pooled keep-alive connection the upstream closed as it was reused, before a byte of answer or
    /// of body: probably not processed, but it may have been.
    case closedOnReuse
    /// Anything else: the upstream may have acted on it.
    case failed
}
