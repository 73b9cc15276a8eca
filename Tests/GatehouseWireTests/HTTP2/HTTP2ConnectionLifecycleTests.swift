import NIOCore
import Testing
import GatehouseHTTP

/// When an HTTP/2 connection is wound down (idle, or a graceful stop), with time given.
struct HTTP2ConnectionLifecycleTests {
    static let start = NIODeadline.uptimeNanoseconds(1_000_000_000)

    static func lifecycle() -> HTTP2ConnectionLifecycle {
        HTTP2ConnectionLifecycle(idleTimeout: .seconds(10), drainTimeout: .seconds(3), now: start)
    }

    @Test func anIdleConnectionIsToldThenClosedOnceThePingComesBack() {
        var lifecycle = Self.lifecycle()
        #expect(lifecycle.nextDeadline == Self.start + .seconds(10))
        #expect(lifecycle.timePassed(now: Self.start + .seconds(9)) == nil)
        #expect(lifecycle.timePassed(now: Self.start + .seconds(10)) == .announceGoingAway)
        #expect(lifecycle.nextDeadline == Self.start + .seconds(13))
        #expect(lifecycle.pingAcknowledged() == .goAway)
        #expect(lifecycle.pingAcknowledged() == nil)
        #expect(lifecycle.timePassed(now: Self.start + .seconds(13)) == .close)
    }

    @Test func aPeerThatNeverAnswersThePingIsClosedAfterTheDrainTimeout() {
        var lifecycle = Self.lifecycle()
        #expect(lifecycle.timePassed(now: Self.start + .seconds(10)) == .announceGoingAway)
        #expect(lifecycle.timePassed(now: Self.start + .seconds(12)) == nil)
        #expect(lifecycle.timePassed(now: Self.start + .seconds(13)) == .close)
    }

    @Test func openStreamsKeepTheConnectionAndTheIdleClockStartsWhenTheLastEnds() {
        var lifecycle = Self.lifecycle()
        lifecycle.streamsChanged(open: 1, now: Self.start + .seconds(1))
        #expect(lifecycle.nextDeadline == nil)
        #expect(lifecycle.timePassed(now: Self.start + .seconds(60)) == nil)
        lifecycle.streamsChanged(open: 0, now: Self.start + .seconds(60))
        #expect(lifecycle.nextDeadline == Self.start + .seconds(70))
        lifecycle.streamsChanged(open: 0, now: Self.start + .seconds(65))  // still idle since 60
        #expect(lifecycle.nextDeadline == Self.start + .seconds(70))
    }

    @Test func aGracefulStopIsAnnouncedOnceEvenWithStreamsOpen() {
        var lifecycle = Self.lifecycle()
        lifecycle.streamsChanged(open: 3, now: Self.start)
        #expect(lifecycle.stop(now: Self.start + .seconds(1)) == .announceGoingAway)
        #expect(lifecycle.stop(now: Self.start + .seconds(2)) == nil)
        #expect(lifecycle.timePassed(now: Self.start + .seconds(4)) == .close)
    }
}
