import Foundation
import NIOConcurrencyHelpers
import Testing
import GatehouseTelemetry
import GatehouseVocabulary
import GatehouseSyntax

struct FailureLogTests {
    private func makeLog(maxLinesPerSecond: Int = 1000, key: [UInt8]? = nil) throws -> (FailureLog, NIOLockedValueBox<[String]>) {
        let lines = NIOLockedValueBox<[String]>([])
        let log = try FailureLog(
            destination: .custom { line in lines.withLockedValue { $0.append(line) } }, maxLinesPerSecond: maxLinesPerSecond,
            pseudonymKey: key)
        return (log, lines)
    }

    private func event(at date: Date, failure: AuthFailure = AuthFailure(.expired, "exp is past")) -> FailureEvent {
        FailureEvent(
            timestamp: date, status: 401, failure: failure, requestID: "r1", clientIP: "203.0.113.7", method: "GET", path: "/v1/x",
            userAgent: "agent", token: "abc")
    }

    /// The log's own timestamp writer gives exactly what Foundation's ISO 8601 style (with
    /// fractional seconds, UTC) gives, milliseconds truncated the same way.
    @Test func timestampsAreWrittenLikeFoundation() {
        let style = Date.ISO8601FormatStyle.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted)
        var generator = SystemRandomNumberGenerator()
        var dates = [0, 1.9995, 1.0004, 1_700_000_000.123, 1_700_000_000.9999, 86_399.5, 951_782_400.001].map { Date(timeIntervalSince1970: $0) }
        for _ in 0..<2_000 {
            dates.append(Date(timeIntervalSince1970: Double.random(in: 0...4_102_444_800, using: &generator)))
        }
        for date in dates {
            #expect(FailureEvent.timestamp(date) == date.formatted(style), "\(date.timeIntervalSince1970)")
        }
    }

    @Test func linesBeyondTheRateAreSummarizedOncePerSecond() throws {
        let (log, lines) = try makeLog(maxLinesPerSecond: 3)
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        for _ in 0..<10 { log.record(event(at: start)) }
        #expect(lines.withLockedValue { $0.count } == 3)
        log.flushSuppressed(now: start.addingTimeInterval(1))
        let all = lines.withLockedValue { $0 }
        #expect(all.count == 4)
        let summary = try #require(try StrictJSON.parse(Array(all[3].utf8)).objectValue)
        #expect(summary["event"] == .string("auth_failure_suppressed"))
        #expect(summary["count"] == .number("7"))
        log.flushSuppressed(now: start.addingTimeInterval(2))
        #expect(lines.withLockedValue { $0.count } == 4)
    }

    @Test func lineHasDocumentedFieldsInOrderAndEscapesControlCharacters() throws {
        let (log, lines) = try makeLog()
        var failure = AuthFailure(.badSignature, "signature does not verify")
        failure.keyID = "evil\r\n{\"injected\":true}\u{1b}[31m"
        failure.issuer = "https://issuer.test"
        failure.algorithm = "RS256"
        log.record(event(at: Date(timeIntervalSince1970: 1_800_000_000.5), failure: failure))
        let line = try #require(lines.withLockedValue { $0.first })
        #expect(!line.contains("\n") && !line.contains("\r") && !line.contains("\u{1b}"))
        #expect(line.hasPrefix("{\"ts\":\"2027-01-15T08:00:00.500Z\",\"event\":\"auth_failure\",\"status\":401,\"reason\":\"bad_signature\""))
        let object = try #require(try StrictJSON.parse(Array(line.utf8)).objectValue)
        #expect(object["kid"] == .string("evil\r\n{\"injected\":true}\u{1b}[31m"))
        #expect(object["sub"] == nil)
        // SHA-256("abc") = ba7816bf8f01cfea…: the first 6 bytes, in hex.
        #expect(object["token_fingerprint"] == .string("sha256:ba7816bf8f01"))
    }

    @Test func c1ControlsAndLineSeparatorsAreEscaped() {
        let quoted = "a\u{85}b\u{9B}c\u{2028}d\u{7F}".jsonQuoted
        #expect(quoted == "\"a\\u0085b\\u009bc\\u2028d\\u007f\"")
    }

    @Test func diagnosticFieldsAreCutTo256Bytes() throws {
        let (log, lines) = try makeLog()
        var failure = AuthFailure(.unknownKey, "no key")
        failure.keyID = String(repeating: "é", count: 300)
        log.record(event(at: Date(), failure: failure))
        let object = try #require(try StrictJSON.parse(Array(lines.withLockedValue { $0[0] }.utf8)).objectValue)
        let kid = try #require(object["kid"]?.stringValue)
        #expect(kid.utf8.count <= 256)
        #expect(kid.utf8.count >= 254)
    }

    @Test func pseudonymizedSubjectIsAKeyedHash() throws {
        let (log, lines) = try makeLog(key: Array("secret-key".utf8))
        var failure = AuthFailure(.expired, "past")
        failure.subject = "user-1"
        log.record(event(at: Date(), failure: failure))
        let object = try #require(try StrictJSON.parse(Array(lines.withLockedValue { $0[0] }.utf8)).objectValue)
        let subject = try #require(object["sub"]?.stringValue)
        #expect(subject != "user-1")
        #expect(subject.hasPrefix("hmac:") && subject.count == 5 + 64)
    }

    @Test func fileDestinationAppendsAndReopens() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-\(UUID()).log").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let log = try FailureLog(destination: .file(path), maxLinesPerSecond: 100)
        log.record(event(at: Date()))
        let rotated = path + ".1"
        try FileManager.default.moveItem(atPath: path, toPath: rotated)
        defer { try? FileManager.default.removeItem(atPath: rotated) }
        try log.reopen()
        log.record(event(at: Date()))
        #expect(try String(contentsOfFile: rotated, encoding: .utf8).split(separator: "\n").count == 1)
        #expect(try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").count == 1)
    }
}
