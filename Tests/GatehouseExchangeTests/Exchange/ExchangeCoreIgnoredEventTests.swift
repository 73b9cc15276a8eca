import NIOCore
import NIOHTTP1
import Testing
import GatehouseExchange
import GatehouseVocabulary
import GatehousePolicy

/// Every event a state of the core does not take is answered as such (`Action.ignored`), with why, where an expected
/// event with nothing to do is `.none`: a driver does nothing for either, a reader of the core sees which is which.
@Suite
struct ExchangeCoreIgnoredEventTests {
    static let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/v1/orders", headers: ["host": "api.test", "authorization": "Bearer t"])

    @Test func eventsAboutARequestWithNoneInHandAreIgnoredAsNoRequest() {
        var core = ExchangeCoreTests.core()
        #expect(core.receivedBody(ByteBuffer(string: "x")).ignored == .outOfOrder, "body before any head")
        #expect(core.upstreamFailed(.badGateway).ignored == .noRequest)
        #expect(core.upstreamLost(.failed, replayable: true).ignored == .noRequest)
        #expect(core.upstreamCompleted(now: .uptimeNanoseconds(1)).ignored == .noRequest)
        #expect(core.callerDeadlinePassed().ignored == .noRequest)
        #expect(core.decided(.admit(.anonymous), generation: 0, now: .uptimeNanoseconds(1), wallClock: 0).ignored == .lateReport)
        #expect(core.answered(LocalResponse.json(.ok, "{}"), generation: 0).ignored == .lateReport)
        #expect(core.takeRecords() == nil, "nothing counted for any of them")
    }

    @Test func aHeadWhileARequestIsInHandIsOutOfOrder() {
        let testbed = CoreTestbed()
        var core = ExchangeCoreTests.core()
        core.readBegan(now: testbed.now)
        let decide = core.receivedHead(Self.head, clientIP: "203.0.113.9", settings: testbed.settings, recent: nil, now: testbed.now)
        #expect(decide.decisionGeneration == 1, "\(decide)")
        #expect(core.receivedHead(Self.head, clientIP: "203.0.113.9", settings: testbed.settings, recent: nil, now: testbed.now).ignored == .outOfOrder)
        #expect(core.receivedMalformedHead("no :path").ignored == .outOfOrder)
        #expect(core.receivedBody(ByteBuffer(string: "kept")).isNone, "body while the decision is made is kept: expected")
        #expect(core.receivedEnd().isNone && core.readEnded().isNone, "expected, nothing to do yet")
        #expect(core.takeRecords() == nil)
    }

    @Test func eventsAfterTheAnswerOrTheForwardAreAlreadyDecided() {
        var testbed = CoreTestbed()
        var refused = ExchangeCoreTests.core()
        let refusal = testbed.run(&refused, path: "/v1/orders") { _ in .reject(AuthFailure(.expired, "expired")) }
        #expect(refusal.status == 401, "\(refusal.action)")
        #expect(refused.receivedBody(ByteBuffer(string: "late")).ignored == .alreadyDecided, "left unread")
        #expect(refused.callerDeadlinePassed().ignored == .alreadyDecided)
        #expect(refused.decided(.admit(.anonymous), generation: refused.generation, now: testbed.now, wallClock: 0).ignored == .lateReport)

        var forwarded = ExchangeCoreTests.core()
        let forward = testbed.run(&forwarded, path: "/v1/orders", token: "t", ended: false)
        #expect(forward.isForwarded, "\(forward.action)")
        #expect(forwarded.receivedBody(ByteBuffer(string: "to the leg")).ignored == .alreadyDecided, "the driver writes it to the leg")
        #expect(forwarded.takeRecords() == nil)
    }
}
