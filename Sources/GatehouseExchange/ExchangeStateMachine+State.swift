package import NIOCore
package import GatehouseTokens
package import GatehousePolicy

extension ExchangeStateMachine {
    /// Where the request is, each state with the data only it has.
    package enum State {
        case awaitingHead
        /// Waiting on the gatekeeper (a JWKS refetch, userinfo) or on a sign-out's store and provider; the body that
        /// arrives meanwhile is kept for the upstream leg.
        case waiting(HeldBody)
        /// A sign-out reading its small body, which may carry a refresh token for the provider, until `bodyDeadline`.
        case readingSignOut(OwnEndpoint, VerifiedIdentity, HeldBody, bodyDeadline: NIODeadline)
        /// A back-channel logout reading its small form body (the logout token) until `bodyDeadline`.
        case readingLogout(provider: String, HeldBody, bodyDeadline: NIODeadline)
        /// An MCP server's POST reading its JSON-RPC message whole before it is judged (its routes and rules read it);
        /// what the decision takes besides is in `awaitingMessage`, so that each part read moves only the held bytes.
        case readingMessage(HeldBody, bodyDeadline: NIODeadline)
        /// Admitted: handed to the upstream leg once the read that carried the head is over (`forwardsAtReadEnd`).
        case admitted(Admission, HeldBody)
        /// Answered here: sent once the request has ended or the read is over (then with its body unread, so the door
        /// closes the connection or the stream after it).
        case answering(LocalResponse)
        /// The door's upstream leg has the request.
        case forwarding(Forwarding)
        case finished
        /// Only inside a mutating method, while a state's data is changed in place (no copy of its buffers).
        case modifying
    }

    /// Request body that arrived before the upstream leg has the request.
    package struct HeldBody {
        var buffers: [ByteBuffer] = []
        package var bytes = 0

        package mutating func append(_ buffer: ByteBuffer) {
            buffers.append(buffer)
            bytes += buffer.readableBytes
        }

        /// The bytes in one array (a small body read whole: a sign-out's, a logout token).
        package var joined: [UInt8] {
            var joined: [UInt8] = []
            joined.reserveCapacity(bytes)
            for buffer in buffers { joined.append(contentsOf: buffer.readableBytesView) }
            return joined
        }
    }

    /// A request the upstream leg has: what its deadlines are counted from (`watch(now:legTakesMore:)`). Plain values
    /// only: it changes with every read and every response chunk, in place, with no reference to count (who the request
    /// goes as is `ExchangeRequest.admission`).
    package struct Forwarding {
        /// When the upstream's response head must have come (`upstreamLegStarted`); a retry's leg keeps it.
        var responseDeadline: NIODeadline?
        /// The upstream's response head was relayed: from here it runs as long as its bytes move.
        var responseStarted = false
        /// Bytes last moved either way.
        var lastProgress: NIODeadline
        /// The request's bytes last arrived, or the upstream last asked for more of them.
        var lastRequestProgress: NIODeadline
        var hasRetried = false

        init(since: NIODeadline) {
            lastProgress = since
            lastRequestProgress = since
        }
    }
}
