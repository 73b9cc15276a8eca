import NIOCore
import Testing
import GatehouseHTTP

/// swift-nio-http2's denial-of-service rules as the nghttp2 connections apply them, frame header by frame header,
/// with time given (the end-to-end attacks in HTTP2AttackTests run them against real floods).
struct HTTP2FloodDefenceTests {
    typealias Frame = NGHTTP2Session.FrameHeader
    static let start = NIODeadline.uptimeNanoseconds(1_000_000_000)
    static let calm = HTTP2ConnectionError(code: HTTP2ConnectionError.enhanceYourCalm, lastStream: 0)

    static func frame(_ type: UInt8, length: Int = 0, flags: UInt8 = 0, stream: Int32 = 1) -> Frame {
        Frame(length: length, stream: stream, type: type, flags: flags)
    }

    @Test func twoHundredResetsInThirtySecondsPassAndTheNextIsAFlood() {
        var defence = HTTP2FloodDefence(headerListCeiling: 65536)
        for index in 0..<HTTP2FloodDefence.maxPerWindow {
            #expect(defence.frameBegins(Self.frame(Frame.rstStream), now: Self.start + .milliseconds(Int64(index))) == nil)
        }
        #expect(defence.frameBegins(Self.frame(Frame.rstStream), now: Self.start + .seconds(1)) == Self.calm)
    }

    @Test func resetsSpreadBeyondTheWindowAreNoFlood() {
        var defence = HTTP2FloodDefence(headerListCeiling: 65536)
        for index in 0..<1000 {
            #expect(defence.frameBegins(Self.frame(Frame.rstStream), now: Self.start + .milliseconds(Int64(index) * 200)) == nil)
        }
    }

    @Test func controlFramesShareOneLimit() {
        var defence = HTTP2FloodDefence(headerListCeiling: 65536)
        let kinds = [Frame.ping, Frame.settings, Frame.priority]
        for index in 0..<HTTP2FloodDefence.maxPerWindow {
            #expect(defence.frameBegins(Self.frame(kinds[index % 3], stream: 0), now: Self.start) == nil)
        }
        #expect(defence.frameBegins(Self.frame(Frame.ping, stream: 0), now: Self.start) == Self.calm)
    }

    @Test func aSecondEmptyDataFrameInARowIsAFloodUnlessTheStreamEndedBetween() {
        var defence = HTTP2FloodDefence(headerListCeiling: 65536)
        #expect(defence.dataFrameEnded(payloadBytes: 0, endStream: false) == nil)
        #expect(defence.dataFrameEnded(payloadBytes: 0, endStream: true) == nil)
        #expect(defence.dataFrameEnded(payloadBytes: 0, endStream: false) == nil)
        #expect(defence.frameBegins(Self.frame(Frame.headers, length: 10, flags: Frame.endHeaders), now: Self.start) == nil)
        #expect(defence.dataFrameEnded(payloadBytes: 0, endStream: false) == nil)
        #expect(defence.dataFrameEnded(payloadBytes: 0, endStream: false) == Self.calm)
    }

    @Test func aSixthContinuationInARowIsAFlood() {
        var defence = HTTP2FloodDefence(headerListCeiling: 65536)
        #expect(defence.frameBegins(Self.frame(Frame.headers, length: 10), now: Self.start) == nil)
        for _ in 0..<HTTP2FloodDefence.maxSequentialContinuations {
            #expect(defence.frameBegins(Self.frame(Frame.continuation), now: Self.start) == nil)
        }
        #expect(defence.frameBegins(Self.frame(Frame.continuation), now: Self.start) == Self.calm)
    }

    @Test func anEncodedBlockPastTheCeilingIsAProtocolErrorBeforeItsPayloadIsRead() {
        var defence = HTTP2FloodDefence(headerListCeiling: 1000)
        #expect(defence.frameBegins(Self.frame(Frame.headers, length: 600), now: Self.start) == nil)
        let refused = defence.frameBegins(Self.frame(Frame.continuation, length: 401), now: Self.start)
        #expect(refused == HTTP2ConnectionError(code: HTTP2ConnectionError.protocolError, lastStream: nil))
    }

    @Test func twoHundredStreamErrorsInAConnectionsLifeAreTheMost() {
        var defence = HTTP2FloodDefence(headerListCeiling: 65536)
        for index in 0..<HTTP2FloodDefence.maxGlitches {
            #expect(defence.streamError(now: Self.start + .seconds(Int64(index))) == nil)
        }
        #expect(defence.streamError(now: Self.start + .seconds(10_000)) == Self.calm)
    }
}
