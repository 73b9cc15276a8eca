package import NIOCore
import NIOHTTP1
package import GatehouseTokens
package import GatehousePolicy

extension ExchangeStateMachine {
    /// What the driver is to do after an event.
    package enum Action {
        /// Nothing to do: the event was expected and changes nothing the driver does.
        case none
        /// An event the state does not take, said as such: nothing to do either, but not expected (`Ignored`).
        case ignored(Ignored)
        /// Ask the gatekeeper about the request (`ProxyServices.decide`), `recent` being the connection's last verified
        /// token's identity when the request presents it; report its verdict, at once or once made, through
        /// `decided(_:generation:now:wallClock:)` (a decision that could not be made: `decisionFailed(generation:now:)`).
        case decide(ExchangeRequest, recent: VerifiedIdentity?, generation: Int)
        /// Apply a sign-out (`ProxyServices.signOut`) with the body read; report its answer through `answered(_:generation:)`.
        case signOut(OwnEndpoint, VerifiedIdentity, ExchangeRequest, body: [UInt8], generation: Int)
        /// Judge and apply a back-channel logout (`ProxyServices.backchannelLogout`) with the body read; report what it came
        /// to through `loggedOut(_:generation:)`.
        case logOut(provider: String, ExchangeRequest, body: [UInt8], generation: Int)
        /// Go on reading the request body (a sign-out's), and look again at `until` (`watch(now:legTakesMore:)`): it
        /// must arrive within `idle_timeout`.
        case readBody(until: NIODeadline)
        /// Write this answer (already in gRPC form for a gRPC call). If the request has not ended,
        /// its body is left unread: close the connection or reset the stream after it.
        case send(LocalResponse)
        /// Open the upstream leg and send it the request, with the body read so far.
        case forward(Admission, bufferedBody: [ByteBuffer])
        /// Send the request again, as the same admission, on a new upstream leg (`upstreamLost`).
        case retry(Admission)
        /// The upstream's response has begun and cannot become an answer any more: end the stream or the connection
        /// incomplete, so the client never takes part of a response for the whole; `why` for the trace.
        case cut(why: String)
    }

    /// Why an event was not taken.
    package enum Ignored: Equatable {
        /// The event concerns a request, and none is in hand (before a head, or after a reset).
        case noRequest
        /// A head while a request is in hand, or body before any head.
        case outOfOrder
        /// A decision or sign-out answer for a request no longer waiting for it: an earlier request's, or one already
        /// answered (the caller's deadline, the client gone).
        case lateReport
        /// The request was already answered or handed to the upstream leg: its bytes are left unread there, or go to
        /// the leg (the driver writes them), and a deadline no longer concerns it.
        case alreadyDecided
    }
}

extension ExchangeStateMachine.Action {
    package var isRetry: Bool {
        if case .retry = self { return true }
        return false
    }
}
