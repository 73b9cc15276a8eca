import NIOCore
import NIOEmbedded
import Testing
import GatehouseVocabulary

/// The decision path's one way to say "later": a value there now is handed on at once, with no future made; one still
/// to come is handed on when it comes, through every step.
struct EventualTests {
    @Test func aValueThereNowIsHandedOnAtOnce() {
        var seen: [Int] = []
        let eventual = Eventual<Int>.now(2).map { $0 * 10 }.flatMap(on: EmbeddedEventLoop()) { .now($0 + 1) }
        guard case .now(21) = eventual else {
            Issue.record("a value there now became \(eventual)")
            return
        }
        eventual.whenReady { seen.append($0) }
        #expect(seen == [21])
    }

    @Test func aValueToComeIsHandedOnWhenItComesThroughEveryStep() throws {
        let loop = EmbeddedEventLoop()
        let promise = loop.makePromise(of: Int.self)
        let next = loop.makePromise(of: Int.self)
        let eventual = Eventual<Int>.later(promise.futureResult)
            .map { $0 * 10 }
            .flatMap(on: loop) { value in .later(next.futureResult.map { value + $0 }) }
        var seen: [Int] = []
        eventual.whenReady { seen.append($0) }
        guard case .later = eventual else {
            Issue.record("a value to come was taken as there: \(eventual)")
            return
        }
        promise.succeed(2)
        #expect(seen.isEmpty, "the second step has not come yet")
        next.succeed(1)
        #expect(seen == [21])
        #expect(try eventual.future(on: loop).wait() == 21)
        #expect(try Eventual<Int>.now(5).future(on: loop).wait() == 5)
    }
}
